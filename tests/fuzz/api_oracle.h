// The API fuzz target's independent judge: from what the harness passed,
// which rules of the spec (/work/shared/spec/operators.md: "Common API shape"
// and each op) and README.md ("Bad input gets a status and a message") a call
// breaks, so which statuses are right. Written from those documents, not from
// the runtime's code; sizes in 128-bit arithmetic that saturates far above
// any real size, so no input overflows here.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "actgrad/half.h"
#include "api_program.h"

namespace fuzzapi {

using i128 = __int128;
inline constexpr i128 kHuge = i128(1) << 100;
inline constexpr i128 kInt64Max = std::numeric_limits<int64_t>::max();

inline i128 Sat(i128 v) { return v > kHuge ? kHuge : v < -kHuge ? -kHuge : v; }
inline i128 SatMul(i128 a, i128 b) {  // a and b within +-kHuge
  if (a == 0 || b == 0) return 0;
  const i128 aa = a < 0 ? -a : a, bb = b < 0 ? -b : b;
  if (aa > kHuge / bb) return (a < 0) != (b < 0) ? -kHuge : kHuge;
  return a * b;
}

// The status codes of README.md.
inline constexpr int kNullptr = 161001;  // ACLNN_ERR_PARAM_NULLPTR
inline constexpr int kInvalid = 161002;  // ACLNN_ERR_PARAM_INVALID

// Which answers are right: success only when no rule is broken; a broken
// null-pointer rule allows 161001, a broken parameter rule 161002 (with both,
// either); a case the documents leave open allows success or 161002.
struct Verdict {
  bool null_err = false, invalid_err = false, unclear = false;
  std::string why;  // every rule broken or left open, for the finding's report

  void Null(const std::string& w) { null_err = true; Note("null: " + w); }
  void Invalid(const std::string& w) { invalid_err = true; Note("invalid: " + w); }
  void Unclear(const std::string& w) { unclear = true; Note("unclear: " + w); }
  bool MustFail() const { return null_err || invalid_err; }
  bool Bad() const { return MustFail() || unclear; }
  bool Allows(int status) const {
    if (status == 0) return !MustFail();
    if (status == kNullptr) return null_err;
    if (status == kInvalid) return invalid_err || unclear;
    return false;
  }

 private:
  void Note(const std::string& w) { why += why.empty() ? w : "; " + w; }
};

// aclDataType and aclFormat enumerators (acl/acl_base.h) and element sizes.
inline bool IsDTypeEnumerator(int32_t t) {
  for (int32_t e : {-1, 0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17, 27})
    if (t == e) return true;
  return false;
}
inline bool IsFormatEnumerator(int32_t f) {
  for (int32_t e : {-1, 0, 1, 2, 3, 4, 27, 30})
    if (f == e) return true;
  return false;
}
inline int ElemSize(int32_t t) {
  switch (t) {
    case 0: case 3: case 8: return 4;     // f32, i32, u32
    case 1: case 27: case 6: case 7: return 2;  // f16, bf16, i16, u16
    case 2: case 4: case 12: return 1;    // i8, u8, bool
    case 9: case 10: case 11: case 16: return 8;
    case 17: return 16;
    default: return 0;  // unknown (and string)
  }
}
inline constexpr int32_t kF32 = 0, kF16 = 1, kBF16 = 27, kI32 = 3, kI8 = 2, kND = 2;

// One tensor as passed to aclCreateTensor, in exact arithmetic.
struct ViewFacts {
  bool null_handle = false;  // the op got a null aclTensor*
  int32_t dtype = 0, format = kND;
  std::vector<int64_t> dims;
  std::vector<i128> strides;  // as passed, or contiguous ones for a null pointer
  bool strides_from_null = false;
  i128 offset = 0, numel = 0, lo = 0, hi = 0;  // lo/hi: first and last element touched
  bool empty = false, negative_dim = false, negative_storage_dim = false;
  i128 storage = 1;  // elements
  size_t storage_dims = 0;
  bool null_data = false;
};

inline ViewFacts Facts(const std::vector<int64_t>& dims, int32_t dtype, const int64_t* strides, int64_t offset,
                       int32_t format, const std::vector<int64_t>& storage, void* data) {
  ViewFacts f;
  f.dtype = dtype;
  f.format = format;
  f.dims = dims;
  f.offset = offset;
  f.null_data = data == nullptr;
  f.strides.resize(dims.size());
  f.strides_from_null = strides == nullptr;
  i128 contiguous = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    f.strides[i] = strides ? i128(strides[i]) : contiguous;
    contiguous = SatMul(contiguous, std::max<i128>(dims[i], 1));
  }
  f.numel = 1;
  for (int64_t d : dims) {
    f.negative_dim |= d < 0;
    f.numel = SatMul(f.numel, d < 0 ? 0 : d);
  }
  f.empty = f.numel == 0;
  f.lo = f.hi = offset;
  for (size_t i = 0; i < dims.size(); ++i) {
    const i128 span = SatMul(std::max<i128>(dims[i] - i128(1), 0), Sat(f.strides[i]));
    (span < 0 ? f.lo : f.hi) = Sat((span < 0 ? f.lo : f.hi) + span);
  }
  f.storage_dims = storage.size();
  for (int64_t s : storage) {
    f.negative_storage_dim |= s < 0;
    f.storage = SatMul(f.storage, s);
  }
  return f;
}

