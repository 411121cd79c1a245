// The API fuzz target's input: one op call as a small program (the op, its
// three tensor arguments, the scalar, phase-one pointers, how phase two is
// launched), read front to back. The target decodes it (Decode) and the seed
// writer encodes it (Encode, api_seeds.cc) with this one file, so committed
// seeds keep their meaning. Reading past the end gives zeros, so any byte
// string is a program (zeros: SeluBackward on three f32 0-d tensors).
//
// Not FuzzedDataProvider: it takes integers from the end of the input, which
// makes hand-written seeds hard to read and write.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

namespace fuzzapi {

enum class ApiOp : uint8_t { kSelu, kHardswish, kGelu, kGeluV2, kSoftshrink, kLogit };
inline constexpr int kNumApiOps = 6;

// How a tensor argument is made.
enum class Handle : uint8_t {
  kOwn,        // its own descriptor over its own buffer
  kNull,       // a null aclTensor*
  kSameAs0,    // the same aclTensor* as argument 0 (in place)
  kSameAs1,    // the same aclTensor* as argument 1
  kOnBuffer0,  // its own descriptor over argument 0's buffer
};
enum class Shape : uint8_t { kOwn, kSameAs0, kSameAs1, kBroadcast01 };  // where the dims come from
enum class Strides : uint8_t { kContiguous, kNull, kExplicit };  // kContiguous: computed by the harness
enum class Storage : uint8_t { kFits, kNull, kExplicit };        // kFits: one dim, the view's extent

struct TensorSpec {
  Handle handle = Handle::kOwn;
  int32_t dtype = 0;   // raw aclDataType (need not be an enumerator)
  int32_t format = 2;  // raw aclFormat (ND)
  Shape shape = Shape::kOwn;
  std::vector<int64_t> dims;  // resolved by Decode for every Shape
  bool null_dims = false;     // null viewDims with viewDimsNum = dims.size()
  Strides stride_mode = Strides::kContiguous;
  std::vector<int64_t> strides;  // kExplicit: one per dim
  int64_t offset = 0;
  Storage storage_mode = Storage::kFits;
  std::vector<int64_t> storage;  // kExplicit (kNull: only its count is used)
  bool null_data = false;
};

enum class StreamMode : uint8_t { kDefault, kCreated, kDestroyed };  // kDestroyed: a dead handle
enum class WsMode : uint8_t { kExact, kLarger, kShort, kNull };
enum class Runs : uint8_t { kOnce, kRepeatableTwice, kOnceThenSpent, kDestroyUnrun };

struct Program {
  ApiOp op = ApiOp::kSelu;
  bool null_ws_size = false, null_executor = false;  // phase one's out pointers
  StreamMode stream = StreamMode::kDefault;
  WsMode ws = WsMode::kExact;
  Runs runs = Runs::kOnce;
  uint8_t approximate = 0;  // GeluV2: index into kApproximates (api_fuzz.cc)
  bool null_lambd = false;  // Softshrink
  int32_t lambd_dtype = 0;
  double lambd = 0.5;
  double eps = -1.0;  // LogitGrad
  TensorSpec t[3];    // the op's tensor arguments in API order (out last)
};

// ---- value tables: a one-byte tag picks a common value, a high tag a raw one

inline constexpr int32_t kDTypes[] = {0, 1, 27, 3, 2, 11, 9, 6, 4, 12, 8, 7, -1, 16};  // f32 first
inline constexpr int32_t kFormats[] = {2, 0, 1, 3, 4, 30, 27, -1};                   // ND first
inline constexpr int64_t kSpecialInts[] = {
    (int64_t(1) << 31) - 1, int64_t(1) << 31, (int64_t(1) << 32) - 1, int64_t(1) << 32, (int64_t(1) << 32) + 1,
    int64_t(1) << 40, int64_t(1) << 53, int64_t(1) << 61, (int64_t(1) << 62) - 1, int64_t(1) << 62,
    (int64_t(1) << 62) + 1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
    std::numeric_limits<int64_t>::min() + 1, -(int64_t(1) << 62), -(int64_t(1) << 32), -(int64_t(1) << 31),
    255, 256, 4095, 4096, 4097, 65535, 65536, 65537, int64_t(1) << 20, 3 * (int64_t(1) << 61),
    std::numeric_limits<int64_t>::max() / 2, std::numeric_limits<int64_t>::max() / 3, int64_t(1) << 33};
inline constexpr double kSpecialDoubles[] = {
    -1.0, 0.0, 0.5, 1.0, 1e-6, 0.25, -0.5, std::numeric_limits<double>::quiet_NaN(),
    std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), -0.0, 1e-30, -1e-30, 2.0,
    1e300, -1e300, std::numeric_limits<double>::denorm_min(), 3.5e38, 65504.0, 1.0 - 1e-9};
