// libFuzzer target over the public aclnn API (docs/fuzzing.md). Each input is
// one op call (api_program.h): fuzz-chosen dtypes (raw enum values too),
// formats, dims, strides, offsets, storages, null pointers, aliasing, and how
// phase two is launched. Besides ASan/UBSan, the target stops (trap) when
//  - phase one's status is not one the independent rules allow (api_oracle.h):
//    success on a broken rule, failure when none is broken, the wrong code;
//  - a failure (aclCreateTensor, either phase) leaves no message;
//  - a byte changes outside the output view: inputs, the rest of the output's
//    storage, the guard bytes around every buffer; nothing at all may change
//    on a failure, an empty output or an executor destroyed unrun;
//  - phase two's status is wrong (dead stream, short or null workspace, a
//    spent executor) or the stream's synchronize reports an error.
// Values are not compared with a reference here (tests/runtime does that).
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_hardswish_backward.h"
#include "aclnnop/aclnn_logit_grad.h"
#include "aclnnop/aclnn_selu_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "api_oracle.h"
#include "api_program.h"
#include "guarded_buffer.h"

namespace fuzzapi {
namespace {

constexpr i128 kMaxAllocElems = 1 << 14;  // a buffer never holds more (declared storage may be larger)
constexpr i128 kMaxRunElems = 4096;       // phase two runs only for outputs this small
constexpr uint64_t kMaxWorkspace = uint64_t(64) << 20;
const int64_t kNoValues[1] = {0};  // a non-null array for a zero count

const Program* g_program = nullptr;  // described in a finding's report

// How far the inputs got, printed at exit with ACTGRAD_FUZZ_STATS=1 (is the
// fuzzer reaching phase two, and for which ops?).
struct Stats {
  uint64_t inputs[kNumApiOps] = {}, accepted[kNumApiOps] = {}, ran[kNumApiOps] = {};
  ~Stats() {
    if (!std::getenv("ACTGRAD_FUZZ_STATS")) return;
    static const char* const kNames[] = {"selu", "hardswish", "gelu", "gelu_v2", "softshrink", "logit"};
    for (int i = 0; i < kNumApiOps; ++i)
      std::fprintf(stderr, "api_fuzz: %-10s %10llu inputs %10llu accepted in phase one %10llu ran phase two\n",
                   kNames[i], (unsigned long long)inputs[i], (unsigned long long)accepted[i],
                   (unsigned long long)ran[i]);
  }
} g_stats;

[[noreturn]] __attribute__((format(printf, 1, 2))) void Finding(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "\n==== api_fuzz finding: ");
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "\n%s\n", g_program ? Describe(*g_program).c_str() : "");
  __builtin_trap();
}
#define CHECK(cond, ...)         \
  do {                           \
    if (!(cond)) Finding(__VA_ARGS__); \
  } while (0)

std::string ErrMsg() {
  const char* m = aclGetRecentErrMsg();
  return m ? m : "";
}

// Raw enum values reach the library as they would from C: loading them in
// the harness would be UBSan's finding in the harness, not the library.
static_assert(sizeof(aclDataType) == sizeof(int32_t) && sizeof(aclFormat) == sizeof(int32_t));
__attribute__((no_sanitize("enum"))) aclTensor* CreateTensorRaw(const int64_t* dims, uint64_t n, int32_t dtype,
                                                                const int64_t* strides, int64_t offset,
                                                                int32_t format, const int64_t* storage, uint64_t sn,
                                                                void* data) {
  aclDataType t;
  aclFormat f;
  std::memcpy(&t, &dtype, sizeof t);
  std::memcpy(&f, &format, sizeof f);
  return aclCreateTensor(dims, n, t, strides, offset, f, storage, sn, data);
}
__attribute__((no_sanitize("enum"))) aclScalar* CreateScalarRaw(void* value, int32_t dtype) {
  aclDataType t;
  std::memcpy(&t, &dtype, sizeof t);
  return aclCreateScalar(value, t);
}

// GeluV2's approximate strings; class as in CallFacts::approximate.
char kNone[] = "none", kTanh[] = "tanh", kSigmoid[] = "sigmoid", kEmpty[] = "", kUpper[] = "TANH";
struct Approximate { char* s; int cls; };
const Approximate kApproximates[] = {{kNone, 0}, {kTanh, 1}, {nullptr, 2}, {kSigmoid, 3}, {kEmpty, 3}, {kUpper, 3}};

