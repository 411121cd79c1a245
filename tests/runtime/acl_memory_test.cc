// aclrtMemsetAsync (bytes set, memory past count untouched, every refusal
// writes nothing), aclrtSynchronizeStreamWithTimeout and aclrtGetMemInfo.
#include <sys/sysinfo.h>

#include <climits>
#include <cstdint>
#include <vector>

#include "acl_test_util.h"
#include "runtime/stream.h"  // RecordStreamError: a task that fails after its enqueue returned

namespace acltest {
namespace {

class Memory : public AclRuntime {
 protected:
  void SetUp() override {
    AclRuntime::SetUp();
    ASSERT_EQ(aclrtCreateStream(&s_), ACL_SUCCESS) << ErrMsg();
    ASSERT_EQ(aclrtMalloc(&dev_, kBytes, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    Fill(0x11);
  }
  void TearDown() override {
    EXPECT_EQ(aclrtFree(dev_), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyStream(s_), ACL_SUCCESS);
    AclRuntime::TearDown();
  }
  static constexpr size_t kBytes = 256;
  uint8_t* Bytes() { return static_cast<uint8_t*>(dev_); }
  void Fill(uint8_t v) { ASSERT_EQ(aclrtMemset(dev_, kBytes, v, kBytes), ACL_SUCCESS); }
  // Every byte of [from, to) is v.
  ::testing::AssertionResult All(size_t from, size_t to, uint8_t v) {
    for (size_t i = from; i < to; ++i)
      if (Bytes()[i] != v) return ::testing::AssertionFailure() << "byte " << i << " is " << int(Bytes()[i]);
    return ::testing::AssertionSuccess();
  }
  aclrtStream s_ = nullptr;
  void* dev_ = nullptr;
};

TEST_F(Memory, MemsetAsyncSetsCountBytesAndNothingPast) {
  ASSERT_EQ(aclrtMemsetAsync(dev_, kBytes, 0x5a, 100, s_), ACL_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtSynchronizeStream(s_), ACL_SUCCESS);
  EXPECT_TRUE(All(0, 100, 0x5a));
  EXPECT_TRUE(All(100, kBytes, 0x11)) << "past count";
  ASSERT_EQ(aclrtMemsetAsync(Bytes() + 7, kBytes - 7, 0x1234, 9, s_), ACL_SUCCESS) << "an inner range";
  EXPECT_TRUE(All(0, 7, 0x5a));
  EXPECT_TRUE(All(7, 16, 0x34)) << "the value is taken as a byte";
  EXPECT_TRUE(All(16, 100, 0x5a));
  ASSERT_EQ(aclrtMemsetAsync(dev_, kBytes, -1, kBytes, nullptr), ACL_SUCCESS) << "the default stream";
  EXPECT_TRUE(All(0, kBytes, 0xff));
  EXPECT_EQ(aclrtMemsetAsync(nullptr, 0, 0, 0, s_), ACL_SUCCESS) << "nothing to set";
  EXPECT_EQ(aclrtMemsetAsync(dev_, 0, 0, 0, s_), ACL_SUCCESS);
  EXPECT_TRUE(All(0, kBytes, 0xff));
  // Host memory too (CANN takes either).
  std::vector<uint8_t> host(64, 0);
  ASSERT_EQ(aclrtMemsetAsync(host.data(), host.size(), 9, 63, s_), ACL_SUCCESS);
  EXPECT_EQ(host[62], 9);
  EXPECT_EQ(host[63], 0);
}

TEST_F(Memory, MemsetAsyncRefusalsWriteNothing) {
  EXPECT_ACL_ERROR(aclrtMemsetAsync(dev_, 50, 0x22, 51, s_), ACL_ERROR_INVALID_PARAM, "count 51 exceeds maxCount 50");
  EXPECT_ACL_ERROR(aclrtMemsetAsync(nullptr, 10, 0x22, 10, s_), ACL_ERROR_INVALID_PARAM,
                   "aclrtMemsetAsync: devPtr is null");
  EXPECT_ACL_ERROR(aclrtMemsetAsync(dev_, kBytes, 0x22, kBytes, Garbage()), ACL_ERROR_INVALID_PARAM,
                   "aclrtMemsetAsync: not a live stream");
  aclrtStream gone = nullptr;
  ASSERT_EQ(aclrtCreateStream(&gone), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(gone), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtMemsetAsync(dev_, kBytes, 0x22, kBytes, gone), ACL_ERROR_INVALID_PARAM, "not a live stream");
  aclrtEvent e = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtMemsetAsync(dev_, kBytes, 0x22, kBytes, e), ACL_ERROR_INVALID_PARAM, "not a live stream");
  EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  aclrtContext dflt = nullptr, other = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&dflt), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateContext(&other, 0), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtMemsetAsync(dev_, kBytes, 0x22, kBytes, s_), ACL_ERROR_RT_STREAM_CONTEXT,
                   "another context");
  EXPECT_ACL_ERROR(aclrtMemcpyAsync(dev_, kBytes, dev_, 1, ACL_MEMCPY_DEVICE_TO_DEVICE, s_),
                   ACL_ERROR_RT_STREAM_CONTEXT, "aclrtMemcpyAsync");
  ASSERT_EQ(aclrtDestroyContext(other), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetCurrentContext(dflt), ACL_SUCCESS);
  EXPECT_TRUE(All(0, kBytes, 0x11));
}

TEST_F(Memory, SynchronizeStreamWithTimeout) {
  for (int32_t t : {-1, 1, 1000, INT32_MAX}) {
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s_, t), ACL_SUCCESS) << t << ": " << ErrMsg();
    EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(nullptr, t), ACL_SUCCESS) << "the default stream";
  }
  for (int32_t t : {0, -2, INT32_MIN})
    EXPECT_ACL_ERROR(aclrtSynchronizeStreamWithTimeout(s_, t), ACL_ERROR_RT_PARAM_INVALID,
                     "timeout " + std::to_string(t) + " is neither -1");
  EXPECT_ACL_ERROR(aclrtSynchronizeStreamWithTimeout(Garbage(), -1), ACL_ERROR_INVALID_PARAM,
                   "aclrtSynchronizeStreamWithTimeout: not a live stream");
  // A task that failed after its enqueue returned: reported once.
  actgrad::rt::RecordStreamError(s_, ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, "vector core fault");
  EXPECT_ACL_ERROR(aclrtSynchronizeStreamWithTimeout(s_, 50), ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, "vector core fault");
  EXPECT_EQ(aclrtSynchronizeStreamWithTimeout(s_, 50), ACL_SUCCESS);
}

