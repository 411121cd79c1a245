// UNTESTED: built only with -DACTGRAD_ATLAS_CANN=ON against a CANN toolkit,
// which no machine of this project has. The "atlas-device" tuner backend: the
// same candidates as atlas-model, timed on the NPU with ACL events around the
// kernel launch (<<<>>> via the aclrtlaunch_* wrappers ascendc_library makes).
#include <memory>
#include <stdexcept>
#include <vector>

#include "acl/acl.h"
#include "aclrtlaunch_gelu_grad_custom.h"
#include "aclrtlaunch_hardswish_grad_custom.h"
#include "aclrtlaunch_logit_grad_custom.h"
#include "aclrtlaunch_selu_grad_custom.h"
#include "aclrtlaunch_softshrink_grad_custom.h"
#include "atlas_backend.h"

namespace actgrad::atlas {

namespace {
void Check(aclError e, const char* what) {
  if (e != ACL_SUCCESS) throw std::runtime_error(std::string("atlas-device: ") + what + " failed: " + std::to_string(e));
}
}  // namespace

class AtlasDeviceBackend : public AtlasModelBackend {
 public:
  AtlasDeviceBackend(SocInfo soc, int device) : AtlasModelBackend(std::move(soc)), device_(device) {
    Check(aclInit(nullptr), "aclInit");
    Check(aclrtSetDevice(device_), "aclrtSetDevice");
    Check(aclrtCreateStream(&stream_), "aclrtCreateStream");
  }
  ~AtlasDeviceBackend() override {
    aclrtDestroyStream(stream_);
    aclrtResetDevice(device_);
    aclFinalize();
  }
  std::string Name() const override { return "atlas-device"; }
  bool Deterministic() const override { return false; }

  std::vector<double> Measure(const tune::Cell& b, const Choice& c, int reps, double min_seconds) override {
    const AtlasVariant* v;
    AtlasTilingData t;
    std::string err;
    if (!CandidateTiling(soc(), b, c, OpParams{}, &v, &t, &err)) throw std::runtime_error(err);
    const size_t bytes = b.n * DTypeSize(b.dtype);
    void *g, *x, *y, *tiling;
    Check(aclrtMalloc(&g, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    Check(aclrtMalloc(&x, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    Check(aclrtMalloc(&y, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    Check(aclrtMalloc(&tiling, sizeof t, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
    Check(aclrtMemset(g, bytes, 0, bytes), "aclrtMemset");
    Check(aclrtMemset(x, bytes, 0, bytes), "aclrtMemset");
    Check(aclrtMemcpy(tiling, sizeof t, &t, sizeof t, ACL_MEMCPY_HOST_TO_DEVICE), "aclrtMemcpy");
    auto launch = [&] {
      switch (v->op) {
        case Op::kSeluBwd: ACLRT_LAUNCH_KERNEL(selu_grad_custom)(t.blockDim, stream_, g, x, y, nullptr, tiling); break;
        case Op::kHardswishBwd: ACLRT_LAUNCH_KERNEL(hardswish_grad_custom)(t.blockDim, stream_, g, x, y, nullptr, tiling); break;
        case Op::kGeluBwd: ACLRT_LAUNCH_KERNEL(gelu_grad_custom)(t.blockDim, stream_, g, x, y, nullptr, tiling); break;
        case Op::kSoftshrinkBwd: ACLRT_LAUNCH_KERNEL(softshrink_grad_custom)(t.blockDim, stream_, g, x, y, nullptr, tiling); break;
        case Op::kLogitGrad: ACLRT_LAUNCH_KERNEL(logit_grad_custom)(t.blockDim, stream_, x, g, y, nullptr, tiling); break;
      }
    };
    aclrtEvent start, stop;
    Check(aclrtCreateEvent(&start), "aclrtCreateEvent");
    Check(aclrtCreateEvent(&stop), "aclrtCreateEvent");
    launch();  // warm-up
    Check(aclrtSynchronizeStream(stream_), "aclrtSynchronizeStream");
    std::vector<double> out;
    for (int r = 0; r < std::max(1, reps); ++r) {
      int iters = 0;
      float ms = 0;
      Check(aclrtRecordEvent(start, stream_), "aclrtRecordEvent");
      do {  // at least min_seconds per sample
        launch();
        ++iters;
        Check(aclrtRecordEvent(stop, stream_), "aclrtRecordEvent");
        Check(aclrtSynchronizeEvent(stop), "aclrtSynchronizeEvent");
        Check(aclrtEventElapsedTime(&ms, start, stop), "aclrtEventElapsedTime");
      } while (ms * 1e-3 < min_seconds);
      out.push_back(double(ms) * 1e6 / iters);
    }
    aclrtDestroyEvent(start);
    aclrtDestroyEvent(stop);
    aclrtFree(g);
    aclrtFree(x);
    aclrtFree(y);
    aclrtFree(tiling);
    return out;
  }

 private:
  int device_;
  aclrtStream stream_ = nullptr;
};

std::unique_ptr<actgrad::tune::Backend> MakeAtlasDeviceBackend(const std::string& soc_json_path, int device) {
  SocInfo soc;
  std::string err;
  if (!LoadSoc(soc_json_path, &soc, &err)) throw std::runtime_error("atlas-device: " + err);
  return std::make_unique<AtlasDeviceBackend>(std::move(soc), device);
}

}  // namespace actgrad::atlas
