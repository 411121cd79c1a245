// The emulator's aclrtlaunch_<kernel> wrappers (atlas/launch): a launch is a
// task of its stream on the project's runtime. Its result is the emulator
// runner's, bit for bit; a bad stream or block dim is the launch's return
// code with nothing run; a kernel fault is the stream's next synchronize's
// ACL_ERROR_RT_AICORE_EXCEPTION; events around a launch bracket it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclrtlaunch_gelu_grad_custom.h"
#include "aclrtlaunch_hardswish_grad_custom.h"
#include "aclrtlaunch_logit_grad_custom.h"
#include "aclrtlaunch_selu_grad_custom.h"
#include "aclrtlaunch_softshrink_grad_custom.h"
#include "atlas_runner.h"
#include "host_tiling.h"
#include "soc.h"
#include "tools/inputs/op_inputs.h"

namespace {

using namespace actgrad;
using namespace actgrad::atlas;

constexpr uint8_t kPoison = 0xA5;

uint32_t LaunchOp(Op op, uint32_t dim, aclrtStream s, void* g, void* x, void* out, void* tiling) {
  switch (op) {
    case Op::kSeluBwd: return ACLRT_LAUNCH_KERNEL(selu_grad_custom)(dim, s, g, x, out, nullptr, tiling);
    case Op::kHardswishBwd: return ACLRT_LAUNCH_KERNEL(hardswish_grad_custom)(dim, s, g, x, out, nullptr, tiling);
    case Op::kGeluBwd: return ACLRT_LAUNCH_KERNEL(gelu_grad_custom)(dim, s, g, x, out, nullptr, tiling);
    case Op::kSoftshrinkBwd: return ACLRT_LAUNCH_KERNEL(softshrink_grad_custom)(dim, s, g, x, out, nullptr, tiling);
    case Op::kLogitGrad: return ACLRT_LAUNCH_KERNEL(logit_grad_custom)(dim, s, x, g, out, nullptr, tiling);
  }
  return ~0u;
}

// One launch's device buffers with the tuner's operands and a tiling of v.
class LaunchTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS); }
  void TearDown() override {
    Free();
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  }
  void Free() {
    for (void** p : {&g_, &x_, &out_, &tiling_}) {
      if (*p) EXPECT_EQ(aclrtFree(*p), ACL_SUCCESS);
      *p = nullptr;
    }
  }

  void Make(const AtlasVariant& v, uint64_t n, int block_dim = 0) {
    v_ = &v;
    std::string err;
    TilingOptions o;
    o.block_dim = block_dim;
    ASSERT_TRUE(MakeTiling(v, n, OpParams{}, LoadSocByName("ascend910b"), o, &t_, &err)) << err;
    bytes_ = n * DTypeSize(v.dtype);
    g_host_.resize(bytes_);
    x_host_.resize(bytes_);
    inputs::FillOperand(v.op, v.dtype, inputs::Role::kG, g_host_.data(), n);
    inputs::FillOperand(v.op, v.dtype, inputs::Role::kX, x_host_.data(), n);
    for (void** p : {&g_, &x_, &out_}) ASSERT_EQ(aclrtMalloc(p, bytes_, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMalloc(&tiling_, sizeof t_, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(g_, bytes_, g_host_.data(), bytes_, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemcpy(x_, bytes_, x_host_.data(), bytes_, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
    ASSERT_EQ(aclrtMemset(out_, bytes_, kPoison, bytes_), ACL_SUCCESS);
    UploadTiling();
  }
  void UploadTiling() {
    ASSERT_EQ(aclrtMemcpy(tiling_, sizeof t_, &t_, sizeof t_, ACL_MEMCPY_HOST_TO_DEVICE), ACL_SUCCESS);
  }
  uint32_t Launch(aclrtStream s) { return LaunchOp(v_->op, t_.blockDim, s, g_, x_, out_, tiling_); }
  std::vector<uint8_t> Out() const {
    std::vector<uint8_t> o(bytes_);
    EXPECT_EQ(aclrtMemcpy(o.data(), bytes_, out_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST), ACL_SUCCESS);
    return o;
  }
  bool OutUntouched() const {
    for (uint8_t b : Out())
      if (b != kPoison) return false;
    return true;
  }
  std::vector<uint8_t> RunnerResult() const {
    std::vector<uint8_t> o(bytes_, kPoison);
    RunOnEmulator(*v_, t_, g_host_.data(), x_host_.data(), o.data(), EmuOptions{});
    return o;
  }

  const AtlasVariant* v_ = nullptr;
  AtlasTilingData t_{};
  size_t bytes_ = 0;
  std::vector<uint8_t> g_host_, x_host_;
  void *g_ = nullptr, *x_ = nullptr, *out_ = nullptr, *tiling_ = nullptr;
};

std::string RecentError() { return aclGetRecentErrMsg(); }

// Every kernel through its wrapper (arguments in the kernel's own order)
// gives what the emulator runner gives for the same tiling and operands.
TEST_F(LaunchTest, ResultEqualsTheRunnersBitForBit) {
  const char* names[] = {"selu_bwd.f32.atlas.none.exact.db2", "hardswish_bwd.f16.atlas.upcast_f32.exact.db2",
                         "gelu_bwd.bf16.atlas.upcast_f32.erf.db2", "softshrink_bwd.f16.atlas.upcast_f32.exact.db1",
                         "logit_grad.f32.atlas.none.exact.db2", "selu_bwd.i8.atlas.upcast_f32.exact.db2"};
  aclrtStream s;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  for (const char* name : names) {
    SCOPED_TRACE(name);
    const AtlasVariant* v = FindAtlasVariant(name);
    ASSERT_NE(v, nullptr);
    // 3 cores, the last with a partial 32-byte block
    Make(*v, 3 * 4096 + 5, 3);
    if (HasFatalFailure()) return;
    ASSERT_EQ(Launch(s), ACL_SUCCESS) << RecentError();
    ASSERT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS) << RecentError();
    const auto got = Out(), want = RunnerResult();
    EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes_), 0);
    EXPECT_FALSE(OutUntouched());
    Free();
  }
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(LaunchTest, OnTheDefaultStream) {
  Make(*FindAtlasVariant("gelu_bwd.f32.atlas.none.erf.db2"), 5000);
  ASSERT_EQ(Launch(nullptr), ACL_SUCCESS) << RecentError();
  const auto got = Out(), want = RunnerResult();
  EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes_), 0);
}

