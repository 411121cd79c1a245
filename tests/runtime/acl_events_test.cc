// Events: creation flags, record / query / reset / synchronize, the elapsed
// time between two records (exact, on a fake clock the runtime reads:
// SetEventClock; on the real clock only its sign), aclrtStreamWaitEvent
// between two streams, and every error.
#include <atomic>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "acl_test_util.h"
#include "runtime/acl_objects.h"  // SetEventClock: a fake clock for the elapsed times
#include "runtime/stream.h"       // RecordStreamError: a task that fails after its enqueue returned

namespace acltest {
namespace {

static_assert(ACL_EVENT_SYNC == 0x1u && ACL_EVENT_CAPTURE_STREAM_PROGRESS == 0x2u && ACL_EVENT_TIME_LINE == 0x8u &&
              ACL_EVENT_DEVICE_USE_ONLY == 0x10u && ACL_EVENT_EXTERNAL == 0x20u && ACL_EVENT_IPC == 0x40u,
              "CANN's flag values");
static_assert(ACL_EVENT_RECORDED_STATUS_NOT_READY == 0 && ACL_EVENT_RECORDED_STATUS_COMPLETE == 1);
static_assert(ACL_ERROR_RT_PARAM_INVALID == 107000 && ACL_ERROR_RT_CONTEXT_NULL == 107002 &&
              ACL_ERROR_RT_STREAM_CONTEXT == 107003 && ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID == 107006 &&
              ACL_ERROR_RT_FEATURE_NOT_SUPPORT == 207000 && ACL_ERROR_RT_INTERNAL_ERROR == 507000 &&
              ACL_ERROR_RT_STREAM_SYNC_TIMEOUT == 507046, "CANN's error codes");

// The runtime's event clock while a test runs: a time the test sets.
int64_t g_fake_ns = 0;
int64_t FakeNs() { return g_fake_ns; }

// Installs the fake clock for one test, restores the steady clock after.
class FakeEventClock {
 public:
  FakeEventClock() : old_(actgrad::rt::SetEventClock(&FakeNs)) {}
  ~FakeEventClock() { actgrad::rt::SetEventClock(old_); }
  void Set(int64_t ns) { g_fake_ns = ns; }

