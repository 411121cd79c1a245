// Contexts: the default context of aclrtSetDevice, aclrtCreateContext /
// DestroyContext / SetCurrentContext / GetCurrentContext, per-thread current
// contexts, streams and events that belong to their context.
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "acl_test_util.h"

namespace acltest {
namespace {

// On a thread of its own: no aclrtSetDevice has run there.
template <class F>
void OnNewThread(F f) {
  std::thread t(f);
  t.join();
}

TEST_F(AclRuntime, SetDeviceMakesTheDefaultContextCurrentOnItsThread) {
  aclrtContext main_ctx = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&main_ctx), ACL_SUCCESS) << ErrMsg();
  ASSERT_NE(main_ctx, nullptr);
  OnNewThread([&] {
    aclrtContext c = nullptr;
    EXPECT_ACL_ERROR(aclrtGetCurrentContext(&c), ACL_ERROR_RT_CONTEXT_NULL, "no current context");
    EXPECT_EQ(c, nullptr);
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtGetCurrentContext(&c), ACL_SUCCESS);
    EXPECT_EQ(c, main_ctx) << "one default context per device";
    int32_t dev = -1;
    EXPECT_EQ(aclrtGetDevice(&dev), ACL_SUCCESS);
    EXPECT_EQ(dev, 0);
    EXPECT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
    EXPECT_ACL_ERROR(aclrtGetCurrentContext(&c), ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext");
  });
  aclrtContext again = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&again), ACL_SUCCESS) << "another thread's reset left this thread's context";
  EXPECT_EQ(again, main_ctx);
}

TEST_F(AclRuntime, CreateContextMakesItCurrentAndSetCurrentContextSwitches) {
  aclrtContext dflt = nullptr, c1 = nullptr, c2 = nullptr, cur = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&dflt), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateContext(&c1, 0), ACL_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, c1);
  EXPECT_NE(c1, dflt);
  ASSERT_EQ(aclrtCreateContext(&c2, 0), ACL_SUCCESS);
  EXPECT_NE(c2, c1);
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, c2);
  ASSERT_EQ(aclrtSetCurrentContext(c1), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, c1);
  ASSERT_EQ(aclrtSetCurrentContext(dflt), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, dflt);
  EXPECT_EQ(aclrtDestroyContext(c1), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(c2), ACL_SUCCESS);
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, dflt) << "destroying other contexts leaves the current one";
}

TEST_F(AclRuntime, ContextErrors) {
  aclrtContext c = nullptr, dflt = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&dflt), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtCreateContext(nullptr, 0), ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is null");
  EXPECT_ACL_ERROR(aclrtCreateContext(&c, 1), ACL_ERROR_RT_INVALID_DEVICEID, "device 1 does not exist");
  EXPECT_ACL_ERROR(aclrtCreateContext(&c, -1), ACL_ERROR_RT_INVALID_DEVICEID, "device -1 does not exist");
  EXPECT_EQ(c, nullptr) << "a failed create wrote its output";
  EXPECT_ACL_ERROR(aclrtDestroyContext(nullptr), ACL_ERROR_INVALID_PARAM, "context is null");
  EXPECT_ACL_ERROR(aclrtDestroyContext(dflt), ACL_ERROR_INVALID_PARAM, "aclrtResetDevice");
  EXPECT_ACL_ERROR(aclrtDestroyContext(Garbage()), ACL_ERROR_INVALID_PARAM, "not a live context");
  EXPECT_ACL_ERROR(aclrtSetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: context is null");
  EXPECT_ACL_ERROR(aclrtSetCurrentContext(Garbage()), ACL_ERROR_INVALID_PARAM, "not a live context");
  EXPECT_ACL_ERROR(aclrtGetCurrentContext(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is null");
  aclrtStream s = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtSetCurrentContext(s), ACL_ERROR_INVALID_PARAM, "not a live context") << "a stream is no context";
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);

  ASSERT_EQ(aclrtCreateContext(&c, 0), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyContext(c), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtDestroyContext(c), ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: not a live context");
  EXPECT_ACL_ERROR(aclrtSetCurrentContext(c), ACL_ERROR_INVALID_PARAM, "not a live context");
  aclrtContext cur = nullptr;
  EXPECT_ACL_ERROR(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL, "no current context")
      << "the destroyed context was current";
  EXPECT_EQ(cur, nullptr);
  EXPECT_EQ(aclrtSetCurrentContext(dflt), ACL_SUCCESS);
}

TEST_F(AclRuntime, DestroyContextDestroysItsStreamsAndEvents) {
  aclrtContext dflt = nullptr, c = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&dflt), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateContext(&c, 0), ACL_SUCCESS);
  aclrtStream s = nullptr;
  aclrtEvent e = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(e, s), ACL_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtDestroyContext(c), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetCurrentContext(dflt), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM, "not a live stream");
  EXPECT_ACL_ERROR(aclrtDestroyStream(s), ACL_ERROR_INVALID_PARAM, "not a live stream");
  EXPECT_ACL_ERROR(aclrtSynchronizeEvent(e), ACL_ERROR_INVALID_PARAM, "not a live event");
  EXPECT_ACL_ERROR(aclrtDestroyEvent(e), ACL_ERROR_INVALID_PARAM, "not a live event");
}

