#pragma once
#include <atomic>
#include <cstdint>
#include <string>

namespace actgrad::rt {
// Streams live in a SlotPool (runtime/slot_pool.h, acl_rt.cc): never freed,
// so a stream handle is checked and synchronized without a lock or a lookup.
// state: the pool's generation and busy bits, and kStreamLive from
// aclrtCreateStream to aclrtDestroyStream.
inline constexpr uint64_t kStreamLive = uint64_t(1) << 33;
struct Stream {
  std::atomic<uint64_t> state{0};
  std::atomic<int> deferred_error{0};  // nonzero: synchronize reports it (under acl_rt.cc's mutex)
  std::string deferred_message;        // guarded by acl_rt.cc's mutex
};
bool IsLiveStream(void* s);
void RecordStreamError(void* s, int code, const std::string& msg);
}  // namespace actgrad::rt