inline constexpr uint8_t kRawTag = 0xF0;  // tags from here on: the raw value follows
inline constexpr uint8_t kSpecialTag = 0xC0;  // ints: tags from here to kRawTag pick kSpecialInts
inline constexpr int kSmallBias = 16;          // ints: tag t < kSpecialTag is t - 16
inline constexpr int kMaxCount = 9;            // counts: tag % 10, or 60.. for a raw tag

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint8_t U8() { return i_ < n_ ? p_[i_++] : 0; }
  template <class T> T Raw() {
    uint8_t b[sizeof(T)];
    for (auto& x : b) x = U8();
    T v;
    std::memcpy(&v, b, sizeof v);
    return v;
  }
  int64_t Int() {
    const uint8_t t = U8();
    if (t < kSpecialTag) return int64_t(t) - kSmallBias;
    if (t < kRawTag) return kSpecialInts[(t - kSpecialTag) % std::size(kSpecialInts)];
    return Raw<int64_t>();
  }
  double Double() {
    const uint8_t t = U8();
    return t < kRawTag ? kSpecialDoubles[t % std::size(kSpecialDoubles)] : Raw<double>();
  }
  int32_t DType() { const uint8_t t = U8(); return t < kRawTag ? kDTypes[t % std::size(kDTypes)] : Raw<int32_t>(); }
  int32_t Format() { const uint8_t t = U8(); return t < kRawTag ? kFormats[t % std::size(kFormats)] : Raw<int32_t>(); }
  // Dims and storage-dims counts: 0..9 mostly, 60..75 to pass aclCreateTensor's limit.
  size_t Count() { const uint8_t t = U8(); return t < kRawTag ? t % (kMaxCount + 1) : 60 + (t - kRawTag); }

 private:
  const uint8_t* p_;
  size_t n_, i_ = 0;
};

class Writer {
 public:
  std::vector<uint8_t> bytes;
  void U8(uint8_t v) { bytes.push_back(v); }
  template <class T> void Raw(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof v);
    bytes.insert(bytes.end(), b, b + sizeof b);
  }
  void Int(int64_t v) {
    if (v >= -kSmallBias && v < kSpecialTag - kSmallBias) return U8(uint8_t(v + kSmallBias));
    for (size_t i = 0; i < std::size(kSpecialInts); ++i)
      if (kSpecialInts[i] == v) return U8(uint8_t(kSpecialTag + i));
    U8(kRawTag);
    Raw(v);
  }
  void Double(double v) {
    for (size_t i = 0; i < std::size(kSpecialDoubles); ++i)
      if (std::memcmp(&kSpecialDoubles[i], &v, sizeof v) == 0) return U8(uint8_t(i));
    U8(kRawTag);
    Raw(v);
  }
  void DType(int32_t v) { Tagged(v, kDTypes); }
  void Format(int32_t v) { Tagged(v, kFormats); }
  void Count(size_t n) { U8(n <= size_t(kMaxCount) ? uint8_t(n) : uint8_t(kRawTag + (n - 60))); }

 private:
  template <size_t N> void Tagged(int32_t v, const int32_t (&table)[N]) {
    for (size_t i = 0; i < N; ++i)
      if (table[i] == v) return U8(uint8_t(i));
    U8(kRawTag);
    Raw(v);
  }
};

