#include "runtime/stream.h"

namespace actgrad::rt {

SlotPool<Stream>& Streams() {
  static auto* p = new SlotPool<Stream>;  // never freed: runtime/slot_pool.h
  return *p;
}

std::mutex& RuntimeMutex() {
  static auto* m = new std::mutex;  // outlives every static destructor
  return *m;
}

bool IsLiveStream(void* s) {
  return Streams().Contains(s) && (static_cast<Stream*>(s)->state.load(std::memory_order_acquire) & kStreamLive);
}

void RecordStreamError(void* s, int code, const std::string& msg) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  auto* st = static_cast<Stream*>(s);
  if (IsLiveStream(st) && st->deferred_error.load(std::memory_order_relaxed) == 0) {
    st->deferred_message = msg;
    st->deferred_error.store(code, std::memory_order_release);
  }
}

}  // namespace actgrad::rt
