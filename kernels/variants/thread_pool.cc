#include "variants/thread_pool.h"

#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ACTGRAD_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define ACTGRAD_PAUSE() asm volatile("yield")
#else
#define ACTGRAD_PAUSE() ((void)0)
#endif

namespace actgrad {
namespace {

using Body = std::function<void(int64_t, int64_t, int)>;
using Clock = std::chrono::steady_clock;

int ReadSpinUs() {
  const char* s = std::getenv("ACTGRAD_SPIN_US");
  if (!s || !*s) return 50;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  return (*end == '\0' && v >= 0 && v <= 1000000) ? int(v) : 50;
}

// Spins until pred() or the spin time is over; true if pred() held.
template <class Pred>
bool SpinUntil(Pred pred) {
  const int us = SpinMicroseconds();
  if (us == 0) return pred();
  const auto deadline = Clock::now() + std::chrono::microseconds(us);
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (pred()) return true;
      ACTGRAD_PAUSE();
    }
    if (Clock::now() >= deadline) return pred();
  }
}

// One job at a time. The items are split into one contiguous range per
// thread; a thread claims the items of its own range first, then steals
// from the others. When the threads keep pace, thread t runs the same items
// call after call, so an operand that fits in the caches stays in the cache
// of the core that writes it (claiming every item from one shared counter
// gave each call a new split: the output's cache lines moved between the
// cores; `actgrad-pool-probe` compares the two). A worker that the
// OS has descheduled (the other core busy) costs at most the item it holds:
// the caller steals the rest and never waits for an idle worker to wake.
//
// Claims go through one 64-bit word per range, (job generation << 32) | next
// item, and are compare-and-swaps on it. A worker that wakes late sees a
// generation that is not its job's, or the closed marker the caller stores
// when a job ends, and its CAS fails, so it can never run an item of a job
// that is over or read the fields of the next one. All atomics are seq_cst:
// that argument leans on one total order and the cost is a few fences per job.
class Pool {
 public:
  static Pool& Get() {
    // Never destroyed: workers may still be asleep at exit, and a detached
    // sleeping thread is harmless where joining in a static destructor is not.
    static Pool* pool = [] {
      auto* p = new Pool;
      pthread_atfork(nullptr, nullptr, [] { Pool::Get().ForgetWorkersAfterFork(); });
      return p;
    }();
    return *pool;
  }

  void Run(int threads, int64_t count, const Body& body) {
    std::unique_lock<std::mutex> lock(run_mu_, std::try_to_lock);
    if (!lock.owns_lock() || count >= kClosed) {  // pool busy (concurrent or nested call)
      body(0, count, 0);
      return;
    }
    Grow(threads - 1);
    threads = std::min(threads, workers_ + 1);  // fewer if threads could not be created
    if (threads <= 1) {
      body(0, count, 0);
      return;
    }
    const uint32_t gen = generation_.load() + 1;
    body_.store(&body);
    count_.store(count);
    threads_.store(threads);
    done_.store(0);
    const int ranges = std::min(threads, kMaxRanges);
    for (int r = 0; r < ranges; ++r) {
      ranges_[r].end.store(count * (r + 1) / ranges);
      ranges_[r].next.store((uint64_t(gen) << 32) | uint64_t(count * r / ranges));
    }
    ranges_count_.store(ranges);
    generation_.store(gen);
    generation_.notify_all();
    Work(gen, 0);
    if (!SpinUntil([&] { return done_.load() == count; }))
      for (int64_t d; (d = done_.load()) != count;) done_.wait(d);
    for (int r = 0; r < ranges; ++r)
      ranges_[r].next.store((uint64_t(gen) << 32) | kClosed);  // late CASes on this job now fail
  }

 private:
  static constexpr int64_t kClosed = 0xffffffff;

  // Claims and runs items of job `gen` until none is left: its own range
  // first, then the others in turn.
  void Work(uint32_t gen, int thread) {
    const int ranges = ranges_count_.load();
    for (int k = 0; k < ranges; ++k) {
      Range& range = ranges_[(thread + k) % ranges];
      for (;;) {
        uint64_t w = range.next.load();
        if (uint32_t(w >> 32) != gen) return;  // another job's range: this one is over
        const int64_t item = int64_t(w & 0xffffffff);
        if (item >= range.end.load()) break;  // exhausted (or closed): the next range
        if (thread >= threads_.load()) return;
        if (!range.next.compare_exchange_weak(w, w + 1)) continue;
        (*body_.load())(item, item + 1, thread);
        if (done_.fetch_add(1) + 1 == count_.load()) done_.notify_one();
      }
    }
  }

  // Starts workers up to `workers`; stops quietly when the system refuses a
  // thread (the job then runs on the threads there are).
  void Grow(int workers) {
    while (workers_ < workers) {
      try {
        std::thread(&Pool::WorkerLoop, this, workers_ + 1, generation_.load()).detach();
      } catch (const std::system_error&) {
        return;
      }
      ++workers_;
    }
  }

  void WorkerLoop(int thread, uint32_t seen) {
    for (;;) {
      if (!SpinUntil([&] { return generation_.load() != seen; })) generation_.wait(seen);
      const uint32_t gen = generation_.load();
      if (gen == seen) continue;  // spurious wake-up
      seen = gen;
      Work(gen, thread);
    }
  }

  // fork() copies only the calling thread: the child starts with no workers.
  void ForgetWorkersAfterFork() {
    new (&run_mu_) std::mutex;
    workers_ = 0;
  }

  std::mutex run_mu_;
  int workers_ = 0;  // guarded by run_mu_
  std::atomic<uint32_t> generation_{0};
  // One range of items per thread of the job (threads beyond kMaxRanges
  // share them); `next` holds the job generation in its upper half.
  static constexpr int kMaxRanges = 64;
  struct alignas(64) Range {
    std::atomic<uint64_t> next{kClosed};
    std::atomic<int64_t> end{0};
  };
  Range ranges_[kMaxRanges];
  std::atomic<int> ranges_count_{0};
  std::atomic<int64_t> done_{0};
  std::atomic<int64_t> count_{0};
  std::atomic<int> threads_{1};
  std::atomic<const Body*> body_{nullptr};
};

}  // namespace

int SpinMicroseconds() {
  static const int us = ReadSpinUs();
  return us;
}

int MaxThreads() { return std::max(1, omp_get_max_threads()); }

void ParallelFor(int threads, int64_t count, const Body& body) {
  if (count <= 0) return;
  threads = int(std::min<int64_t>(threads, count));
  if (threads <= 1) {
    body(0, count, 0);
    return;
  }
  Pool::Get().Run(threads, count, body);
}

}  // namespace actgrad
