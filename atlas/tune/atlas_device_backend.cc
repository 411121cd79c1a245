// The "atlas-device" tuner backend: the atlas-model candidates, each timed
// with ACL events around its kernel launches (ACLRT_LAUNCH_KERNEL, the
// aclrtlaunch_* wrappers of ascendc_library). Built in every build:
//  - with CANN (ACTGRAD_HAVE_CANN, -DACTGRAD_ATLAS_CANN=ON) against
//    libascendcl, the launches run on NPU `device`;
//  - without it against the project's runtime, the launches run the same
//    kernels on the AscendC emulator (atlas/launch): the times are the
//    emulator's host time, so the backend is "atlas-device(emulator)" and
//    actgrad-atlas-gentable refuses its tables.
// The inputs are the tuner's realistic operands (tools/inputs), and the first
// launch of each variant in a cell is checked against the double reference
// under the spec's accuracy rule, so a wrong argument order or a kernel that
// computes nonsense is a skipped cell with a reason, not a fast table entry.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclrtlaunch_gelu_grad_custom.h"
#include "aclrtlaunch_hardswish_grad_custom.h"
#include "aclrtlaunch_logit_grad_custom.h"
#include "aclrtlaunch_selu_grad_custom.h"
#include "aclrtlaunch_softshrink_grad_custom.h"
#include "actgrad/half.h"
#include "atlas_backend.h"
#include "reference/accuracy_rule.h"
#include "reference/reference.h"
#include "tools/inputs/op_inputs.h"

namespace actgrad::atlas {

namespace {

#ifdef ACTGRAD_HAVE_CANN
constexpr const char* kBackendName = "atlas-device";
constexpr const char* kTiming = "device";
#else
constexpr const char* kBackendName = "atlas-device(emulator)";
constexpr const char* kTiming = "emulator";
#endif

// Elements of a cell's output checked against the reference (a prefix: the
// check is once per variant and cell, and cheap next to the timing).
constexpr size_t kCheckElements = size_t{1} << 16;

// "atlas-device: aclrtMalloc failed: error 207001 (out of memory ...)"
[[noreturn]] void ThrowAcl(const std::string& call, int code) {
  const char* msg = aclGetRecentErrMsg();
  throw std::runtime_error("atlas-device: " + call + " failed: error " + std::to_string(code) +
                           (msg && *msg ? std::string(" (") + msg + ")" : std::string()));
}
void Check(aclError e, const char* call) {
  if (e != ACL_SUCCESS) ThrowAcl(call, e);
}

// Device memory, freed on every path out.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) {
    Check(aclrtMalloc(&p_, std::max<size_t>(bytes, 1), ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~DeviceBuffer() {
    if (p_) aclrtFree(p_);
  }
  void* get() const { return p_; }

 private:
  void* p_ = nullptr;
};

class Event {
 public:
  Event() { Check(aclrtCreateEvent(&e_), "aclrtCreateEvent"); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  ~Event() { aclrtDestroyEvent(e_); }
  aclrtEvent get() const { return e_; }

 private:
  aclrtEvent e_ = nullptr;
};

// aclInit and the device, released in reverse order (also when a later step
// of the backend's construction throws). A process that already ran aclInit
// keeps its initialization.
class AclDevice {
 public:
  explicit AclDevice(int device) : device_(device) {
    const aclError e = aclInit(nullptr);
    if (e != ACL_SUCCESS && e != ACL_ERROR_REPEAT_INITIALIZE) ThrowAcl("aclInit", e);
    owns_init_ = e == ACL_SUCCESS;
    if (const aclError s = aclrtSetDevice(device); s != ACL_SUCCESS) {
      if (owns_init_) aclFinalize();
      ThrowAcl("aclrtSetDevice(" + std::to_string(device) + ")", s);
    }
  }
  AclDevice(const AclDevice&) = delete;
  AclDevice& operator=(const AclDevice&) = delete;
  ~AclDevice() {
    aclrtResetDevice(device_);
    if (owns_init_) aclFinalize();
  }
  int id() const { return device_; }

 private:
  int device_;
  bool owns_init_ = false;
};

class Stream {
 public:
  Stream() { Check(aclrtCreateStream(&s_), "aclrtCreateStream"); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { aclrtDestroyStream(s_); }
  aclrtStream get() const { return s_; }

 private:
  aclrtStream s_ = nullptr;
};

// Element i of a storage buffer of dtype t, as a double.
double Decode(DType t, const std::vector<uint8_t>& buf, size_t i) {
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, &buf[i * 4], 4);
      return f;
    }
    case DType::kF16:
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, &buf[i * 2], 2);
      return t == DType::kF16 ? HalfToFloat(h) : BF16ToFloat(h);
    }
    case DType::kI32: {
      int32_t v;
      std::memcpy(&v, &buf[i * 4], 4);
      return v;
    }
    case DType::kI8: return double(int8_t(buf[i]));
  }
  return 0;
}

}  // namespace

