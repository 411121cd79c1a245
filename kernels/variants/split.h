// How one kernel call's work splits (Split), and the kernel-level defaults
// a zero field of a Split stands for. The one home of these numbers: the
// dispatch, the tuner and the benchmarks read them from here.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace actgrad {

// How a call's n elements split: `threads` threads of the library pool
// (variants/thread_pool.h); `chunk` elements a thread claims at a time
// (0 = DefaultChunk); `stage_tile` elements a staged-upcast variant converts
// to fp32 per step (0 = kDefaultStageTile; other variants ignore it).
// The tiling table stores it (docs/conventions.md), the tuner tunes it.
//
// `tile_rows` x `tile_cols`: for views with a transposed input (layout
// "transposed", runtime/plan.h PlanPath::kRuns), the 2-D tile gathered and
// computed at a time: runs x elements per run (0 = kDefaultTileRows/Cols).
// `transpose_result`: where both inputs are transposed the same way, each
// tile is computed in the inputs' order into a scratch tile, which is then
// transposed into out (one transpose instead of one per input; runtime/plan.h
// Plan::transpose_result). Else the inputs are copied into out's order.
struct Split {
  int threads = 1;
  int64_t chunk = 0;
  int64_t stage_tile = 0;
  int64_t tile_rows = 0;
  int64_t tile_cols = 0;
  bool transpose_result = false;
  bool operator==(const Split&) const = default;
};

// RunVariant runs calls below this many elements on the calling thread,
// whatever the Split says: waking the pool costs more than such a call.
inline constexpr size_t kSerialBelow = 2 * 1024;

// The default chunk (Split::chunk == 0): kChunksPerThread chunks per thread,
// so a thread the OS deschedules (the other core busy) holds up at most one
// chunk while the others take the rest; at least kMinDefaultChunk elements;
// whole cache lines (64 elements).
inline constexpr int kChunksPerThread = 4;
inline constexpr size_t kMinDefaultChunk = 4096;
constexpr size_t DefaultChunk(size_t n, int threads) {
  const size_t per = size_t(kChunksPerThread) * size_t(std::max(threads, 1));
  return std::max(kMinDefaultChunk, ((n + per - 1) / per + 63) / 64 * 64);
}

// Staged upcast (driver-inl.h RunStaged): elements per step when
// Split::stage_tile is 0 (two fp32 scratch arrays of 8 KiB each: L1-sized),
// and the largest stage a call may ask for (larger values are clamped;
// 2 x 256 KiB of per-thread scratch: L2-sized).
inline constexpr size_t kDefaultStageTile = 2048;
inline constexpr size_t kMaxStageTile = 65536;

}  // namespace actgrad