TEST_F(Memory, GetMemInfoReportsTheHostsMemory) {
  struct sysinfo si;
  ASSERT_EQ(sysinfo(&si), 0);
  const size_t host_total = size_t(si.totalram) * si.mem_unit;
  for (int a = ACL_DDR_MEM; a <= ACL_MEM_P2P_HUGE1G; ++a) {
    size_t free = 0, total = 0;
    ASSERT_EQ(aclrtGetMemInfo(static_cast<aclrtMemAttr>(a), &free, &total), ACL_SUCCESS) << a << ": " << ErrMsg();
    EXPECT_EQ(total, host_total) << "attribute " << a << ": MemTotal is sysinfo's total RAM";
    EXPECT_GT(free, 0u);
    EXPECT_LE(free, total);
  }
  size_t free = 7, total = 7;
  EXPECT_ACL_ERROR(aclrtGetMemInfo(static_cast<aclrtMemAttr>(18), &free, &total), ACL_ERROR_RT_PARAM_INVALID,
                   "unknown memory attribute 18");
  EXPECT_ACL_ERROR(aclrtGetMemInfo(static_cast<aclrtMemAttr>(-1), &free, &total), ACL_ERROR_RT_PARAM_INVALID,
                   "unknown memory attribute -1");
  EXPECT_EQ(free, 7u);
  EXPECT_EQ(total, 7u);
  EXPECT_ACL_ERROR(aclrtGetMemInfo(ACL_HBM_MEM, nullptr, &total), ACL_ERROR_INVALID_PARAM, "free is null");
  EXPECT_ACL_ERROR(aclrtGetMemInfo(ACL_HBM_MEM, &free, nullptr), ACL_ERROR_INVALID_PARAM, "total is null");
}

}  // namespace
}  // namespace acltest
