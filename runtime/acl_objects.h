// The ACL runtime's contexts and events (library actgrad_acl_cpu: acl_rt.cc,
// acl_context.cc, acl_events.cc, acl_memory.cc). Like streams
// (runtime/stream.h) they live in never-freed SlotPools, so any handle a caller
// passes is checked by its address and state: a destroyed or foreign handle
// gets an error, never a crash. Their fields change under RuntimeMutex().
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/slot_pool.h"
#include "runtime/stream.h"

namespace actgrad::rt {

struct Event;

// A context belongs to device 0 (the CPU). The default one is made by the
// first aclrtSetDevice (or the first call that needs a context) and lives to
// the end of the process; aclrtResetDevice, when the device's last
// aclrtSetDevice is undone, destroys its streams and events.
inline constexpr uint64_t kContextLive = uint64_t(1) << 33;
struct Context {
  std::atomic<uint64_t> state{0};
  int32_t device = 0;
  bool is_default = false;
  std::vector<Stream*> streams;  // live streams created in it
  std::vector<Event*> events;    // live events created in it
};

// Events: flags as created (kPlainEvent for aclrtCreateEvent: times and can
// be waited for, cannot be reset, as CANN). recorded/time_ns: the last
// aclrtRecordEvent since creation or aclrtResetEvent; error: the deferred
// error its stream held at that record (aclrtSynchronizeEvent reports it).
inline constexpr uint64_t kEventLive = uint64_t(1) << 33;
inline constexpr uint32_t kPlainEvent = 0;
struct Event {
  std::atomic<uint64_t> state{0};
  uint32_t flags = kPlainEvent;
  Context* context = nullptr;
  bool recorded = false;
  int64_t time_ns = 0;  // std::chrono::steady_clock
  int error = 0;
  std::string error_message;
};

// The clock aclrtRecordEvent reads, in nanoseconds: std::chrono::steady_clock
// unless a test installs a fake one, so that elapsed times are exact there.
// Returns the clock it replaces (nullptr: the steady clock); nullptr restores it.
using EventClock = int64_t (*)();
EventClock SetEventClock(EventClock clock);

SlotPool<Context>& Contexts();
SlotPool<Event>& Events();
bool IsLiveContext(const void* c);
bool IsLiveEvent(const void* e);

// The calling thread's current context (nullptr if it has none, or if it was
// destroyed), and the one the runtime uses: the current one, else the default
// context (CANN would answer ACL_ERROR_RT_CONTEXT_NULL there; the CPU runtime
// lets a program that never called aclrtSetDevice use streams, as before).
Context* CurrentContext();
Context* CurrentOrDefault();
Context* DefaultContext();
void SetCurrentContext(Context* c);

// Under RuntimeMutex(): not live any more, out of its context's list, the
// slot back in the pool.
void RetireStream(Stream* s);
void RetireEvent(Event* e);
// Under RuntimeMutex(): every stream and event of c.
void RetireContents(Context* c);

// The stream an asynchronous call of `name` enqueues on: nullptr (the current
// context's default stream) or a live stream of the current context. Returns
// ACL_SUCCESS or the error (recorded for aclGetRecentErrMsg); *context gets
// the stream's context.
int CheckTaskStream(const char* name, void* stream, Context** context);

}  // namespace actgrad::rt
