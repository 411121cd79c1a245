// Helpers of the aclnn API suite: guarded tensors over host storage, a
// generic two-phase call per op, and the comparison against the double
// reference under the spec's accuracy rule (kernels/reference/accuracy_rule.h).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_hardswish_backward.h"
#include "aclnnop/aclnn_logit_grad.h"
#include "aclnnop/aclnn_selu_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "actgrad/half.h"
#include "actgrad/types.h"
#include "reference/accuracy_rule.h"
#include "reference/reference.h"

namespace apitest {

using actgrad::DType;
using actgrad::GeluApprox;
using actgrad::Op;
using actgrad::OpParams;
using Dims = std::vector<int64_t>;

// ---------------------------------------------------------------- dtypes

inline aclDataType AclType(DType t) {
  switch (t) {
    case DType::kF32: return ACL_FLOAT;
    case DType::kF16: return ACL_FLOAT16;
    case DType::kBF16: return ACL_BF16;
    case DType::kI32: return ACL_INT32;
    case DType::kI8: return ACL_INT8;
  }
  return ACL_DT_UNDEFINED;
}

// Element size of any aclDataType the tests create (independent of the library).
inline size_t ElemSize(aclDataType t) {
  switch (t) {
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 4;
  }
}

inline double Decode(DType t, const uint8_t* p) {
  switch (t) {
    case DType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return actgrad::HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); return actgrad::BF16ToFloat(h); }
    case DType::kI32: { int32_t i; std::memcpy(&i, p, 4); return i; }
    case DType::kI8: { int8_t i; std::memcpy(&i, p, 1); return i; }
  }
  return 0;
}