class AtlasDeviceBackend final : public AtlasModelBackend {
 public:
  AtlasDeviceBackend(SocInfo soc, int device) : AtlasModelBackend(std::move(soc)), device_(device) {}
  std::string Name() const override { return kBackendName; }
  bool Deterministic() const override { return false; }

  void Prepare(const tune::Cell& cell) override {
    if (prepared_ && cell.op == cell_.op && cell.dtype == cell_.dtype && cell.n == cell_.n) return;
    prepared_ = false;
    checked_.clear();
    iters_.clear();
    const size_t bytes = cell.n * DTypeSize(cell.dtype);
    std::vector<uint8_t> g(bytes), x(bytes);
    inputs::FillOperand(cell.op, cell.dtype, inputs::Role::kG, g.data(), cell.n);
    inputs::FillOperand(cell.op, cell.dtype, inputs::Role::kX, x.data(), cell.n);
    g_ = DeviceBuffer();  // the last cell's memory goes first
    x_ = DeviceBuffer();
    out_ = DeviceBuffer();
    g_ = DeviceBuffer(bytes);
    x_ = DeviceBuffer(bytes);
    out_ = DeviceBuffer(bytes);
    if (!tiling_.get()) tiling_ = DeviceBuffer(sizeof(AtlasTilingData));
    Check(aclrtMemcpy(g_.get(), bytes, g.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy(g)");
    Check(aclrtMemcpy(x_.get(), bytes, x.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy(x)");
    const size_t keep = std::min<size_t>(cell.n, kCheckElements) * DTypeSize(cell.dtype);
    g.resize(keep);
    x.resize(keep);
    g_host_ = std::move(g);
    x_host_ = std::move(x);
    cell_ = cell;
    prepared_ = true;
  }

  std::vector<double> Measure(const tune::Cell& cell, const Choice& c, int reps, double min_seconds) override {
    const AtlasVariant* v;
    AtlasTilingData t;
    std::string err;
    if (!CandidateTiling(soc(), cell, c, OpParams{}, &v, &t, &err)) throw std::runtime_error("atlas-device: " + err);
    Prepare(cell);
    Check(aclrtMemcpy(tiling_.get(), sizeof t, &t, sizeof t, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy(tiling)");
    const aclrtStream s = stream_.get();
    Launch(*v, t.blockDim);  // warm-up, and the result check
    Check(aclrtSynchronizeStream(s), "aclrtSynchronizeStream");
    if (checked_.insert(v->name).second) CheckResult(*v);

    Event start, stop;
    // One sample: `iters` launches between the events, sized once per
    // candidate and cell so that a sample spans min_seconds (no synchronize
    // between the launches).
    int& iters = iters_[v->name + " " + std::to_string(t.blockDim) + " " + std::to_string(t.tileLength)];
    auto sample = [&] {
      Check(aclrtRecordEvent(start.get(), s), "aclrtRecordEvent");
      for (int i = 0; i < iters; ++i) Launch(*v, t.blockDim);
      Check(aclrtRecordEvent(stop.get(), s), "aclrtRecordEvent");
      Check(aclrtSynchronizeEvent(stop.get()), "aclrtSynchronizeEvent");
      Check(aclrtSynchronizeStream(s), "aclrtSynchronizeStream");  // a kernel fault is reported here
      float ms = 0;
      Check(aclrtEventElapsedTime(&ms, start.get(), stop.get()), "aclrtEventElapsedTime");
      return double(ms) * 1e-3;
    };
    if (iters == 0) {
      iters = 1;
      for (double sec = sample(); sec < min_seconds && iters < (1 << 20);) {
        iters = int(std::min<double>(1 << 20, iters * std::clamp(1.2 * min_seconds / std::max(sec, 1e-7), 2.0, 100.0)));
        sec = sample();
      }
    }
    std::vector<double> out;
    for (int r = 0; r < std::max(1, reps); ++r) out.push_back(sample() * 1e9 / iters);
    return out;
  }

  nlohmann::json Provenance() override {
    nlohmann::json p = AtlasModelBackend::Provenance();
    p.erase("model");
    p.erase("parameters");
    p["timing"] = kTiming;
    p["clock"] = "ACL events around the launches (aclrtEventElapsedTime)";
    p["device"] = device_.id();
#ifdef ACTGRAD_HAVE_CANN
    if (const char* name = aclrtGetSocName()) p["device_soc"] = name;
#else
    p["note"] =
        "emulator times: the AscendC emulator's host time of the kernels, not an NPU's; not a table to compile in "
        "(actgrad-atlas-gentable refuses it)";
#endif
    return p;
  }

 private:
  void Launch(const AtlasVariant& v, uint32_t block_dim) {
    void *g = g_.get(), *x = x_.get(), *y = out_.get(), *tiling = tiling_.get();
    const aclrtStream s = stream_.get();
    uint32_t rc = 0;
    switch (v.op) {  // the kernels' own argument orders (atlas/kernels/*_custom.cpp)
      case Op::kSeluBwd: rc = ACLRT_LAUNCH_KERNEL(selu_grad_custom)(block_dim, s, g, x, y, nullptr, tiling); break;
      case Op::kHardswishBwd:
        rc = ACLRT_LAUNCH_KERNEL(hardswish_grad_custom)(block_dim, s, g, x, y, nullptr, tiling);
        break;
      case Op::kGeluBwd: rc = ACLRT_LAUNCH_KERNEL(gelu_grad_custom)(block_dim, s, g, x, y, nullptr, tiling); break;
      case Op::kSoftshrinkBwd:
        rc = ACLRT_LAUNCH_KERNEL(softshrink_grad_custom)(block_dim, s, g, x, y, nullptr, tiling);
        break;
      case Op::kLogitGrad:  // x first, as aclnnLogitGrad
        rc = ACLRT_LAUNCH_KERNEL(logit_grad_custom)(block_dim, s, x, g, y, nullptr, tiling);
        break;
    }
    if (rc != 0) ThrowAcl(std::string("aclrtlaunch_") + v.kernel, int(rc));
  }

  // The output's first kCheckElements against the double reference: the
  // spec's accuracy rule for floats, exact for SELU's integers.
  void CheckResult(const AtlasVariant& v) {
    const size_t n = g_host_.size() / DTypeSize(v.dtype);
    std::vector<uint8_t> out(g_host_.size());
    Check(aclrtMemcpy(out.data(), out.size(), out_.get(), out.size(), ACL_MEMCPY_DEVICE_TO_HOST), "aclrtMemcpy(out)");
    OpParams p;
    p.gelu_approx = v.approx;
    const auto fail = [&](const std::string& what) {
      throw std::runtime_error("atlas-device: " + v.name + " computes wrong results: " + what);
    };
    if (v.dtype == DType::kI32 || v.dtype == DType::kI8) {
      for (size_t i = 0; i < n; ++i) {
        const double g = Decode(v.dtype, g_host_, i), y = Decode(v.dtype, x_host_, i);
        const double want = v.dtype == DType::kI32 ? double(ref::SeluBwdInt<int32_t>(int32_t(g), int32_t(y)))
                                                   : double(ref::SeluBwdInt<int8_t>(int8_t(g), int8_t(y)));
        if (Decode(v.dtype, out, i) != want)
          fail("element " + std::to_string(i) + ": g=" + std::to_string(g) + " y=" + std::to_string(y) + " gives " +
               std::to_string(Decode(v.dtype, out, i)) + ", want " + std::to_string(want));
      }
      return;
    }
    AccuracyChecker chk(v.dtype);
    for (size_t i = 0; i < n; ++i) {
      const double g = Decode(v.dtype, g_host_, i), x = Decode(v.dtype, x_host_, i);
      chk.Add(Decode(v.dtype, out, i), ref::Reference(v.op, g, x, p), g, x);
    }
    const AccuracyReport r = chk.Report();
    if (!r.pass) fail(r.first_failure + " (share under the threshold " + std::to_string(r.Share()) + ")");
  }

  AclDevice device_;
  Stream stream_;
  DeviceBuffer g_, x_, out_, tiling_;
  std::vector<uint8_t> g_host_, x_host_;  // the checked prefix of the inputs
  tune::Cell cell_{};
  bool prepared_ = false;
  std::set<std::string> checked_;  // variants whose result was checked in this cell
  std::map<std::string, int> iters_;  // launches per sample, per candidate of this cell
};

std::unique_ptr<actgrad::tune::Backend> MakeAtlasDeviceBackend(const std::string& soc_json_path, int device) {
  SocInfo soc;
  std::string err;
  if (!LoadSoc(soc_json_path, &soc, &err)) throw std::runtime_error("atlas-device: " + err);
  return std::make_unique<AtlasDeviceBackend>(std::move(soc), device);
}

}  // namespace actgrad::atlas