 private:
  actgrad::rt::EventClock old_;
};

class Events : public AclRuntime {
 protected:
  void SetUp() override {
    AclRuntime::SetUp();
    ASSERT_EQ(aclrtCreateStream(&s_), ACL_SUCCESS) << ErrMsg();
  }
  void TearDown() override {
    EXPECT_EQ(aclrtDestroyStream(s_), ACL_SUCCESS) << ErrMsg();
    AclRuntime::TearDown();
  }
  aclrtEvent NewEvent(uint32_t flags = 0) {
    aclrtEvent e = nullptr;
    EXPECT_EQ(flags ? aclrtCreateEventWithFlag(&e, flags) : aclrtCreateEvent(&e), ACL_SUCCESS) << ErrMsg();
    return e;
  }
  aclrtStream s_ = nullptr;
};

TEST_F(Events, ElapsedTimeIsTheClockBetweenTheRecords) {
  FakeEventClock clock;
  aclrtEvent start = NewEvent(), end = NewEvent();
  std::vector<uint8_t> buf(1 << 20);
  clock.Set(1'000'000);
  ASSERT_EQ(aclrtRecordEvent(start, s_), ACL_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtMemsetAsync(buf.data(), buf.size(), 0x3c, buf.size(), s_), ACL_SUCCESS);
  clock.Set(3'500'000);
  ASSERT_EQ(aclrtRecordEvent(end, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(s_), ACL_SUCCESS);
  float ms = -1;
  ASSERT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS) << ErrMsg();
  EXPECT_EQ(ms, 2.5f) << "the clock's readings at the two records, in milliseconds";
  EXPECT_EQ(buf.back(), 0x3c) << "the memset between the records ran";
  EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(end), ACL_SUCCESS);
}

TEST_F(Events, ElapsedTimeOnTheSteadyClockIsNeverNegativeInRecordOrder) {
  aclrtEvent start = NewEvent(), end = NewEvent();
  ASSERT_EQ(aclrtRecordEvent(start, s_), ACL_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtRecordEvent(end, s_), ACL_SUCCESS);
  float ms = -1;
  ASSERT_EQ(aclrtEventElapsedTime(&ms, start, end), ACL_SUCCESS) << ErrMsg();
  EXPECT_GE(ms, 0.0f) << "a steady clock does not go back";
  EXPECT_EQ(aclrtDestroyEvent(start), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(end), ACL_SUCCESS);
}

TEST_F(Events, ElapsedTimeIsADifferenceOfRecordTimes) {
  FakeEventClock clock;
  aclrtEvent a = NewEvent(), b = NewEvent(ACL_EVENT_TIME_LINE), c = NewEvent(ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC);
  clock.Set(10'000'000);
  ASSERT_EQ(aclrtRecordEvent(a, s_), ACL_SUCCESS);
  clock.Set(10'250'000);
  ASSERT_EQ(aclrtRecordEvent(b, nullptr), ACL_SUCCESS) << "the default stream";
  clock.Set(10'750'000);
  ASSERT_EQ(aclrtRecordEvent(c, s_), ACL_SUCCESS);
  float ab = 0, bc = 0, ac = 0, ba = 0, aa = -1;
  ASSERT_EQ(aclrtEventElapsedTime(&ab, a, b), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&bc, b, c), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&ac, a, c), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&ba, b, a), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&aa, a, a), ACL_SUCCESS);
  EXPECT_EQ(ab, 0.25f);
  EXPECT_EQ(bc, 0.5f);
  EXPECT_EQ(ac, 0.75f);
  EXPECT_EQ(ba, -0.25f) << "recorded the other way round: negative, as CANN";
  EXPECT_EQ(aa, 0.0f);
  // A record again moves the event to the new time.
  clock.Set(11'000'000);
  ASSERT_EQ(aclrtRecordEvent(a, s_), ACL_SUCCESS);
  float after = 0;
  ASSERT_EQ(aclrtEventElapsedTime(&after, c, a), ACL_SUCCESS);
  EXPECT_EQ(after, 0.25f);
  for (aclrtEvent e : {a, b, c}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

TEST_F(Events, ElapsedTimeErrors) {
  aclrtEvent a = NewEvent(), b = NewEvent(), sync_only = NewEvent(ACL_EVENT_SYNC), never = NewEvent();
  ASSERT_EQ(aclrtRecordEvent(a, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(b, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtRecordEvent(sync_only, s_), ACL_SUCCESS);
  float ms = 123.0f;
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(nullptr, a, b), ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: ms is null");
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, nullptr, b), ACL_ERROR_INVALID_PARAM, "startEvent is null");
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, nullptr), ACL_ERROR_INVALID_PARAM, "endEvent is null");
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, never, b), ACL_ERROR_RT_INTERNAL_ERROR, "startEvent is not recorded");
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, never), ACL_ERROR_RT_INTERNAL_ERROR, "endEvent is not recorded");
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, sync_only), ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID,
                   "endEvent was created without ACL_EVENT_TIME_LINE");
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, Garbage(), b), ACL_ERROR_INVALID_PARAM, "startEvent is not a live event");
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, s_), ACL_ERROR_INVALID_PARAM, "endEvent is not a live event")
      << "a stream is no event";
  // Reset since its record: not recorded any more.
  aclrtEvent resettable = NewEvent(ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE);
  ASSERT_EQ(aclrtRecordEvent(resettable, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtEventElapsedTime(&ms, a, resettable), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetEvent(resettable, s_), ACL_SUCCESS);
  ms = 123.0f;
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, resettable), ACL_ERROR_RT_INTERNAL_ERROR, "reset since");
  // Destroyed.
  ASSERT_EQ(aclrtDestroyEvent(b), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, b), ACL_ERROR_INVALID_PARAM, "endEvent is not a live event");
  // Of another context.
  aclrtContext dflt = nullptr, other = nullptr;
  ASSERT_EQ(aclrtGetCurrentContext(&dflt), ACL_SUCCESS);
  ASSERT_EQ(aclrtCreateContext(&other, 0), ACL_SUCCESS);
  aclrtEvent there = NewEvent();
  ASSERT_EQ(aclrtRecordEvent(there, nullptr), ACL_SUCCESS) << ErrMsg();
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, there), ACL_ERROR_INVALID_PARAM, "different contexts");
  EXPECT_EQ(ms, 123.0f) << "a failed call wrote ms";
  ASSERT_EQ(aclrtDestroyContext(other), ACL_SUCCESS);
  ASSERT_EQ(aclrtSetCurrentContext(dflt), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtEventElapsedTime(&ms, a, there), ACL_ERROR_INVALID_PARAM, "endEvent is not a live event");
  for (aclrtEvent e : {a, sync_only, never, resettable}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

TEST_F(Events, CreateEventWithFlagTakesCannsFlags) {
  for (uint32_t f : {ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE, ACL_EVENT_CAPTURE_STREAM_PROGRESS,
                     ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE,
                     ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE | ACL_EVENT_CAPTURE_STREAM_PROGRESS}) {
    aclrtEvent e = nullptr;
    ASSERT_EQ(aclrtCreateEventWithFlag(&e, f), ACL_SUCCESS) << f << ": " << ErrMsg();
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(aclrtRecordEvent(e, s_), ACL_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeEvent(e), ACL_SUCCESS);
    EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  }
  aclrtEvent e = nullptr;
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(nullptr, ACL_EVENT_SYNC), ACL_ERROR_INVALID_PARAM, "event is null");
  EXPECT_ACL_ERROR(aclrtCreateEvent(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is null");
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(&e, 0), ACL_ERROR_RT_PARAM_INVALID, "flag 0x0");
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(&e, 0x4), ACL_ERROR_RT_PARAM_INVALID, "flag 0x4");
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(&e, 0x80 | ACL_EVENT_SYNC), ACL_ERROR_RT_PARAM_INVALID, "flag 0x81");
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(&e, ACL_EVENT_EXTERNAL | ACL_EVENT_SYNC), ACL_ERROR_RT_PARAM_INVALID,
                   "does not combine");
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(&e, ACL_EVENT_EXTERNAL), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "graph capture");
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(&e, ACL_EVENT_IPC), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "inter-process");
  EXPECT_ACL_ERROR(aclrtCreateEventWithFlag(&e, ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_SYNC),
                   ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACL_EVENT_DEVICE_USE_ONLY");
  EXPECT_EQ(e, nullptr) << "a failed create wrote its output";
}