// Contiguous strides, saturated at INT64_MAX.
std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  i128 step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = int64_t(std::min(step, kInt64Max));
    step = SatMul(step, std::max<i128>(dims[i], 1));
  }
  return s;
}

struct Arg {
  aclTensor* handle = nullptr;
  bool owned = false;  // this argument destroys the handle
  ViewFacts facts;
  int buffer = -1;  // index into Call::buffers_
};

class Call {
 public:
  explicit Call(const Program& p) : p_(p) {}
  ~Call();
  void Run();

 private:
  void MakeTensor(int i);
  void CheckGetters(const aclTensor* t, const ViewFacts& f, const std::vector<int64_t>& storage, bool storage_given,
                    int i);
  void MakeScalar();
  aclnnStatus PhaseOne(uint64_t* ws, aclOpExecutor** ex);
  aclnnStatus PhaseTwo(void* ws, uint64_t size, aclOpExecutor* ex);
  bool Runnable(uint64_t ws) const;
  void Launch(aclOpExecutor* ex, uint64_t ws);
  void CheckWrites(const char* when, bool output_may_change);

  const Program& p_;
  Arg args_[3];
  std::vector<std::unique_ptr<GuardedBuffer>> buffers_;
  std::vector<std::vector<uint8_t>> snapshots_;
  aclScalar* lambd_ = nullptr;
  double lambd_value_ = 0;
  bool lambd_known_ = false;
  aclrtStream stream_ = nullptr;
  bool stream_live_ = false;
};

Call::~Call() {
  for (const Arg& a : args_)
    if (a.owned) aclDestroyTensor(a.handle);
  if (lambd_) aclDestroyScalar(lambd_);
  if (stream_live_) aclrtDestroyStream(stream_);
}

void Call::MakeTensor(int i) {
  const TensorSpec& s = p_.t[i];
  Arg& a = args_[i];
  if (s.handle == Handle::kNull) {
    a.facts.null_handle = true;
    return;
  }
  if (s.handle == Handle::kSameAs0 || s.handle == Handle::kSameAs1) {
    a = args_[s.handle == Handle::kSameAs0 ? 0 : 1];
    a.owned = false;
    return;
  }
  const std::vector<int64_t> strides = s.stride_mode == Strides::kContiguous ? ContiguousStrides(s.dims) : s.strides;
  const int64_t* stride_ptr = s.stride_mode == Strides::kNull ? nullptr : strides.empty() ? kNoValues : strides.data();
  std::vector<int64_t> storage = s.storage;
  if (s.storage_mode == Storage::kFits) {  // one dim: up to the last element the view touches
    const ViewFacts v = Facts(s.dims, s.dtype, stride_ptr, s.offset, s.format, {}, nullptr);
    storage = {v.empty ? 0 : int64_t(std::clamp<i128>(v.hi + 1, 1, kInt64Max))};
  }
  const bool storage_given = s.storage_mode != Storage::kNull;
  const int64_t* storage_ptr = !storage_given ? nullptr : storage.empty() ? kNoValues : storage.data();
  a.facts = Facts(s.dims, s.dtype, stride_ptr, s.offset, s.format, storage_given ? storage : std::vector<int64_t>{},
                  s.null_data ? nullptr : &a);
  void* data = nullptr;
  if (!s.null_data) {
    if (s.handle == Handle::kOnBuffer0 && args_[0].buffer >= 0) {
      a.buffer = args_[0].buffer;
    } else {
      const ViewFacts& f = a.facts;
      i128 elems = std::max<i128>(f.storage, 0);
      if (!f.empty && f.lo >= 0 && f.hi < f.storage) elems = std::min(elems, f.hi + 1);
      elems = std::min(elems, kMaxAllocElems);
      buffers_.push_back(std::make_unique<GuardedBuffer>(size_t(elems) * std::max(ElemSize(s.dtype), 1), i + 1));
      a.buffer = int(buffers_.size() - 1);
    }
    data = buffers_[a.buffer]->data();
  }
  const bool null_arrays = (s.null_dims && !s.dims.empty()) || (!storage_given && !storage.empty());
  a.handle = CreateTensorRaw(s.null_dims ? nullptr : s.dims.empty() ? kNoValues : s.dims.data(), s.dims.size(),
                             s.dtype, stride_ptr, s.offset, s.format, storage_ptr, storage.size(), data);
  if (!a.handle) {
    CHECK(!ErrMsg().empty(), "aclCreateTensor refused argument %d without a message", i);
    CHECK(null_arrays || CreateMayRefuse(a.facts), "aclCreateTensor refused argument %d, a valid tensor: '%s'", i,
          ErrMsg().c_str());
    a.facts.null_handle = true;
    return;
  }
  a.owned = true;
  CHECK(!null_arrays, "aclCreateTensor accepted a null dims or storage array with a non-zero count (argument %d)", i);
  CheckGetters(a.handle, a.facts, storage, storage_given, i);
}

