// Events on the CPU runtime. A stream's tasks run at enqueue, so the stream
// reaches an event when aclrtRecordEvent is called: the event takes the
// steady-clock time then, and everything recorded before it is complete.
// Hence:
//   - aclrtSynchronizeEvent and aclrtQueryEventStatus never wait: an event is
//     complete from its record on (not ready before its first record and after
//     aclrtResetEvent, as CANN's events);
//   - aclrtStreamWaitEvent orders nothing that is not ordered already, and a
//     wait for an event that is not recorded cannot be honoured (the stream's
//     later tasks would run before the record it waits for): refused;
//   - aclrtEventElapsedTime is the difference of two recorded times in
//     milliseconds (negative when the end was recorded first, as CANN).
// Error codes as CANN's: null pointers and dead handles ACL_ERROR_INVALID_PARAM,
// flags out of range ACL_ERROR_RT_PARAM_INVALID, flags whose feature the CPU
// runtime lacks and events used against their flags ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
// an event that records no time ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, an event
// not recorded in aclrtEventElapsedTime ACL_ERROR_RT_INTERNAL_ERROR (CANN's
// runtime maps its "event recorder null" there), a stream of another context
// ACL_ERROR_RT_STREAM_CONTEXT.
#include <atomic>
#include <chrono>
#include <mutex>
#include <new>

#include "acl/acl.h"
#include "runtime/acl_objects.h"
#include "runtime/error.h"

namespace actgrad::rt {

SlotPool<Event>& Events() {
  static auto* p = new SlotPool<Event>;  // never freed: runtime/slot_pool.h
  return *p;
}

namespace {
std::atomic<EventClock> g_event_clock{nullptr};
}  // namespace

EventClock SetEventClock(EventClock clock) { return g_event_clock.exchange(clock); }

bool IsLiveEvent(const void* e) {
  return Events().Contains(e) && (static_cast<const Event*>(e)->state.load(std::memory_order_acquire) & kEventLive);
}

}  // namespace actgrad::rt

using namespace actgrad::rt;

namespace {
constexpr uint32_t kKnownFlags = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE |
                                 ACL_EVENT_DEVICE_USE_ONLY | ACL_EVENT_EXTERNAL | ACL_EVENT_IPC;

int64_t NowNs() {
  if (const EventClock fake = g_event_clock.load(std::memory_order_relaxed)) return fake();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Under RuntimeMutex: the live event behind a handle, or nullptr with the
// error recorded (*st).
Event* LiveEvent(const char* name, const char* what, aclrtEvent e, int* st) {
  if (!e) {
    *st = Fail(ACL_ERROR_INVALID_PARAM, "%s: %s is null", name, what);
    return nullptr;
  }
  if (!IsLiveEvent(e)) {
    *st = Fail(ACL_ERROR_INVALID_PARAM, "%s: %s is not a live event", name, what);
    return nullptr;
  }
  return static_cast<Event*>(e);
}

// Under RuntimeMutex: the live event and the context of the stream a task
// on it goes to (LiveEvent, then CheckTaskStream); nonzero: the error.
int EventOnStream(const char* name, aclrtEvent event, aclrtStream stream, Event** e, Context** c) {
  int st;
  if (!(*e = LiveEvent(name, "event", event, &st))) return st;
  return CheckTaskStream(name, stream, c);
}

bool Times(const Event* e) { return e->flags == kPlainEvent || (e->flags & ACL_EVENT_TIME_LINE); }
bool Waitable(const Event* e) { return e->flags == kPlainEvent || (e->flags & ACL_EVENT_SYNC); }

aclError Create(const char* name, aclrtEvent* event, uint32_t flags) {
  Event* e = Events().Take();
  if (!e) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of memory", name);
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  Context* c = CurrentOrDefault();
  try {
    c->events.push_back(e);
  } catch (const std::bad_alloc&) {
    SlotPool<Event>::Give(e);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "%s: out of memory", name);
  }
  e->flags = flags;
  e->context = c;
  e->recorded = false;
  e->time_ns = 0;
  e->error = 0;
  e->error_message.clear();
  e->state.store(e->state.load(std::memory_order_relaxed) | kEventLive, std::memory_order_release);
  *event = e;
  return ACL_SUCCESS;
}
}  // namespace

