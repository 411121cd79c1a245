// The runtime's streams, as the aclnn ops and the kernel launches see them:
// a handle to check and a deferred error to record. Creating, destroying and
// synchronizing them is the ACL runtime's (acl_rt.cc, library actgrad_acl_cpu);
// the objects live here so that the ops do not depend on that library (a
// program with CANN's libascendcl links the ops without it).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "runtime/slot_pool.h"

namespace actgrad::rt {
// Streams live in a SlotPool (runtime/slot_pool.h): never freed, so a stream
// handle is checked and synchronized without a lock or a lookup.
// state: the pool's generation and busy bits, and kStreamLive from
// aclrtCreateStream to aclrtDestroyStream.
inline constexpr uint64_t kStreamLive = uint64_t(1) << 33;
struct Stream {
  std::atomic<uint64_t> state{0};
  std::atomic<int> deferred_error{0};  // nonzero: synchronize reports it (under RuntimeMutex)
  std::string deferred_message;        // guarded by RuntimeMutex
  // The context the stream was created in (the ACL runtime's; opaque here),
  // set before the stream turns live.
  std::atomic<void*> context{nullptr};
};
SlotPool<Stream>& Streams();
// Held for a change of a stream's liveness or deferred error (and by the ACL
// runtime for its contexts and events).
std::mutex& RuntimeMutex();
bool IsLiveStream(void* s);
// The stream's first error since its last synchronize (a task that failed
// after its enqueue returned); ignored for a stream that is not live.
void RecordStreamError(void* s, int code, const std::string& msg);
}  // namespace actgrad::rt