// The getters return what aclCreateTensor was given.
void Call::CheckGetters(const aclTensor* t, const ViewFacts& f, const std::vector<int64_t>& storage,
                        bool storage_given, int i) {
  auto read = [&](auto getter, std::vector<int64_t>* out) {
    int64_t* v = nullptr;
    uint64_t n = 0;
    CHECK(getter(t, &v, &n) == 0 && v, "a shape getter failed on argument %d: '%s'", i, ErrMsg().c_str());
    out->assign(v, v + n);
    delete[] v;
  };
  std::vector<int64_t> got;
  read(aclGetViewShape, &got);
  CHECK(got == f.dims, "aclGetViewShape differs from the dims given (argument %d)", i);
  read(aclGetViewStrides, &got);
  if (!f.strides_from_null)
    for (size_t k = 0; k < f.strides.size(); ++k)
      CHECK(got.size() == f.strides.size() && got[k] == f.strides[k], "aclGetViewStrides differs (argument %d)", i);
  read(aclGetStorageShape, &got);
  if (storage_given) CHECK(got == storage, "aclGetStorageShape differs (argument %d)", i);
  int64_t offset = 0;
  CHECK(aclGetViewOffset(t, &offset) == 0 && offset == f.offset, "aclGetViewOffset differs (argument %d)", i);
  aclDataType dt;
  aclFormat fmt;
  int32_t raw_dt = 0, raw_fmt = 0;
  CHECK(aclGetDataType(t, &dt) == 0 && aclGetFormat(t, &fmt) == 0, "aclGetDataType/aclGetFormat failed");
  std::memcpy(&raw_dt, &dt, sizeof dt);
  std::memcpy(&raw_fmt, &fmt, sizeof fmt);
  CHECK(!IsDTypeEnumerator(f.dtype) || raw_dt == f.dtype, "aclGetDataType differs (argument %d)", i);
  CHECK(!IsFormatEnumerator(f.format) || raw_fmt == f.format, "aclGetFormat differs (argument %d)", i);
}

void Call::MakeScalar() {
  if (p_.null_lambd) return;
  uint8_t bytes[16];
  lambd_known_ = ScalarBytes(p_.lambd_dtype, p_.lambd, bytes, &lambd_value_);
  lambd_ = CreateScalarRaw(bytes, p_.lambd_dtype);
  if (!lambd_) {
    CHECK(!ErrMsg().empty(), "aclCreateScalar refused without a message");
    CHECK(p_.lambd_dtype != kF32, "aclCreateScalar refused a FLOAT scalar: '%s'", ErrMsg().c_str());
  }
}

aclnnStatus Call::PhaseOne(uint64_t* ws, aclOpExecutor** ex) {
  aclTensor *a = args_[0].handle, *b = args_[1].handle, *o = args_[2].handle;
  uint64_t* w = p_.null_ws_size ? nullptr : ws;
  aclOpExecutor** e = p_.null_executor ? nullptr : ex;
  switch (p_.op) {
    case ApiOp::kSelu: return aclnnSeluBackwardGetWorkspaceSize(a, b, o, w, e);
    case ApiOp::kHardswish: return aclnnHardswishBackwardGetWorkspaceSize(a, b, o, w, e);
    case ApiOp::kGelu: return aclnnGeluBackwardGetWorkspaceSize(a, b, o, w, e);
    case ApiOp::kGeluV2: {
      const Approximate& ap = kApproximates[p_.approximate % std::size(kApproximates)];
      return aclnnGeluBackwardV2GetWorkspaceSize(a, b, ap.s, o, w, e);
    }
    case ApiOp::kSoftshrink: return aclnnSoftshrinkBackwardGetWorkspaceSize(a, b, lambd_, o, w, e);
    case ApiOp::kLogit: return aclnnLogitGradGetWorkspaceSize(a, b, p_.eps, o, w, e);
  }
  __builtin_unreachable();
}