TEST_F(AclRuntime, AStreamIsUsedInItsOwnContext) {
  aclrtContext a = nullptr, b = nullptr;
  ASSERT_EQ(aclrtCreateContext(&a, 0), ACL_SUCCESS);
  aclrtStream sa = nullptr;
  aclrtEvent ea = nullptr;
  ASSERT_EQ(aclrtCreateStream(&sa), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&ea), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateContext(&b, 0), ACL_SUCCESS);  // now current
  aclrtEvent eb = nullptr;
  ASSERT_EQ(aclrtCreateEvent(&eb), ACL_SUCCESS);
  uint8_t buf[64] = {};
  EXPECT_ACL_ERROR(aclrtMemsetAsync(buf, sizeof buf, 0x7f, sizeof buf, sa), ACL_ERROR_RT_STREAM_CONTEXT,
                   "aclrtMemsetAsync: the stream belongs to another context");
  for (uint8_t v : buf) ASSERT_EQ(v, 0) << "a refused memset wrote";
  EXPECT_ACL_ERROR(aclrtRecordEvent(ea, sa), ACL_ERROR_RT_STREAM_CONTEXT, "aclrtRecordEvent");
  EXPECT_ACL_ERROR(aclrtStreamWaitEvent(sa, eb), ACL_ERROR_RT_STREAM_CONTEXT, "aclrtStreamWaitEvent");
  EXPECT_ACL_ERROR(aclrtDestroyStream(sa), ACL_ERROR_RT_STREAM_CONTEXT, "aclrtDestroyStream");
  EXPECT_EQ(aclrtSynchronizeStream(sa), ACL_SUCCESS) << "synchronize takes a stream of any context, as CANN";
  ASSERT_EQ(aclrtSetCurrentContext(a), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtRecordEvent(eb, sa), ACL_ERROR_RT_STREAM_CONTEXT,
                   "the event and the stream belong to different contexts");
  EXPECT_ACL_ERROR(aclrtRecordEvent(eb, nullptr), ACL_ERROR_RT_STREAM_CONTEXT, "different contexts")
      << "the default stream of a is a's too";
  EXPECT_EQ(aclrtRecordEvent(ea, sa), ACL_SUCCESS) << ErrMsg();
  EXPECT_EQ(aclrtRecordEvent(ea, nullptr), ACL_SUCCESS) << ErrMsg();
  EXPECT_EQ(aclrtMemsetAsync(buf, sizeof buf, 0x7f, sizeof buf, sa), ACL_SUCCESS);
  EXPECT_EQ(buf[63], 0x7f);
  EXPECT_EQ(aclrtDestroyStream(sa), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(eb), ACL_SUCCESS) << "destroy takes an event of any context";
  EXPECT_EQ(aclrtDestroyContext(b), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyContext(a), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtDestroyEvent(ea), ACL_ERROR_INVALID_PARAM, "not a live event") << "a's event went with a";
}