// The rules one tensor obeys whatever the op: 0..8 dims, none negative, a
// known dtype and format, a non-empty view inside its storage with a buffer.
inline void TensorRules(const ViewFacts& f, const char* name, Verdict* v) {
  const std::string n = name;
  if (f.dims.size() > 8) v->Invalid(n + " has more than 8 dims");
  if (f.negative_dim) v->Invalid(n + " has a negative dim");
  if (f.storage_dims > 8) v->Unclear(n + " has more than 8 storage dims");
  if (!IsDTypeEnumerator(f.dtype)) v->Invalid(n + " dtype is no aclDataType");
  if (!IsFormatEnumerator(f.format)) v->Invalid(n + " format is no aclFormat");
  else if (f.format != kND) v->Unclear(n + " format is not ND");
  if (f.negative_dim) return;
  if (f.empty) {  // nothing is read or written: the view's place does not matter
    if (f.offset < 0 || f.negative_storage_dim) v->Unclear(n + " is empty with a negative offset or storage dim");
    for (const i128 s : f.strides)
      if (s > kInt64Max) v->Unclear(n + " is empty with contiguous strides past int64");
    return;
  }
  if (f.numel > kInt64Max) v->Invalid(n + " has more than 2^63-1 elements (README: sizes overflowing int64)");
  if (f.offset < 0) v->Invalid(n + " has a negative offset");
  if (f.negative_storage_dim) v->Invalid(n + " has a negative storage dim");
  else if (f.lo < 0 || f.hi >= f.storage) v->Invalid(n + " view does not fit its storage");
  else if (SatMul(f.storage, std::max(ElemSize(f.dtype), 1)) > (i128(1) << 62))
    v->Unclear(n + " storage is over 2^62 bytes (a runtime may refuse what its int64 walk cannot reach)");
  if (f.null_data) v->Null(n + " is not empty and its data is null");
}

// aclCreateTensor may refuse a tensor only if some rule above is broken or
// open (it must refuse null dims/storage arrays with a non-zero count).
inline bool CreateMayRefuse(const ViewFacts& f) {
  Verdict v;
  TensorRules(f, "t", &v);
  return v.Bad();
}

// Offsets (in elements) of every element of a view with numel <= limit.
__attribute__((no_sanitize("coverage"))) inline std::vector<int64_t> ElementOffsets(const ViewFacts& f) {
  std::vector<int64_t> out;
  if (f.empty) return out;
  out.reserve(size_t(f.numel));
  std::vector<int64_t> idx(f.dims.size(), 0);
  for (i128 k = 0; k < f.numel; ++k) {
    i128 off = f.offset;
    for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * f.strides[i];
    out.push_back(int64_t(off));
    for (size_t i = idx.size(); i-- > 0;) {
      if (++idx[i] < f.dims[i]) break;
      idx[i] = 0;
    }
  }
  return out;
}

// The output must not overlap itself. Sorted by |stride|, a view in which
// every stride is past the extent of the smaller ones cannot overlap; when
// that test fails, small views are checked element by element, and larger
// ones are left open (the exact test is a knapsack problem).
inline void OutputOverlapRule(const ViewFacts& f, Verdict* v) {
  std::vector<std::pair<i128, i128>> dims;  // (|stride|, size)
  for (size_t i = 0; i < f.dims.size(); ++i)
    if (f.dims[i] > 1) dims.emplace_back(f.strides[i] < 0 ? -f.strides[i] : f.strides[i], f.dims[i]);
  std::sort(dims.begin(), dims.end());
  i128 extent = 1;
  bool separated = true;
  for (auto [stride, size] : dims) {
    separated = separated && stride >= extent;
    extent = Sat(SatMul(stride, size - 1) + extent);
  }
  if (separated) return;
  if (f.numel > 4096) return v->Unclear("output strides fail the sorted-stride test (view too large to check)");
  std::vector<int64_t> offs = ElementOffsets(f);
  std::sort(offs.begin(), offs.end());
  if (std::adjacent_find(offs.begin(), offs.end()) != offs.end()) return v->Invalid("output view overlaps itself");
  v->Unclear("output view fails the sorted-stride test but does not overlap");
}