TEST_F(Events, QueryStatusFollowsRecordAndReset) {
  aclrtEvent plain = NewEvent(), sync = NewEvent(ACL_EVENT_SYNC);
  aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_COMPLETE;
  ASSERT_EQ(aclrtQueryEventStatus(plain, &st), ACL_SUCCESS);
  EXPECT_EQ(st, ACL_EVENT_RECORDED_STATUS_NOT_READY) << "never recorded";
  ASSERT_EQ(aclrtRecordEvent(plain, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtQueryEventStatus(plain, &st), ACL_SUCCESS);
  EXPECT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE) << "the stream's tasks ran at enqueue";
  ASSERT_EQ(aclrtRecordEvent(sync, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetEvent(sync, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtQueryEventStatus(sync, &st), ACL_SUCCESS);
  EXPECT_EQ(st, ACL_EVENT_RECORDED_STATUS_NOT_READY) << "reset";
  ASSERT_EQ(aclrtRecordEvent(sync, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtQueryEventStatus(sync, &st), ACL_SUCCESS);
  EXPECT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE) << "recorded again after the reset";
  EXPECT_ACL_ERROR(aclrtQueryEventStatus(plain, nullptr), ACL_ERROR_INVALID_PARAM, "status is null");
  EXPECT_ACL_ERROR(aclrtQueryEventStatus(nullptr, &st), ACL_ERROR_INVALID_PARAM, "event is null");
  EXPECT_ACL_ERROR(aclrtQueryEventStatus(Garbage(), &st), ACL_ERROR_INVALID_PARAM, "not a live event");
  EXPECT_EQ(aclrtDestroyEvent(plain), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtQueryEventStatus(plain, &st), ACL_ERROR_INVALID_PARAM, "not a live event");
  EXPECT_EQ(aclrtDestroyEvent(sync), ACL_SUCCESS);
}

TEST_F(Events, ResetTakesOnlySyncEvents) {
  aclrtEvent plain = NewEvent(), timed = NewEvent(ACL_EVENT_TIME_LINE), sync = NewEvent(ACL_EVENT_SYNC);
  EXPECT_ACL_ERROR(aclrtResetEvent(plain, s_), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACL_EVENT_SYNC");
  EXPECT_ACL_ERROR(aclrtResetEvent(timed, s_), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "ACL_EVENT_SYNC");
  EXPECT_EQ(aclrtResetEvent(sync, s_), ACL_SUCCESS) << "a reset before any record is fine";
  EXPECT_EQ(aclrtResetEvent(sync, nullptr), ACL_SUCCESS) << ErrMsg();
  EXPECT_ACL_ERROR(aclrtResetEvent(nullptr, s_), ACL_ERROR_INVALID_PARAM, "aclrtResetEvent: event is null");
  EXPECT_ACL_ERROR(aclrtResetEvent(sync, Garbage()), ACL_ERROR_INVALID_PARAM, "not a live stream");
  for (aclrtEvent e : {plain, timed}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyEvent(sync), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtResetEvent(sync, s_), ACL_ERROR_INVALID_PARAM, "not a live event");
  EXPECT_ACL_ERROR(aclrtDestroyEvent(sync), ACL_ERROR_INVALID_PARAM, "aclrtDestroyEvent: event is not a live event");
  EXPECT_ACL_ERROR(aclrtDestroyEvent(nullptr), ACL_ERROR_INVALID_PARAM, "event is null");
}

TEST_F(Events, RecordErrors) {
  aclrtEvent e = NewEvent();
  aclrtStream gone = nullptr;
  ASSERT_EQ(aclrtCreateStream(&gone), ACL_SUCCESS);
  ASSERT_EQ(aclrtDestroyStream(gone), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtRecordEvent(nullptr, s_), ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: event is null");
  EXPECT_ACL_ERROR(aclrtRecordEvent(Garbage(), s_), ACL_ERROR_INVALID_PARAM, "not a live event");
  EXPECT_ACL_ERROR(aclrtRecordEvent(e, gone), ACL_ERROR_INVALID_PARAM, "aclrtRecordEvent: not a live stream");
  EXPECT_ACL_ERROR(aclrtRecordEvent(e, e), ACL_ERROR_INVALID_PARAM, "not a live stream") << "an event is no stream";
  aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_COMPLETE;
  ASSERT_EQ(aclrtQueryEventStatus(e, &st), ACL_SUCCESS);
  EXPECT_EQ(st, ACL_EVENT_RECORDED_STATUS_NOT_READY) << "a refused record recorded";
  EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

TEST_F(Events, SynchronizeEventReportsTheErrorOfATaskBeforeIt) {
  aclrtEvent never = NewEvent(), e = NewEvent();
  EXPECT_EQ(aclrtSynchronizeEvent(never), ACL_SUCCESS) << "nothing to wait for";
  // A kernel that failed after its launch returned (as the emulator's
  // launches report a fault): the stream holds the error.
  actgrad::rt::RecordStreamError(s_, ACL_ERROR_RT_AICORE_EXCEPTION, "the kernel stopped");
  ASSERT_EQ(aclrtRecordEvent(e, s_), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtSynchronizeEvent(e), ACL_ERROR_RT_AICORE_EXCEPTION, "the kernel stopped");
  EXPECT_ACL_ERROR(aclrtSynchronizeStreamWithTimeout(s_, 1000), ACL_ERROR_RT_AICORE_EXCEPTION, "the kernel stopped");
  EXPECT_EQ(aclrtSynchronizeStream(s_), ACL_SUCCESS) << "reported once";
  ASSERT_EQ(aclrtRecordEvent(e, s_), ACL_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeEvent(e), ACL_SUCCESS) << "recorded after the error was reported";
  EXPECT_ACL_ERROR(aclrtSynchronizeEvent(nullptr), ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeEvent: event is null");
  EXPECT_ACL_ERROR(aclrtSynchronizeEvent(s_), ACL_ERROR_INVALID_PARAM, "not a live event");
  for (aclrtEvent x : {never, e}) EXPECT_EQ(aclrtDestroyEvent(x), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtSynchronizeEvent(e), ACL_ERROR_INVALID_PARAM, "not a live event");
}

// Stream 2 waits for stream 1's event, then reads what stream 1 wrote before
// the record; an event on stream 2 after the wait lies after the one on 1.
TEST_F(Events, StreamWaitEventOrdersTheSecondStreamAfterTheRecord) {
  aclrtStream s2 = nullptr;
  ASSERT_EQ(aclrtCreateStream(&s2), ACL_SUCCESS);
  aclrtEvent written = NewEvent(ACL_EVENT_SYNC | ACL_EVENT_TIME_LINE), read = NewEvent();
  const size_t n = 1 << 16;
  std::vector<uint8_t> src(n, 0), dst(n + 64, 0xee);
  for (int round = 1; round <= 3; ++round) {
    ASSERT_EQ(aclrtMemsetAsync(src.data(), n, round, n, s_), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(written, s_), ACL_SUCCESS);
    ASSERT_EQ(aclrtStreamWaitEvent(s2, written), ACL_SUCCESS) << ErrMsg();
    ASSERT_EQ(aclrtMemcpyAsync(dst.data(), n, src.data(), n, ACL_MEMCPY_DEVICE_TO_DEVICE, s2), ACL_SUCCESS);
    ASSERT_EQ(aclrtRecordEvent(read, s2), ACL_SUCCESS);
    ASSERT_EQ(aclrtResetEvent(written, s2), ACL_SUCCESS) << "after the wait, as CANN's samples reset";
    ASSERT_EQ(aclrtSynchronizeStream(s2), ACL_SUCCESS);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[i], uint8_t(round)) << i;
    for (size_t i = n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xee) << "past the copy: " << i;
  }
  aclrtEvent w2 = NewEvent(), r2 = NewEvent();
  ASSERT_EQ(aclrtRecordEvent(w2, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtStreamWaitEvent(s2, w2), ACL_SUCCESS) << "a plain event can be waited for";
  ASSERT_EQ(aclrtRecordEvent(r2, s2), ACL_SUCCESS);
  float ms = -1;
  ASSERT_EQ(aclrtEventElapsedTime(&ms, w2, r2), ACL_SUCCESS);
  EXPECT_GE(ms, 0.0f) << "the waiting stream's event lies after the one it waited for";
  EXPECT_EQ(aclrtStreamWaitEvent(nullptr, w2), ACL_SUCCESS) << "the default stream";
  for (aclrtEvent e : {written, read, w2, r2}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  EXPECT_EQ(aclrtDestroyStream(s2), ACL_SUCCESS);
}

TEST_F(Events, StreamWaitEventErrors) {
  aclrtEvent never = NewEvent(), timed = NewEvent(ACL_EVENT_TIME_LINE), sync = NewEvent(ACL_EVENT_SYNC);
  ASSERT_EQ(aclrtRecordEvent(timed, s_), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtStreamWaitEvent(s_, never), ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                   "a wait must come after the record it waits for");
  EXPECT_ACL_ERROR(aclrtStreamWaitEvent(s_, timed), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "without ACL_EVENT_SYNC");
  ASSERT_EQ(aclrtRecordEvent(sync, s_), ACL_SUCCESS);
  ASSERT_EQ(aclrtResetEvent(sync, s_), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtStreamWaitEvent(s_, sync), ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "not recorded") << "reset";
  EXPECT_ACL_ERROR(aclrtStreamWaitEvent(s_, nullptr), ACL_ERROR_INVALID_PARAM, "aclrtStreamWaitEvent: event is null");
  EXPECT_ACL_ERROR(aclrtStreamWaitEvent(Garbage(), timed), ACL_ERROR_INVALID_PARAM, "not a live stream");
  for (aclrtEvent e : {never, timed, sync}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
  EXPECT_ACL_ERROR(aclrtStreamWaitEvent(s_, sync), ACL_ERROR_INVALID_PARAM, "not a live event");
}

// Records on one thread, queries and elapsed times on others, many streams at
// once (run under TSan in CI).
TEST_F(Events, EventsAreSharedBetweenThreads) {
  aclrtEvent a = NewEvent(), b = NewEvent();
  std::thread([&] {
    // No aclrtSetDevice here: the stream and the events are the default
    // context's, which a thread without a current context uses.
    EXPECT_EQ(aclrtRecordEvent(a, s_), ACL_SUCCESS) << ErrMsg();
    EXPECT_EQ(aclrtRecordEvent(b, s_), ACL_SUCCESS);
  }).join();
  std::thread([&] {
    float ms = -1;
    EXPECT_EQ(aclrtEventElapsedTime(&ms, a, b), ACL_SUCCESS) << ErrMsg();
    EXPECT_GE(ms, 0.0f);
    aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    EXPECT_EQ(aclrtQueryEventStatus(b, &st), ACL_SUCCESS);
    EXPECT_EQ(st, ACL_EVENT_RECORDED_STATUS_COMPLETE);
  }).join();
  constexpr int kThreads = 4, kRounds = 100;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      aclrtStream s = nullptr;
      aclrtEvent x = nullptr, y = nullptr;
      if (aclrtCreateStream(&s) || aclrtCreateEvent(&x) || aclrtCreateEvent(&y)) {
        failures.fetch_add(1);
        return;
      }
      for (int r = 0; r < kRounds; ++r) {
        float ms = -1, shared = 0;
        aclrtEventRecordedStatus st = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        const bool ok = aclrtRecordEvent(x, s) == ACL_SUCCESS && aclrtRecordEvent(y, s) == ACL_SUCCESS &&
                        aclrtEventElapsedTime(&ms, x, y) == ACL_SUCCESS && ms >= 0 &&
                        aclrtEventElapsedTime(&shared, a, b) == ACL_SUCCESS &&
                        aclrtQueryEventStatus(y, &st) == ACL_SUCCESS && st == ACL_EVENT_RECORDED_STATUS_COMPLETE;
        if (!ok) failures.fetch_add(1);
      }
      if (aclrtDestroyEvent(x) || aclrtDestroyEvent(y) || aclrtDestroyStream(s)) failures.fetch_add(1);
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (aclrtEvent e : {a, b}) EXPECT_EQ(aclrtDestroyEvent(e), ACL_SUCCESS);
}

}  // namespace
}  // namespace acltest