aclnnStatus Call::PhaseTwo(void* ws, uint64_t size, aclOpExecutor* ex) {
  switch (p_.op) {
    case ApiOp::kSelu: return aclnnSeluBackward(ws, size, ex, stream_);
    case ApiOp::kHardswish: return aclnnHardswishBackward(ws, size, ex, stream_);
    case ApiOp::kGelu: return aclnnGeluBackward(ws, size, ex, stream_);
    case ApiOp::kGeluV2: return aclnnGeluBackwardV2(ws, size, ex, stream_);
    case ApiOp::kSoftshrink: return aclnnSoftshrinkBackward(ws, size, ex, stream_);
    case ApiOp::kLogit: return aclnnLogitGrad(ws, size, ex, stream_);
  }
  __builtin_unreachable();
}

// Phase two runs only small outputs whose views lie inside the real buffers
// (a declared storage may be larger than what the harness allocates).
bool Call::Runnable(uint64_t ws) const {
  if (ws > kMaxWorkspace || args_[2].facts.numel > kMaxRunElems) return false;
  for (const Arg& a : args_) {
    if (a.facts.empty) continue;
    if (a.buffer < 0) return false;
    const i128 elems = buffers_[a.buffer]->size() / std::max(ElemSize(a.facts.dtype), 1);
    if (a.facts.lo < 0 || a.facts.hi >= elems) return false;
  }
  return true;
}

void Call::Run() {
  for (int i = 0; i < 3; ++i) MakeTensor(i);
  if (p_.op == ApiOp::kSoftshrink) MakeScalar();
  if (p_.stream != StreamMode::kDefault) {
    CHECK(aclrtCreateStream(&stream_) == 0, "aclrtCreateStream failed: '%s'", ErrMsg().c_str());
    stream_live_ = true;
    if (p_.stream == StreamMode::kDestroyed) {  // phase two gets a handle that is no longer a stream
      CHECK(aclrtDestroyStream(stream_) == 0, "aclrtDestroyStream failed");
      stream_live_ = false;
    }
  }
  for (const auto& b : buffers_) snapshots_.push_back(b->Snapshot());

  CallFacts c;
  c.op = p_.op;
  for (int i = 0; i < 3; ++i) c.t[i] = args_[i].facts.null_handle ? nullptr : &args_[i].facts;
  c.null_ws_size = p_.null_ws_size;
  c.null_executor = p_.null_executor;
  c.approximate = kApproximates[p_.approximate % std::size(kApproximates)].cls;
  c.lambd_null = lambd_ == nullptr;
  c.lambd_dtype = p_.lambd_dtype;
  c.lambd = lambd_value_;
  c.lambd_value_known = lambd_known_;
  const Verdict v = Judge(c);

  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  const aclnnStatus st = PhaseOne(&ws, &ex);
  ++g_stats.inputs[int(p_.op)];
  CHECK(v.Allows(st), "phase one returned %d; the rules: %s; the library's message: '%s'", int(st),
        v.why.empty() ? "none broken, success expected" : v.why.c_str(), ErrMsg().c_str());
  if (st != 0) {
    CHECK(!ErrMsg().empty(), "phase one failed (%d) without a message", int(st));
    CheckWrites("a failed phase one", false);
    return;
  }
  CHECK(ex != nullptr, "phase one succeeded without an executor");
  ++g_stats.accepted[int(p_.op)];
  CheckWrites("phase one", false);
  if (!Runnable(ws)) {
    CHECK(aclDestroyAclOpExecutor(ex) == 0, "aclDestroyAclOpExecutor failed: '%s'", ErrMsg().c_str());
    return;
  }
  ++g_stats.ran[int(p_.op)];
  Launch(ex, ws);
}

