// The library's thread pool: every index runs exactly once, thread indices
// stay below the thread count, and nested, concurrent and post-fork calls neither deadlock
// nor lose work. Run twice by ctest: default spin and ACTGRAD_SPIN_US=0.
#include "variants/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace actgrad {
namespace {

// Runs one ParallelFor and checks coverage, thread indices, and that no two
// calls with the same thread index overlap.
void CheckOnce(int threads, int64_t count) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
  std::vector<std::atomic<int>> busy(static_cast<size_t>(std::max(threads, 1)));
  ParallelFor(threads, count, [&](int64_t begin, int64_t end, int t) {
    ASSERT_GE(t, 0);
    ASSERT_LT(t, std::max(threads, 1));
    ASSERT_LT(begin, end);
    EXPECT_EQ(busy[size_t(t)].fetch_add(1), 0) << "two calls share thread index " << t;
    for (int64_t i = begin; i < end; ++i) hits[size_t(i)].fetch_add(1);
    busy[size_t(t)].fetch_sub(1);
  });
  for (int64_t i = 0; i < count; ++i) ASSERT_EQ(hits[size_t(i)].load(), 1) << "index " << i;
}

TEST(ThreadPool, EveryIndexOnceForManyShapes) {
  for (int threads : {0, 1, 2, 3, 4, 7})
    for (int64_t count : {0, 1, 2, 3, 5, 64, 1000}) CheckOnce(threads, count);
}

TEST(ThreadPool, ManyBackToBackJobsLoseNothing) {
  // Workers race between jobs here; a lost or repeated share shows up as a
  // wrong sum.
  std::atomic<int64_t> sum{0};
  const int jobs = 20000;
  for (int j = 0; j < jobs; ++j)
    ParallelFor(2 + j % 3, 8, [&](int64_t b, int64_t e, int) { sum.fetch_add(e - b); });
  EXPECT_EQ(sum.load(), int64_t(jobs) * 8);
}

TEST(ThreadPool, CallerFinishesWhenAWorkerIsSlow) {
  // A worker stuck in its piece must not hold up the other pieces: the caller
  // claims them (the descheduled-worker case on a loaded machine).
  // The worker's first piece (in its own range) sleeps: the caller finishes
  // its own range and steals the rest of the worker's.
  std::atomic<int64_t> sum{0};
  std::atomic<bool> slept{false};
  std::atomic<int64_t> by_caller{0};
  ParallelFor(2, 64, [&](int64_t b, int64_t e, int t) {
    if (t == 1 && !slept.exchange(true)) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (t == 0) by_caller.fetch_add(e - b);
    sum.fetch_add(e - b);
  });
  EXPECT_EQ(sum.load(), 64);
  if (slept.load()) EXPECT_GE(by_caller.load(), 32);  // its own half at least
}

TEST(ThreadPool, EachThreadStartsInItsOwnRange) {
  // Pieces are split into one contiguous range per thread and a thread
  // claims its own range first, so the same thread runs the same pieces call
  // after call (cache affinity). The caller claims piece 0 before anyone;
  // a worker that runs anything starts in its range unless the caller had
  // already taken all of it.
  constexpr int64_t kCount = 8;
  int worker_started_home = 0;
  for (int job = 0; job < 20; ++job) {
    std::atomic<int64_t> first[2] = {-1, -1};
    std::atomic<int64_t> done{0};
    ParallelFor(2, kCount, [&](int64_t b, int64_t, int t) {
      int64_t none = -1;
      first[t].compare_exchange_strong(none, b);
      std::this_thread::sleep_for(std::chrono::microseconds(300));
      done.fetch_add(1);
    });
    ASSERT_EQ(done.load(), kCount);
    EXPECT_EQ(first[0].load(), 0) << "job " << job;
    if (first[1].load() >= 0) {
      EXPECT_GE(first[1].load(), kCount / 2) << "job " << job;
      worker_started_home += first[1].load() == kCount / 2;
    }
  }
  EXPECT_GT(worker_started_home, 0);
}

TEST(ThreadPool, NestedCallRunsInline) {
  std::atomic<int64_t> sum{0};
  ParallelFor(2, 4, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i)
      ParallelFor(2, 10, [&](int64_t b2, int64_t e2, int) { sum.fetch_add(e2 - b2); });
  });
  EXPECT_EQ(sum.load(), 40);
}

TEST(ThreadPool, ConcurrentCallersEachGetAllTheirWork) {
  std::vector<std::thread> callers;
  std::vector<int64_t> sums(4, 0);
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&, c] {
      for (int j = 0; j < 2000; ++j) {
        std::atomic<int64_t> s{0};
        ParallelFor(2, 16, [&](int64_t b, int64_t e, int) { s.fetch_add(e - b); });
        sums[size_t(c)] += s.load();
      }
    });
  for (auto& t : callers) t.join();
  for (int64_t s : sums) EXPECT_EQ(s, 2000 * 16);
}

TEST(ThreadPool, WorksInAForkedChild) {
  CheckOnce(2, 100);  // the parent's pool has a worker now
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<int64_t> sum{0};
    ParallelFor(2, 100, [&](int64_t b, int64_t e, int) { sum.fetch_add(e - b); });
    _exit(sum.load() == 100 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ThreadPool, MaxThreadsFollowsOpenMP) { EXPECT_GE(MaxThreads(), 1); }

}  // namespace
}  // namespace actgrad