template <typename I>
I SaturateInt(double v) {
  if (std::isnan(v)) return 0;
  if (v <= double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return I(std::trunc(v));
}

inline void Encode(DType t, uint8_t* p, double v) {
  switch (t) {
    case DType::kF32: { float f = float(v); std::memcpy(p, &f, 4); return; }
    case DType::kF16: { uint16_t h = actgrad::FloatToHalf(float(v)); std::memcpy(p, &h, 2); return; }
    case DType::kBF16: { uint16_t h = actgrad::FloatToBF16(float(v)); std::memcpy(p, &h, 2); return; }
    case DType::kI32: { int32_t i = SaturateInt<int32_t>(v); std::memcpy(p, &i, 4); return; }
    case DType::kI8: { int8_t i = SaturateInt<int8_t>(v); std::memcpy(p, &i, 1); return; }
  }
}

inline double RoundVal(DType t, double v) {
  uint8_t b[8];
  Encode(t, b, v);
  return Decode(t, b);
}

// Value of a 16-bit pattern in t (fp16 or bf16).
inline double FromBits16(DType t, uint16_t bits) {
  return t == DType::kF16 ? actgrad::HalfToFloat(bits) : actgrad::BF16ToFloat(bits);
}

inline std::string Name(DType t) { return std::string(actgrad::DTypeName(t)); }
inline std::string Name(Op op) { return std::string(actgrad::OpName(op)); }

// Largest finite, smallest normal, smallest denormal of a float dtype.
inline double MaxFinite(DType t) {
  switch (t) {
    case DType::kF16: return 65504.0;
    case DType::kBF16: return actgrad::BF16ToFloat(0x7F7F);
    default: return std::numeric_limits<float>::max();
  }
}
inline double MinNormal(DType t) {
  return t == DType::kF16 ? 6.103515625e-05 : double(std::numeric_limits<float>::min());
}
inline double MinDenorm(DType t) {
  switch (t) {
    case DType::kF16: return 5.9604644775390625e-08;
    case DType::kBF16: return actgrad::BF16ToFloat(0x0001);
    default: return double(std::numeric_limits<float>::denorm_min());
  }
}

inline Dims ContiguousStrides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (int64_t i = int64_t(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

inline int64_t Numel(const Dims& dims) {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

// Calls fn(idx) for every multi-index of dims in row-major order.
template <typename Fn>
void ForEachIndex(const Dims& dims, Fn&& fn) {
  const int64_t n = Numel(dims);
  if (n <= 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    fn(idx.data(), lin);
    for (int64_t d = int64_t(dims.size()) - 1; d >= 0; --d) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
}

// ------------------------------------------------------- runtime fixture

// One aclInit / device / stream for the whole process.
class AclEnv : public ::testing::Environment {
 public:
  void SetUp() override;
  void TearDown() override;
  static aclrtStream stream();
};

// ---------------------------------------------------------------- tensor

inline constexpr size_t kGuardBytes = 256;

// A tensor over host storage with guard bytes on both sides. Storage and
// guards start as a pseudo-random byte pattern; Snapshot()/OnlyViewChanged()
// tell whether anything outside the view was written.
class Tensor {
 public:
  // Contiguous tensor of dims.
  Tensor(aclDataType type, Dims dims) : Tensor(type, dims, ContiguousStrides(dims), 0, dims) {}
  Tensor(DType t, Dims dims) : Tensor(AclType(t), std::move(dims)) {}
  // Arbitrary view: strides and offset in elements over a storage of storageDims.
  Tensor(aclDataType type, Dims dims, Dims strides, int64_t offset, Dims storage, bool create = true)
      : type_(type), dims_(std::move(dims)), strides_(std::move(strides)), offset_(offset),
        storage_(std::move(storage)) {
    esize_ = ElemSize(type_);
    int64_t n = 1;
    for (auto d : storage_) n *= (d > 0 ? d : 0);
    storage_bytes_ = size_t(n) * esize_;
    buf_ = std::make_shared<std::vector<uint8_t>>(storage_bytes_ + 2 * kGuardBytes + 64);
    const uintptr_t raw = reinterpret_cast<uintptr_t>(buf_->data());
    base_ = reinterpret_cast<uint8_t*>(((raw + 63) & ~uintptr_t(63)) + kGuardBytes);
    for (size_t i = 0; i < buf_->size(); ++i) (*buf_)[i] = uint8_t(0xA5 ^ (i * 131u) ^ (i >> 8));
    if (create) Create();
  }
  Tensor(DType t, Dims dims, Dims strides, int64_t offset, Dims storage)
      : Tensor(AclType(t), std::move(dims), std::move(strides), offset, std::move(storage)) {}

  // Another aclTensor over the same storage (same or different view).
  Tensor Alias() const { return Alias(dims_, strides_, offset_); }
  Tensor Alias(Dims dims, Dims strides, int64_t offset) const {
    Tensor t(*this, 0);
    t.dims_ = std::move(dims);
    t.strides_ = std::move(strides);
    t.offset_ = offset;
    t.Create();
    return t;
  }
  // A deep copy: new storage with the same bytes, same view.
  Tensor Clone() const {
    Tensor t(type_, dims_, strides_, offset_, storage_, false);
    std::memcpy(t.base_ - kGuardBytes, base_ - kGuardBytes, storage_bytes_ + 2 * kGuardBytes);
    t.Create();
    return t;
  }

  Tensor(Tensor&& o) noexcept { *this = std::move(o); }
  Tensor& operator=(Tensor&& o) noexcept {
    if (this != &o) {
      Destroy();
      type_ = o.type_; dims_ = std::move(o.dims_); strides_ = std::move(o.strides_); offset_ = o.offset_;
      storage_ = std::move(o.storage_); esize_ = o.esize_; storage_bytes_ = o.storage_bytes_;
      buf_ = std::move(o.buf_); base_ = o.base_; handle_ = o.handle_; o.handle_ = nullptr;
      null_data_ = o.null_data_;
    }
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() { Destroy(); }

  // Recreate the aclTensor with a null data pointer (for empty tensors).
  void RecreateWithNullData() { Destroy(); null_data_ = true; Create(); }

  aclTensor* get() const { return handle_; }
  operator aclTensor*() const { return handle_; }
  aclDataType type() const { return type_; }
  DType dtype() const {
    switch (type_) {
      case ACL_FLOAT16: return DType::kF16;
      case ACL_BF16: return DType::kBF16;
      case ACL_INT32: return DType::kI32;
      case ACL_INT8: return DType::kI8;
      default: return DType::kF32;
    }
  }
  const Dims& dims() const { return dims_; }
  const Dims& strides() const { return strides_; }
  int64_t numel() const { return Numel(dims_); }
  int64_t offset() const { return offset_; }
  uint8_t* storage() const { return base_; }

  int64_t OffsetOf(const int64_t* idx) const {
    int64_t o = offset_;
    for (size_t d = 0; d < dims_.size(); ++d) o += idx[d] * strides_[d];
    return o;
  }
  int64_t OffsetOfLinear(int64_t lin) const {
    int64_t o = offset_;
    for (int64_t d = int64_t(dims_.size()) - 1; d >= 0; --d) {
      o += (lin % dims_[d]) * strides_[d];
      lin /= dims_[d];
    }
    return o;
  }
  double GetAt(int64_t off) const { return Decode(dtype(), base_ + off * int64_t(esize_)); }
  void SetAt(int64_t off, double v) { Encode(dtype(), base_ + off * int64_t(esize_), v); }
  double Get(int64_t lin) const { return GetAt(OffsetOfLinear(lin)); }
  void Set(int64_t lin, double v) { SetAt(OffsetOfLinear(lin), v); }
  void SetBits16(int64_t lin, uint16_t bits) { std::memcpy(base_ + OffsetOfLinear(lin) * 2, &bits, 2); }

  // Fill the view in row-major order from values (cycled if shorter).
  void Fill(const std::vector<double>& v) {
    if (v.empty()) return;
    ForEachIndex(dims_, [&](const int64_t* idx, int64_t lin) { SetAt(OffsetOf(idx), v[size_t(lin) % v.size()]); });
  }
  void FillFn(const std::function<double(int64_t)>& f) {
    ForEachIndex(dims_, [&](const int64_t* idx, int64_t lin) { SetAt(OffsetOf(idx), f(lin)); });
  }
  std::vector<double> Values() const {
    std::vector<double> out(size_t(std::max<int64_t>(numel(), 0)));
    ForEachIndex(dims_, [&](const int64_t* idx, int64_t lin) { out[size_t(lin)] = GetAt(OffsetOf(idx)); });
    return out;
  }

  std::vector<uint8_t> Snapshot() const { return *buf_; }
  // True when no byte outside the view's elements differs from snap.
  ::testing::AssertionResult OnlyViewChanged(const std::vector<uint8_t>& snap) const {
    std::vector<uint8_t> mask(buf_->size(), 0);
    const int64_t base_off = base_ - buf_->data();
    bool bad_view = false;
    ForEachIndex(dims_, [&](const int64_t* idx, int64_t) {
      const int64_t b = base_off + OffsetOf(idx) * int64_t(esize_);
      if (b < 0 || size_t(b) + esize_ > mask.size()) { bad_view = true; return; }
      std::memset(mask.data() + b, 1, esize_);
    });
    if (bad_view) return ::testing::AssertionFailure() << "view outside buffer (test bug)";
    return Compare(snap, &mask);
  }
  // True when no byte at all differs from snap.
  ::testing::AssertionResult Unchanged(const std::vector<uint8_t>& snap) const { return Compare(snap, nullptr); }

 private:
  Tensor(const Tensor& o, int)  // shares storage, no handle yet
      : type_(o.type_), dims_(o.dims_), strides_(o.strides_), offset_(o.offset_), storage_(o.storage_),
        esize_(o.esize_), storage_bytes_(o.storage_bytes_), buf_(o.buf_), base_(o.base_) {}

  ::testing::AssertionResult Compare(const std::vector<uint8_t>& snap, const std::vector<uint8_t>* mask) const {
    const int64_t base_off = base_ - buf_->data();
    int64_t changed = 0, first = -1;
    for (size_t i = 0; i < snap.size(); ++i) {
      if ((mask && (*mask)[i]) || snap[i] == (*buf_)[i]) continue;
      if (first < 0) first = int64_t(i);
      ++changed;
    }
    if (!changed) return ::testing::AssertionSuccess();
    const int64_t rel = first - base_off;
    return ::testing::AssertionFailure()
           << changed << " byte(s) outside the output view were written; first at byte " << rel
           << " relative to the storage start (storage is " << storage_bytes_ << " bytes, "
           << (rel < 0 ? "front guard" : size_t(rel) >= storage_bytes_ ? "back guard" : "inside storage, outside the view")
           << ")";
  }
  void Create() {
    static const int64_t kDummy[1] = {1};
    handle_ = aclCreateTensor(dims_.empty() ? kDummy : dims_.data(), dims_.size(), type_,
                              strides_.empty() ? kDummy : strides_.data(), offset_, ACL_FORMAT_ND,
                              storage_.empty() ? kDummy : storage_.data(), storage_.size(),
                              null_data_ ? nullptr : base_);
  }
  void Destroy() {
    if (handle_) aclDestroyTensor(handle_);
    handle_ = nullptr;
  }

  aclDataType type_ = ACL_FLOAT;
  Dims dims_, strides_;
  int64_t offset_ = 0;
  Dims storage_;
  size_t esize_ = 4;
  size_t storage_bytes_ = 0;
  std::shared_ptr<std::vector<uint8_t>> buf_;
  uint8_t* base_ = nullptr;
  aclTensor* handle_ = nullptr;
  bool null_data_ = false;
};

// View of dims whose storage is the contiguous layout of dims permuted by perm
// (perm[i] = which view dim is the i-th storage dim), e.g. a transpose.
inline Tensor PermutedView(DType t, const Dims& dims, const std::vector<int>& perm) {
  Dims sdims(dims.size());
  for (size_t i = 0; i < perm.size(); ++i) sdims[i] = dims[size_t(perm[i])];
  const Dims sstr = ContiguousStrides(sdims);
  Dims vstr(dims.size());
  for (size_t i = 0; i < perm.size(); ++i) vstr[size_t(perm[i])] = sstr[i];
  return Tensor(t, dims, vstr, 0, {Numel(dims)});
}

// View of dims with every stride multiplied by step (every step-th element)
// and an offset, over a 1-D storage just large enough.
inline Tensor SteppedView(DType t, const Dims& dims, int64_t step, int64_t offset) {
  Dims s = ContiguousStrides(dims);
  int64_t last = offset;
  for (size_t i = 0; i < dims.size(); ++i) {
    s[i] *= step;
    last += (dims[i] - 1) * s[i];
  }
  return Tensor(t, dims, s, offset, {last + 1 + 3});
}

// Expanded view: stride 0 on the dims where expand[i] is true.
inline Tensor ExpandedView(DType t, const Dims& dims, const std::vector<bool>& expand) {
  Dims compact = dims;
  for (size_t i = 0; i < dims.size(); ++i)
    if (expand[i]) compact[i] = 1;
  Dims s = ContiguousStrides(compact);
  for (size_t i = 0; i < dims.size(); ++i)
    if (expand[i]) s[i] = 0;
  return Tensor(t, dims, s, 0, {Numel(compact)});
}

// ---------------------------------------------------------------- calls

struct OpSpec {
  Op op = Op::kGeluBwd;
  OpParams p{};
  bool gelu_v2 = false;                   // use aclnnGeluBackwardV2 (always for tanh)
  const char* approximate = nullptr;      // V2 string override ("none"/"tanh"/anything)
};

inline OpSpec Spec(Op op) { return OpSpec{op, OpParams{}, false, nullptr}; }
inline OpSpec GeluTanh() { OpSpec s = Spec(Op::kGeluBwd); s.p.gelu_approx = GeluApprox::kTanh; s.gelu_v2 = true; return s; }
inline OpSpec GeluV2None() { OpSpec s = Spec(Op::kGeluBwd); s.gelu_v2 = true; return s; }
inline OpSpec Softshrink(float lambd) { OpSpec s = Spec(Op::kSoftshrinkBwd); s.p.lambd = lambd; return s; }
inline OpSpec Logit(float eps) { OpSpec s = Spec(Op::kLogitGrad); s.p.eps = eps; return s; }

// Each aclnn entry point once (GELU's V2 with tanh), named for the test
// names, with the name its messages start with and its argument names (g, x,
// out): the parameters of the executor, error and hostile-input suites.
struct ApiOp {
  std::string name;
  OpSpec spec;
  std::string api;
  std::string arg[3];
};
inline void PrintTo(const ApiOp& c, std::ostream* os) { *os << c.name; }
inline std::vector<ApiOp> ApiOps() {
  return {{"selu", Spec(Op::kSeluBwd), "aclnnSeluBackward", {"gradOutput", "result", "gradInput"}},
          {"hardswish", Spec(Op::kHardswishBwd), "aclnnHardswishBackward", {"gradOutput", "self", "out"}},
          {"gelu", Spec(Op::kGeluBwd), "aclnnGeluBackward", {"gradOutput", "self", "gradInput"}},
          {"gelu_v2_tanh", GeluTanh(), "aclnnGeluBackwardV2", {"gradOutput", "self", "gradInput"}},
          {"softshrink", Softshrink(0.5f), "aclnnSoftshrinkBackward", {"gradOutput", "self", "gradInput"}},
          {"logit", Logit(-1.0f), "aclnnLogitGrad", {"dy", "x", "out"}}};
}

std::string SpecName(const OpSpec& s);

struct ScalarDeleter {
  void operator()(aclScalar* s) const { if (s) aclDestroyScalar(s); }
};
using ScalarPtr = std::unique_ptr<aclScalar, ScalarDeleter>;
inline ScalarPtr MakeFloatScalar(float v) { return ScalarPtr(aclCreateScalar(&v, ACL_FLOAT)); }

// Phase one for any op. g is gradOutput (dy for LogitGrad), x the op's input.
// For Softshrink, lambd is used when given, else a FLOAT scalar of s.p.lambd
// is created and kept in *holder (which must outlive phase two).
aclnnStatus GetWorkspace(const OpSpec& s, const aclTensor* g, const aclTensor* x, aclTensor* out, uint64_t* ws,
                         aclOpExecutor** ex, ScalarPtr* holder, const aclScalar* lambd = nullptr,
                         bool force_null_lambd = false);
// Phase two for any op.
aclnnStatus Execute(const OpSpec& s, void* workspace, uint64_t ws, aclOpExecutor* ex, aclrtStream stream);

struct RunResult {
  aclnnStatus phase1 = -1;
  aclnnStatus phase2 = -1;
  aclError sync = -1;
  uint64_t workspace = 0;
  bool ok() const { return phase1 == ACLNN_SUCCESS && phase2 == ACLNN_SUCCESS && sync == ACL_SUCCESS; }
};
::testing::AssertionResult IsOk(const RunResult& r);

// Both phases (workspace from aclrtMalloc when non-zero), then synchronize.
RunResult RunOp(const OpSpec& s, const Tensor& g, const Tensor& x, Tensor& out, aclrtStream stream = nullptr);

// --------------------------------------------------------- verification

double RefValue(const OpSpec& s, double g, double x);

// Compares out with the reference computed from g and x (broadcast to out's
// shape by NumPy rules) under the accuracy rule of out's dtype.
actgrad::AccuracyReport Check(const OpSpec& s, const Tensor& g, const Tensor& x, const Tensor& out);
::testing::AssertionResult Passes(const actgrad::AccuracyReport& r);

// Shorthand: Run + Check + nothing outside the output view written.
::testing::AssertionResult RunAndCheck(const OpSpec& s, const Tensor& g, const Tensor& x, Tensor& out);

std::string ErrMsg();

inline std::vector<Op> AllOps() {
  return {Op::kSeluBwd, Op::kHardswishBwd, Op::kGeluBwd, Op::kSoftshrinkBwd, Op::kLogitGrad};
}

// Random input values in the op's range with a few specials mixed in (1 in
// 97: NaN, +-Inf, +-0, +-1e-40): g in [-2, 2), x in the op's interesting
// range (Hardswish and Softshrink hit their ends); integers in [-100, 100).
double RandomInput(const OpSpec& s, bool is_g, DType t, std::mt19937_64& rng);
// g and x filled with RandomInput from one seeded generator.
void FillInputs(const OpSpec& s, Tensor& g, Tensor& x, uint64_t seed);

// An op (with its parameters) and a dtype, named like selu_f32 or logit_0_25_bf16.
struct OpType {
  std::string name;
  OpSpec spec;
  DType t;
};
void PrintTo(const OpType& c, std::ostream* os);
// Every op (GELU in both forms, LogitGrad at eps -1 and 0.25) in f32, f16 and
// bf16, SELU also in i32 and i8.
std::vector<OpType> OpTypes();

}  // namespace apitest