extern "C" {

aclError aclrtCreateEvent(aclrtEvent* event) {
  if (!event) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is null");
  return Create("aclrtCreateEvent", event, kPlainEvent);
}

aclError aclrtCreateEventWithFlag(aclrtEvent* event, uint32_t flag) {
  const char* name = "aclrtCreateEventWithFlag";
  if (!event) return Fail(ACL_ERROR_INVALID_PARAM, "%s: event is null", name);
  if (flag == 0 || (flag & ~kKnownFlags))
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: flag 0x%x is not a combination of ACL_EVENT_* flags", name, flag);
  if ((flag & ACL_EVENT_EXTERNAL) && flag != ACL_EVENT_EXTERNAL)
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "%s: ACL_EVENT_EXTERNAL does not combine with other flags (flag 0x%x)", name,
                flag);
  if (flag & ACL_EVENT_EXTERNAL)
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "%s: ACL_EVENT_EXTERNAL is for graph capture, which the CPU runtime "
                "does not have", name);
  if (flag & ACL_EVENT_IPC)
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, "%s: ACL_EVENT_IPC: the CPU runtime has no inter-process events", name);
  if (flag & ACL_EVENT_DEVICE_USE_ONLY)
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "%s: ACL_EVENT_DEVICE_USE_ONLY: the CPU runtime runs no device-side code to use the event", name);
  return Create(name, event, flag);
}

aclError aclrtDestroyEvent(aclrtEvent event) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  int st;
  Event* e = LiveEvent("aclrtDestroyEvent", "event", event, &st);
  if (!e) return st;
  RetireEvent(e);
  return ACL_SUCCESS;
}

// The stream (nullptr: the current context's default stream) must be in the
// calling thread's current context, and the event in the stream's context.
aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
  const char* name = "aclrtRecordEvent";
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  Event* e;
  Context* c;
  if (const int st = EventOnStream(name, event, stream, &e, &c)) return st;
  if (e->context != c)
    return Fail(ACL_ERROR_RT_STREAM_CONTEXT, "%s: the event and the stream belong to different contexts", name);
  e->time_ns = NowNs();
  e->recorded = true;
  // A task before the event failed after its enqueue returned: the event
  // reports it too (the stream keeps it for its synchronize).
  const auto* s = static_cast<const Stream*>(stream);
  e->error = s ? s->deferred_error.load(std::memory_order_relaxed) : 0;
  if (e->error) e->error_message = s->deferred_message;
  else e->error_message.clear();
  return ACL_SUCCESS;
}

// Back to the state before any record. Only for ACL_EVENT_SYNC events (CANN).
aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
  const char* name = "aclrtResetEvent";
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  Event* e;
  Context* c;
  if (const int st = EventOnStream(name, event, stream, &e, &c)) return st;
  if (e->flags == kPlainEvent || !(e->flags & ACL_EVENT_SYNC))
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "%s: only an event of aclrtCreateEventWithFlag with ACL_EVENT_SYNC can be reset", name);
  e->recorded = false;
  e->error = 0;
  e->error_message.clear();
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  int st;
  Event* e = LiveEvent("aclrtSynchronizeEvent", "event", event, &st);
  if (!e) return st;
  if (e->recorded && e->error) return Fail(e->error, "%s", e->error_message.c_str());
  return ACL_SUCCESS;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus* status) {
  const char* name = "aclrtQueryEventStatus";
  if (!status) return Fail(ACL_ERROR_INVALID_PARAM, "%s: status is null", name);
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  int st;
  Event* e = LiveEvent(name, "event", event, &st);
  if (!e) return st;
  *status = e->recorded ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
  const char* name = "aclrtStreamWaitEvent";
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  Event* e;
  Context* c;
  if (const int st = EventOnStream(name, event, stream, &e, &c)) return st;
  if (!Waitable(e))
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "%s: an event of aclrtCreateEventWithFlag without ACL_EVENT_SYNC cannot be waited for", name);
  if (!e->recorded)
    return Fail(ACL_ERROR_RT_FEATURE_NOT_SUPPORT,
                "%s: the event is not recorded; the CPU runtime runs a stream's tasks at enqueue, so a wait must "
                "come after the record it waits for",
                name);
  return ACL_SUCCESS;  // recorded: everything before the record is done
}

aclError aclrtEventElapsedTime(float* ms, aclrtEvent start_event, aclrtEvent end_event) {
  const char* name = "aclrtEventElapsedTime";
  if (!ms) return Fail(ACL_ERROR_INVALID_PARAM, "%s: ms is null", name);
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  int st;
  Event* start = LiveEvent(name, "startEvent", start_event, &st);
  if (!start) return st;
  Event* end = LiveEvent(name, "endEvent", end_event, &st);
  if (!end) return st;
  if (start->context != end->context)
    return Fail(ACL_ERROR_INVALID_PARAM, "%s: startEvent and endEvent belong to different contexts", name);
  for (const Event* e : {start, end}) {
    const char* what = e == start ? "startEvent" : "endEvent";
    if (!Times(e))
      return Fail(ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID, "%s: %s was created without ACL_EVENT_TIME_LINE", name, what);
    if (!e->recorded)
      return Fail(ACL_ERROR_RT_INTERNAL_ERROR, "%s: %s is not recorded (never, or reset since)", name, what);
  }
  *ms = float(double(end->time_ns - start->time_ns) / 1e6);
  return ACL_SUCCESS;
}

}  // extern "C"