TEST_F(AclRuntime, TheCurrentContextIsPerThread) {
  aclrtContext c1 = nullptr;
  ASSERT_EQ(aclrtCreateContext(&c1, 0), ACL_SUCCESS);
  aclrtContext made_there = nullptr;
  OnNewThread([&] {
    aclrtContext cur = nullptr;
    EXPECT_ACL_ERROR(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL, "no current context");
    ASSERT_EQ(aclrtSetCurrentContext(c1), ACL_SUCCESS);  // a context is shared by the threads of the process
    ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    EXPECT_EQ(cur, c1);
    ASSERT_EQ(aclrtCreateContext(&made_there, 0), ACL_SUCCESS);
    ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
    EXPECT_EQ(cur, made_there);
  });
  aclrtContext cur = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&cur), ACL_SUCCESS);
  EXPECT_EQ(cur, c1) << "another thread's create changed this thread's context";
  EXPECT_EQ(aclrtDestroyContext(made_there), ACL_SUCCESS) << "a context outlives the thread that made it";
  EXPECT_EQ(aclrtDestroyContext(c1), ACL_SUCCESS);
}

// Threads creating and destroying contexts with streams and events at once
// (run under TSan in CI): every call succeeds, every time is ordered.
TEST_F(AclRuntime, ContextsStreamsAndEventsFromManyThreads) {
  constexpr int kThreads = 4, kRounds = 40;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      std::vector<uint8_t> buf(4096, 0);
      for (int r = 0; r < kRounds; ++r) {
        aclrtContext c = nullptr;
        aclrtStream s = nullptr;
        aclrtEvent e1 = nullptr, e2 = nullptr;
        bool ok = aclrtCreateContext(&c, 0) == ACL_SUCCESS && aclrtCreateStream(&s) == ACL_SUCCESS &&
                  aclrtCreateEvent(&e1) == ACL_SUCCESS && aclrtCreateEvent(&e2) == ACL_SUCCESS &&
                  aclrtRecordEvent(e1, s) == ACL_SUCCESS &&
                  aclrtMemsetAsync(buf.data(), buf.size(), r, buf.size(), s) == ACL_SUCCESS &&
                  aclrtRecordEvent(e2, s) == ACL_SUCCESS && aclrtSynchronizeEvent(e2) == ACL_SUCCESS;
        float ms = -1;
        ok = ok && aclrtEventElapsedTime(&ms, e1, e2) == ACL_SUCCESS && ms >= 0 && buf[4095] == uint8_t(r);
        // e2 goes with its context
        ok = ok && aclrtDestroyEvent(e1) == ACL_SUCCESS && aclrtDestroyStream(s) == ACL_SUCCESS &&
             aclrtDestroyContext(c) == ACL_SUCCESS;
        if (!ok) failures.fetch_add(1);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
}

// Not a fixture test: the device's count must drop to zero here.
TEST(AclRuntimeDevice, TheLastResetDeviceDestroysTheDefaultContextsStreamsAndEvents) {
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
  aclrtStream s = nullptr;
  aclrtEvent e = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateEvent(&e), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS) << "one aclrtSetDevice still stands";
  ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);  // the reset cleared this thread's context
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(s), ACL_SUCCESS) << "one aclrtSetDevice still stands";
  ASSERT_EQ(aclrtResetDevice(0), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtSynchronizeStream(s), ACL_ERROR_INVALID_PARAM, "not a live stream");
  EXPECT_ACL_ERROR(aclrtDestroyEvent(e), ACL_ERROR_INVALID_PARAM, "not a live event");
  aclrtContext cur = nullptr;
  EXPECT_ACL_ERROR(aclrtGetCurrentContext(&cur), ACL_ERROR_RT_CONTEXT_NULL, "no current context");
  EXPECT_ACL_ERROR(aclrtSetDevice(1), ACL_ERROR_RT_INVALID_DEVICEID, "device 1 does not exist");
  EXPECT_ACL_ERROR(aclrtResetDevice(-3), ACL_ERROR_RT_INVALID_DEVICEID, "device -3 does not exist");
}

}  // namespace
}  // namespace acltest