TEST_F(LaunchTest, OnADestroyedStreamIsAnErrorAndRunsNothing) {
  Make(*FindAtlasVariant("gelu_bwd.f16.atlas.upcast_f32.erf.db2"), 4096);
  aclrtStream s;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(Launch(s), uint32_t(ACL_ERROR_INVALID_PARAM));
  EXPECT_NE(RecentError().find("aclrtlaunch_gelu_grad_custom: not a live stream"), std::string::npos) << RecentError();
  EXPECT_TRUE(OutUntouched());
}

TEST_F(LaunchTest, OnAStreamOfAnotherContextIsAnError) {
  Make(*FindAtlasVariant("selu_bwd.f32.atlas.none.exact.db2"), 4096);
  aclrtStream s;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);  // in the device's default context
  aclrtContext other;
  ASSERT_EQ(aclrtCreateContext(&other, 0), ACL_SUCCESS);  // now current
  EXPECT_EQ(Launch(s), uint32_t(ACL_ERROR_RT_STREAM_CONTEXT));
  EXPECT_NE(RecentError().find("aclrtlaunch_selu_grad_custom"), std::string::npos) << RecentError();
  EXPECT_TRUE(OutUntouched());
  EXPECT_EQ(aclrtDestroyContext(other), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);  // the default context current again
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
}

TEST_F(LaunchTest, BlockDimOutsideTheRangeIsAnError) {
  Make(*FindAtlasVariant("hardswish_bwd.f32.atlas.none.exact.db2"), 4096);
  for (uint32_t dim : {0u, 65536u}) {
    EXPECT_EQ(LaunchOp(v_->op, dim, nullptr, g_, x_, out_, tiling_), uint32_t(ACL_ERROR_RT_PARAM_INVALID));
    EXPECT_NE(RecentError().find("blockDim " + std::to_string(dim) + " is outside [1, 65535]"), std::string::npos)
        << RecentError();
  }
  EXPECT_TRUE(OutUntouched());
}

// A fault inside the kernel is asynchronous, as on a device: the launch
// succeeds, the stream's next synchronize reports it once.
TEST_F(LaunchTest, AKernelFaultIsReportedAtTheNextSynchronize) {
  Make(*FindAtlasVariant("softshrink_bwd.f32.atlas.none.exact.db2"), 4096);
  t_.magic = 0;
  UploadTiling();
  aclrtStream s;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_EQ(Launch(s), uint32_t(ACL_SUCCESS));
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  const std::string msg = RecentError();
  EXPECT_NE(msg.find("aclrtlaunch_softshrink_grad_custom: AI core exception (emulator)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ATLS magic"), std::string::npos) << msg;
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS);
  EXPECT_TRUE(OutUntouched());
  // on the default stream, which keeps no deferred error here, the launch says it
  EXPECT_EQ(Launch(nullptr), uint32_t(ACL_ERROR_RT_AICORE_EXCEPTION));
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(LaunchTest, ANullGmAddressIsAKernelFault) {
  Make(*FindAtlasVariant("logit_grad.f16.atlas.upcast_f32.exact.db2"), 4096);
  aclrtStream s;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_EQ(ACLRT_LAUNCH_KERNEL(logit_grad_custom)(t_.blockDim, s, x_, nullptr, out_, nullptr, tiling_), 0u);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_NE(RecentError().find("the GM address of 'dy' is null"), std::string::npos) << RecentError();
  EXPECT_EQ(ACLRT_LAUNCH_KERNEL(logit_grad_custom)(t_.blockDim, s, x_, g_, out_, nullptr, nullptr), 0u);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_ERROR_RT_AICORE_EXCEPTION);
  EXPECT_NE(RecentError().find("the GM address of 'tiling' is null"), std::string::npos) << RecentError();
  EXPECT_TRUE(OutUntouched());
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

TEST_F(LaunchTest, EventsAroundALaunchBracketIt) {
  Make(*FindAtlasVariant("gelu_bwd.f16.atlas.upcast_f32.erf.db2"), 16384);
  aclrtStream s;
  aclrtEvent start, stop;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&start), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&stop), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(start, s), ACL_SUCCESS);
  ASSERT_EQ(Launch(s), ACL_SUCCESS) << RecentError();
  ASSERT_EQ(aclrtRecordEvent(stop, s), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeEvent(stop), ACL_SUCCESS);
  aclrtEventRecordedStatus status;
  ASSERT_EQ(aclrtQueryEventStatus(stop, &status), ACL_SUCCESS);
  EXPECT_EQ(status, ACL_EVENT_RECORDED_STATUS_COMPLETE);
  float ms = -1;
  ASSERT_EQ(aclrtEventElapsedTime(&ms, start, stop), ACL_SUCCESS) << RecentError();
  EXPECT_GE(ms, 0.0f);
  // the kernel had run when the stop event was reached
  EXPECT_FALSE(OutUntouched());
  EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(stop), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

}  // namespace