// The bytes a caller passes to aclCreateScalar for value v in dtype t, and
// the value they hold; false when t has no numeric value here.
template <class I>
I SaturatingCast(double v) {
  if (!(v == v)) return 0;
  if (v <= double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return I(v);
}
inline bool ScalarBytes(int32_t t, double v, uint8_t (&b)[16], double* held) {
  std::memset(b, 0, sizeof b);
  auto put = [&](auto x) { std::memcpy(b, &x, sizeof x); *held = double(x); return true; };
  switch (t) {
    case kF32: return put(float(v));
    case kF16: { const uint16_t h = actgrad::FloatToHalf(float(v)); std::memcpy(b, &h, 2); *held = actgrad::HalfToFloat(h); return true; }
    case kBF16: { const uint16_t h = actgrad::FloatToBF16(float(v)); std::memcpy(b, &h, 2); *held = actgrad::BF16ToFloat(h); return true; }
    case 11: return put(v);
    case kI32: return put(SaturatingCast<int32_t>(v));
    case 9: return put(SaturatingCast<int64_t>(v));
    case kI8: return put(SaturatingCast<int8_t>(v));
    case 4: return put(SaturatingCast<uint8_t>(v));
    case 6: return put(SaturatingCast<int16_t>(v));
    case 7: return put(SaturatingCast<uint16_t>(v));
    case 8: return put(SaturatingCast<uint32_t>(v));
    case 10: return put(SaturatingCast<uint64_t>(v));
    case 12: return put(uint8_t(v != 0));
    default: std::memcpy(b, &v, sizeof v); return false;
  }
}

// Everything one call passes to phase one.
struct CallFacts {
  ApiOp op = ApiOp::kSelu;
  const ViewFacts* t[3] = {};  // null: a null aclTensor*
  bool null_ws_size = false, null_executor = false;
  int approximate = 0;  // GeluV2: 0 "none", 1 "tanh", 2 null, 3 anything else
  bool lambd_null = false;
  int32_t lambd_dtype = kF32;
  double lambd = 0.5;  // the value the scalar's bytes hold in its dtype
  bool lambd_value_known = true;
};

inline bool Broadcasts(ApiOp op) { return op == ApiOp::kGelu || op == ApiOp::kGeluV2 || op == ApiOp::kSoftshrink; }

inline void DTypeRules(const CallFacts& c, Verdict* v) {
  const int32_t a = c.t[0]->dtype, b = c.t[1]->dtype, o = c.t[2]->dtype;
  std::vector<int32_t> ok = {kF32, kF16, kBF16};
  if (c.op == ApiOp::kSelu) ok.insert(ok.end(), {kI32, kI8});
  bool supported = true;
  for (int32_t t : {a, b, o})
    if (std::find(ok.begin(), ok.end(), t) == ok.end()) supported = false;
  if (!supported) return v->Invalid("a dtype the op does not support");
  if (c.op == ApiOp::kGelu || c.op == ApiOp::kGeluV2) {
    const int32_t promoted = a == b ? a : kF32;  // f32 with anything, f16 with bf16 -> f32
    if (o != promoted) v->Invalid("output dtype is not the promoted dtype");
  } else if (a != b || a != o) {
    v->Invalid("dtypes differ");
  }
}

inline void ShapeRules(const CallFacts& c, Verdict* v) {
  const auto &a = c.t[0]->dims, &b = c.t[1]->dims, &o = c.t[2]->dims;
  if (!Broadcasts(c.op)) {
    if (a != b || a != o) v->Invalid("shapes differ");
    return;
  }
  std::vector<int64_t> shape;
  if (!BroadcastDims(a, b, &shape)) v->Invalid("input shapes do not broadcast");
  else if (shape != o) v->Invalid("output shape is not the broadcast shape");
}

inline Verdict Judge(const CallFacts& c) {
  Verdict v;
  static const char* const kNames[3] = {"argument 0", "argument 1", "output"};
  for (int i = 0; i < 3; ++i) {
    if (!c.t[i]) v.Null(std::string(kNames[i]) + " is a null aclTensor");
    else TensorRules(*c.t[i], kNames[i], &v);
  }
  if (c.null_ws_size) v.Null("workspaceSize is null");
  if (c.null_executor) v.Null("executor is null");
  if (c.op == ApiOp::kGeluV2) {
    if (c.approximate == 2) v.Null("approximate is null");
    if (c.approximate == 3) v.Invalid("approximate is neither \"none\" nor \"tanh\"");
  }
  if (c.op == ApiOp::kSoftshrink) {
    if (c.lambd_null) v.Null("lambd is null");
    else if (!IsDTypeEnumerator(c.lambd_dtype)) v.Invalid("lambd dtype is no aclDataType");
    else if (c.lambd_value_known && !(c.lambd >= 0)) v.Invalid("lambd is negative or NaN");
    else if (c.lambd_dtype != kF32) v.Unclear("lambd is not FLOAT (the page allows FLOAT)");
  }
  if (!c.t[0] || !c.t[1] || !c.t[2]) return v;
  bool known = true;
  for (const ViewFacts* t : c.t) known = known && IsDTypeEnumerator(t->dtype);
  if (known) DTypeRules(c, &v);
  ShapeRules(c, &v);
  Verdict out;  // the overlap rule applies to an output that is otherwise fine
  TensorRules(*c.t[2], "output", &out);
  if (!out.Bad() && !c.t[2]->empty) OutputOverlapRule(*c.t[2], &v);
  return v;
}

}  // namespace fuzzapi
