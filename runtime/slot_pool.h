// A pool of objects behind opaque handles (executors, streams) that never
// returns memory: slots live in slabs of 64, 128, 256, ... slots, allocated
// when every slot is busy and kept to the end of the process. So
//   - taking and returning a slot allocates nothing once the pool has grown to
//     the peak number in use (phase one and two of a call allocate nothing);
//   - any pointer a caller passes can be checked for being one of ours by its
//     address alone (Contains), and a stale handle points at a slot, never at
//     freed memory: its state says it is no longer live.
// T has `std::atomic<uint64_t> state` whose kBusy bit marks a taken slot; the
// low 32 bits count the slot's takes (a generation: a stale handle's
// compare-exchange fails once the slot was taken again). The other bits
// belong to T's owner.
#pragma once
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <new>

namespace actgrad::rt {

inline constexpr uint64_t kSlotBusy = uint64_t(1) << 32;
inline constexpr uint64_t kSlotGeneration = 0xffffffffu;

template <class T>
class SlotPool {
 public:
  // A free slot, its state now busy (generation + 1, every other bit clear),
  // or nullptr when memory runs out. The slot's other fields are as the last
  // user left them: the taker sets what it uses.
  T* Take() {
    static thread_local uint64_t t_hint = 0;  // this thread's last slot: LIFO reuse keeps it in cache
    uint64_t& hint = t_hint;                  // one TLS address look-up per call
    for (;;) {
      const uint64_t cap = capacity_.load(std::memory_order_acquire);
      uint64_t i = hint < cap ? hint : 0;
      for (uint64_t k = 0; k < cap; ++k) {
        T* t = At(i);
        uint64_t s = t->state.load(std::memory_order_relaxed);
        if (!(s & kSlotBusy) &&
            t->state.compare_exchange_strong(s, ((s + 1) & kSlotGeneration) | kSlotBusy, std::memory_order_acquire,
                                             std::memory_order_relaxed)) {
          hint = i;
          return t;
        }
        if (++i == cap) i = 0;
      }
      if (!Grow(cap)) return nullptr;
      hint = cap;  // the new slab's first slot
    }
  }

  // Returns a slot taken by Take (no other thread may hold it): not busy, the
  // generation kept; release: this user's accesses happen before the next
  // taker's.
  static void Give(T* t) {
    t->state.store(t->state.load(std::memory_order_relaxed) & kSlotGeneration, std::memory_order_release);
  }

  // p is a slot of this pool (taken or not); reads no slot.
  bool Contains(const void* p) const {
    const uintptr_t a = reinterpret_cast<uintptr_t>(p);
    for (int c = 0; c < kSlabs; ++c) {
      T* base = slabs_[c].load(std::memory_order_acquire);
      if (!base) return false;
      const uintptr_t lo = reinterpret_cast<uintptr_t>(base);
      if (a >= lo && a < lo + SlabSize(c) * sizeof(T)) return (a - lo) % sizeof(T) == 0;
    }
    return false;
  }

 private:
  static constexpr int kSlabs = 40;
  static constexpr uint64_t kFirst = 64;
  static constexpr uint64_t SlabSize(int c) { return kFirst << c; }
  static constexpr uint64_t SlabStart(int c) { return kFirst * ((uint64_t(1) << c) - 1); }

  T* At(uint64_t i) const {  // i < capacity
    const int c = int(std::bit_width(i / kFirst + 1)) - 1;
    return slabs_[c].load(std::memory_order_relaxed) + (i - SlabStart(c));
  }

  // Adds a slab unless another thread already grew the pool past `seen`.
  bool Grow(uint64_t seen) {
    std::lock_guard<std::mutex> lock(grow_mu_);
    const uint64_t cap = capacity_.load(std::memory_order_relaxed);
    if (cap != seen) return true;
    int c = 0;
    while (c < kSlabs && slabs_[c].load(std::memory_order_relaxed)) ++c;
    if (c == kSlabs) return false;
    T* slab = new (std::nothrow) T[SlabSize(c)];
    if (!slab) return false;
    slabs_[c].store(slab, std::memory_order_release);
    capacity_.store(SlabStart(c + 1), std::memory_order_release);
    return true;
  }

  std::atomic<T*> slabs_[kSlabs] = {};
  std::atomic<uint64_t> capacity_{0};
  std::mutex grow_mu_;
};

}  // namespace actgrad::rt