// NumPy broadcast of two shapes; false when they do not broadcast.
inline bool BroadcastDims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>* out) {
  const size_t n = std::max(a.size(), b.size());
  out->assign(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i + a.size() < n ? 1 : a[i + a.size() - n];
    const int64_t db = i + b.size() < n ? 1 : b[i + b.size() - n];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = da == 1 ? db : da;
  }
  return true;
}

// Bit layout of the two flag bytes.
inline uint8_t CallFlags(const Program& p) {
  return uint8_t(p.null_ws_size | p.null_executor << 1 | uint8_t(p.stream) << 2 | uint8_t(p.ws) << 4 |
                 uint8_t(p.runs) << 6);
}
inline uint8_t TensorFlags(const TensorSpec& t) {
  return uint8_t(t.null_dims | uint8_t(t.stride_mode) << 1 | uint8_t(t.storage_mode) << 3 | t.null_data << 5);
}

inline void DecodeTensor(Reader& r, int slot, Program* p) {
  TensorSpec& t = p->t[slot];
  t.handle = Handle(r.U8() % 5);
  // Argument 0 has nothing to alias; argument 1 only argument 0.
  if ((slot == 0 && t.handle != Handle::kNull) || (slot == 1 && t.handle == Handle::kSameAs1)) t.handle = Handle::kOwn;
  if (t.handle == Handle::kNull || t.handle == Handle::kSameAs0 || t.handle == Handle::kSameAs1) return;
  t.dtype = r.DType();
  t.format = r.Format();
  t.shape = slot == 0 ? Shape::kOwn : Shape(r.U8() % 4);
  if (slot == 1 && t.shape != Shape::kOwn) t.shape = Shape::kSameAs0;
  if (t.shape == Shape::kOwn) {
    t.dims.resize(r.Count());
    for (auto& d : t.dims) d = r.Int();
  } else if (t.shape == Shape::kSameAs0 || t.shape == Shape::kSameAs1) {
    t.dims = p->t[t.shape == Shape::kSameAs0 ? 0 : 1].dims;
  } else if (!BroadcastDims(p->t[0].dims, p->t[1].dims, &t.dims)) {
    t.dims = p->t[0].dims;
  }
  const uint8_t f = r.U8();
  t.null_dims = f & 1;
  t.stride_mode = Strides((f >> 1 & 3) % 3);
  t.storage_mode = Storage((f >> 3 & 3) % 3);
  t.null_data = f >> 5 & 1;
  if (t.stride_mode == Strides::kExplicit) {
    t.strides.resize(t.dims.size());
    for (auto& s : t.strides) s = r.Int();
  }
  t.offset = r.Int();
  if (t.storage_mode != Storage::kFits) {
    t.storage.resize(r.Count());
    if (t.storage_mode == Storage::kExplicit)
      for (auto& s : t.storage) s = r.Int();
  }
}

inline Program Decode(const uint8_t* data, size_t size) {
  Reader r(data, size);
  Program p;
  p.op = ApiOp(r.U8() % kNumApiOps);
  const uint8_t f = r.U8();
  p.null_ws_size = f & 1;
  p.null_executor = f >> 1 & 1;
  p.stream = StreamMode((f >> 2 & 3) % 3);
  p.ws = WsMode(f >> 4 & 3);
  p.runs = Runs(f >> 6 & 3);
  if (p.op == ApiOp::kGeluV2) p.approximate = r.U8();
  if (p.op == ApiOp::kSoftshrink) {
    p.null_lambd = r.U8() & 1;
    p.lambd_dtype = r.DType();
    p.lambd = r.Double();
  }
  if (p.op == ApiOp::kLogit) p.eps = r.Double();
  for (int i = 0; i < 3; ++i) DecodeTensor(r, i, &p);
  return p;
}

