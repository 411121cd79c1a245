// The library's worker threads: a persistent pool whose idle workers spin for
// a short, bounded time and then sleep on a futex (C++20 atomic wait).
//
// Why not `#pragma omp parallel`: libgomp's default wait policy spins for
// ~300,000 `pause` instructions (~10 ms on cores where one pause is ~140
// cycles) before sleeping. On a machine whose other core is busy, the
// spinning master and the descheduled worker then share one core and every
// call stalls for a scheduler time slice: measured 8.5 ms per 64K-element call
// instead of 43 us (docs/performance.md). A bounded spin keeps back-to-back
// calls hot and caps the waste on a loaded machine.
//
// The thread count still follows OpenMP's knobs (OMP_NUM_THREADS,
// omp_set_num_threads), which framework users already set; see MaxThreads().
#pragma once

#include <cstdint>
#include <functional>

namespace actgrad {

// Threads the library may use: omp_get_max_threads() of the calling thread.
int MaxThreads();

// Runs body(i, i + 1, thread) once for every item i in [0, count) (RunVariant:
// a chunk; the runtime's buffered path: a buffer) on up to
// `threads` threads, the caller being thread 0; `thread` < threads, and no two
// calls with the same `thread` overlap (per-thread scratch may be indexed by
// it). Each thread claims the items of its own contiguous range first, then
// steals from the others (cache affinity across calls, load balance when a
// thread is slow). Runs serially in the caller (as one
// call body(0, count, 0)) when threads <= 1, when count <= 1, or when the pool
// is busy with another caller's job (concurrent or nested calls never wait on
// each other).
void ParallelFor(int threads, int64_t count,
                 const std::function<void(int64_t begin, int64_t end, int thread)>& body);

// How long an idle thread spins before sleeping, in microseconds: from
// ACTGRAD_SPIN_US at start-up (0 = sleep at once), default 50.
int SpinMicroseconds();

}  // namespace actgrad