void Call::Launch(aclOpExecutor* ex, uint64_t ws) {
  const uint64_t size = ws + (p_.ws == WsMode::kLarger ? 64 : 0);
  GuardedBuffer wsbuf(size_t(size), 7);
  const bool short_ws = p_.ws == WsMode::kShort && ws > 0, null_ws = p_.ws == WsMode::kNull && ws > 0;
  void* ptr = p_.ws == WsMode::kNull ? nullptr : wsbuf.data();
  const uint64_t passed = short_ws ? ws - 1 : size;
  const bool dead_stream = p_.stream == StreamMode::kDestroyed;

  if (dead_stream || short_ws || null_ws) {  // refused: the executor stays live
    const aclnnStatus st = PhaseTwo(ptr, passed, ex);
    CHECK((st == kInvalid && (dead_stream || short_ws)) || (st == kNullptr && null_ws),
          "phase two returned %d (dead stream %d, short workspace %d, null workspace %d): '%s'", int(st),
          dead_stream, short_ws, null_ws, ErrMsg().c_str());
    CHECK(!ErrMsg().empty(), "phase two failed (%d) without a message", int(st));
    CHECK(aclDestroyAclOpExecutor(ex) == 0, "the executor of a refused phase two: '%s'", ErrMsg().c_str());
    CheckWrites("a refused phase two", false);
    CHECK(wsbuf.GuardsIntact(), "workspace guard bytes changed");
    return;
  }
  switch (p_.runs) {
    case Runs::kDestroyUnrun:
      CHECK(aclDestroyAclOpExecutor(ex) == 0, "aclDestroyAclOpExecutor failed: '%s'", ErrMsg().c_str());
      CheckWrites("an executor destroyed unrun", false);
      return;
    case Runs::kOnce:
      CHECK(PhaseTwo(ptr, passed, ex) == 0, "phase two failed: '%s'", ErrMsg().c_str());
      break;
    case Runs::kRepeatableTwice:
      CHECK(aclSetAclOpExecutorRepeatable(ex) == 0, "aclSetAclOpExecutorRepeatable failed: '%s'", ErrMsg().c_str());
      CHECK(PhaseTwo(ptr, passed, ex) == 0, "phase two (1st of 2) failed: '%s'", ErrMsg().c_str());
      CHECK(PhaseTwo(ptr, passed, ex) == 0, "phase two (2nd of 2) failed: '%s'", ErrMsg().c_str());
      CHECK(aclDestroyAclOpExecutor(ex) == 0, "aclDestroyAclOpExecutor failed: '%s'", ErrMsg().c_str());
      break;
    case Runs::kOnceThenSpent: {
      CHECK(PhaseTwo(ptr, passed, ex) == 0, "phase two failed: '%s'", ErrMsg().c_str());
      const aclnnStatus st = PhaseTwo(ptr, passed, ex);  // a spent executor: refused, not run
      CHECK(st == kInvalid && !ErrMsg().empty(), "phase two of a spent executor returned %d: '%s'", int(st),
            ErrMsg().c_str());
      break;
    }
  }
  CHECK(aclrtSynchronizeStream(stream_) == 0, "aclrtSynchronizeStream reported: '%s'", ErrMsg().c_str());
  CheckWrites("phase two", true);
  CHECK(wsbuf.GuardsIntact(), "workspace guard bytes changed");
}

// No byte changes but the output view's (none unless output_may_change).
FUZZ_NO_COVERAGE void Call::CheckWrites(const char* when, bool output_may_change) {
  std::vector<uint8_t> writable;
  const Arg& out = args_[2];
  if (output_may_change && out.buffer >= 0) {
    writable.assign(buffers_[out.buffer]->size(), 0);
    const size_t es = size_t(ElemSize(out.facts.dtype));
    for (int64_t off : ElementOffsets(out.facts))
      for (size_t k = 0; k < es; ++k) writable[size_t(off) * es + k] = 1;
  }
  for (size_t b = 0; b < buffers_.size(); ++b) {
    const GuardedBuffer& buf = *buffers_[b];
    CHECK(buf.GuardsIntact(), "guard bytes of buffer %zu changed after %s", b, when);
    if (buf.size() == 0 || std::memcmp(buf.data(), snapshots_[b].data(), buf.size()) == 0) continue;
    for (size_t i = 0; i < buf.size(); ++i)
      if (buf.data()[i] != snapshots_[b][i] && !(int(b) == out.buffer && !writable.empty() && writable[i]))
        Finding("byte %zu of buffer %zu changed after %s (outside the output view)", i, b, when);
  }
}

}  // namespace
}  // namespace fuzzapi

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzzapi::Program p = fuzzapi::Decode(data, size);
  fuzzapi::g_program = &p;
  fuzzapi::Call(p).Run();
  fuzzapi::g_program = nullptr;
  return 0;
}