// The inverse of Decode for programs Decode can produce (seeds).
inline std::vector<uint8_t> Encode(const Program& p) {
  Writer w;
  w.U8(uint8_t(p.op));
  w.U8(CallFlags(p));
  if (p.op == ApiOp::kGeluV2) w.U8(p.approximate);
  if (p.op == ApiOp::kSoftshrink) {
    w.U8(p.null_lambd);
    w.DType(p.lambd_dtype);
    w.Double(p.lambd);
  }
  if (p.op == ApiOp::kLogit) w.Double(p.eps);
  for (int i = 0; i < 3; ++i) {
    const TensorSpec& t = p.t[i];
    w.U8(uint8_t(t.handle));
    if (t.handle == Handle::kNull || t.handle == Handle::kSameAs0 || t.handle == Handle::kSameAs1) continue;
    w.DType(t.dtype);
    w.Format(t.format);
    if (i > 0) w.U8(uint8_t(t.shape));
    if (t.shape == Shape::kOwn) {
      w.Count(t.dims.size());
      for (int64_t d : t.dims) w.Int(d);
    }
    w.U8(TensorFlags(t));
    if (t.stride_mode == Strides::kExplicit)
      for (int64_t s : t.strides) w.Int(s);
    w.Int(t.offset);
    if (t.storage_mode != Storage::kFits) {
      w.Count(t.storage.size());
      if (t.storage_mode == Storage::kExplicit)
        for (int64_t s : t.storage) w.Int(s);
    }
  }
  return w.bytes;
}

// One line per part of the program, for a finding's report.
inline std::string Describe(const Program& p) {
  static const char* const kOps[] = {"SeluBackward", "HardswishBackward", "GeluBackward",
                                     "GeluBackwardV2", "SoftshrinkBackward", "LogitGrad"};
  auto list = [](const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  };
  auto num = [](auto v) { return std::to_string(v); };
  std::string s = "program: aclnn" + std::string(kOps[int(p.op)]) + " null_ws_size=" + num(p.null_ws_size) +
                  " null_executor=" + num(p.null_executor) + " stream=" + num(int(p.stream)) +
                  " ws=" + num(int(p.ws)) + " runs=" + num(int(p.runs));
  if (p.op == ApiOp::kGeluV2) s += " approximate=" + num(int(p.approximate));
  if (p.op == ApiOp::kSoftshrink)
    s += " lambd: null=" + num(p.null_lambd) + " dtype=" + num(p.lambd_dtype) + " value=" + num(p.lambd);
  if (p.op == ApiOp::kLogit) s += " eps=" + num(p.eps);
  static const char* const kHandles[] = {"own", "null", "same as 0", "same as 1", "own on buffer 0"};
  for (int i = 0; i < 3; ++i) {
    const TensorSpec& t = p.t[i];
    s += "\n  tensor " + num(i) + ": " + kHandles[int(t.handle)];
    if (t.handle == Handle::kNull || t.handle == Handle::kSameAs0 || t.handle == Handle::kSameAs1) continue;
    s += " dtype=" + num(t.dtype) + " format=" + num(t.format) + " dims=" + list(t.dims) +
         (t.null_dims ? " (null pointer)" : "") + " strides=" +
         (t.stride_mode == Strides::kExplicit ? list(t.strides)
                                              : t.stride_mode == Strides::kNull ? "null" : "contiguous") +
         " offset=" + num(t.offset) + " storage=" +
         (t.storage_mode == Storage::kExplicit ? list(t.storage)
                                               : t.storage_mode == Storage::kNull
                                                     ? "null (count " + num(t.storage.size()) + ")"
                                                     : "fits") +
         (t.null_data ? " data=null" : "");
  }
  return s;
}

}  // namespace fuzzapi
