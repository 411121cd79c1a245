// Shared pieces of the benchmark binaries: placed operands, the roofline
// loops (memcpy and a STREAM-like 2-read-1-write loop), the in-run bandwidth
// limit behind `pct_of_bandwidth`, realistic operands per op, the counters and
// the JSON context. See docs/conventions.md for names, counters and keys.
#pragma once
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "actgrad/types.h"
#include "common/layouts.h"
#include "tools/inputs/placement.h"

namespace actgrad::peers {
class Peer;
}  // namespace actgrad::peers

namespace actgrad::bench {

// ---------------------------------------------------------------- threads, sizes
// OpenMP thread counts: 1, 2, 4, ... up to ThreadsAtStart(), and ThreadsAtStart().
// ThreadsAtStart() is omp_get_max_threads() as seen at the first call (call it
// early in main: libtorch lowers the calling thread's OpenMP default when it
// initialises). Not the library's cap (MaxThreads() of the pool), which
// follows the omp_set_num_threads the benchmarks call per thread count.
int ThreadsAtStart();
std::vector<int> ThreadCounts();
// Powers of 4 from 1K to 64M elements.
std::vector<size_t> PowerOf4Sizes();
// Odd sizes whose tails are not a multiple of any vector width.
std::vector<size_t> OddSizes();
// Sizes the user asked for with --actgrad_sizes=a,b,c (see ParseOwnFlags), or
// PowerOf4Sizes() + OddSizes().
std::vector<size_t> SweepSizes();
std::vector<int> SweepThreads();

// Removes this suite's own --actgrad_* flags from argv (before
// benchmark::Initialize sees them):
//   --actgrad_sizes=1024,65536    sizes registered (default: PowerOf4Sizes + OddSizes)
//   --actgrad_threads=1,2         thread counts registered (default: ThreadCounts())
//   --actgrad_cache_mb=4096       operand cache budget (MiB)
//   --actgrad_limit_ms=15         length of one sample of the in-run limit
//   --actgrad_chunk=0             per-thread chunk of the variant benchmarks (0 = even split)
//   --actgrad_placements=0,1,2,3  operand placements registered (tools/inputs/placement.h;
//                                 default 0 .. kDefaultPlacements-1); one index fixes
//                                 one placement, to reproduce a case
//   --actgrad_check_peers         run only the correctness mode (CheckPeers) and exit
void ParseOwnFlags(int* argc, char** argv);
size_t ChunkFlag();
bool CheckPeersOnlyFlag();
// The placements every benchmark runs on: each benchmark is registered once
// per placement, its name ending in /place:<k> (BenchName).
std::vector<inputs::Placement> SweepPlacements();
// "0,1,2,3": the indices of SweepPlacements(), for the context.
std::string PlacementsText();

// ---------------------------------------------------------------- roofline
enum class Roof { kMemcpy, kStreamPlain, kStreamNt };
const char* RoofName(Roof r);  // memcpy | stream_plain | stream_nt
// The instruction set the stream loops use on this CPU, e.g. "avx512f".
std::string StreamIsa(bool nt);
// Bytes read + written by one call over n f32 elements: 8n (memcpy), 12n (stream).
double RoofBytes(Roof r, size_t n);
// memcpy: dst = a.  stream: dst = a + s * b (s = 3).  threads <= 1 runs on the
// calling thread; otherwise the range is split in 64-byte aligned parts over
// an OpenMP team of `threads`.
void RunRoof(Roof r, const float* a, const float* b, float* dst, size_t n, int threads);

// ---------------------------------------------------------------- in-run limit
// The bandwidth limit (bytes/s) of this run for n f32 elements and `threads`:
// the best of stream_plain and stream_nt, each the median of 7 short samples,
// on every placement of SweepPlacements() (the best placement counts: the
// limit is what the machine can do), measured once per (n, threads) at first
// use and then memoised. For T > 1
// threads it is the best over the thread counts t <= T of ThreadCounts()
// (a T-thread budget may use one thread, and small n run best on one).
double LimitBytesPerSecond(size_t n_f32, int threads);

// Sets the counters of every benchmark from the wall-clock seconds of the
// timed loop:
//   bytes_per_second  = bytes_per_call * iterations / seconds
//   items_per_second  = items_per_call * iterations / seconds
//   pct_of_bandwidth  = 100 * bytes_per_second / LimitBytesPerSecond(n, threads)
//   pct_of_bandwidth_same_bytes: the same against the limit of a stream over
//                     the same footprint (n_f32 = bytes_per_call / 12), which
//                     differs from pct_of_bandwidth for 1- and 2-byte dtypes
//   roof_bytes_per_second = the limit used
void SetCounters(benchmark::State& st, double seconds, double bytes_per_call, double items_per_call,
                 size_t n, int threads);

// Runs f() once per benchmark iteration and returns the wall-clock seconds of
// the whole loop (the benchmarks report rates against wall time, because
// worker threads do not show in the main thread's CPU time).
template <class F>
double TimedLoop(benchmark::State& st, F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : st) {
    f();
    benchmark::ClobberMemory();
  }
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(t1 - t0).count();
}

// Registers a benchmark whose iterations Google Benchmark sizes by wall-clock
// time (UseRealTime). A call that runs on other threads (oneDNN's SYCL queue)
// leaves the measuring thread idle, and sizing by its CPU time ran such a
// benchmark 5-10x longer than --benchmark_min_time. Google Benchmark appends
// "/real_time" to the name; reports/names.py leaves it out of the identity.
template <class F>
void RegisterWallClock(const std::string& name, F&& fn) {
  benchmark::RegisterBenchmark(name.c_str(), std::forward<F>(fn))->UseRealTime();
}

// ---------------------------------------------------------------- operands
// Default op parameters of the benchmarks: lambd = 0.5, eps = -1, GELU erf.
OpParams DefaultParams(Op op);
// Fill `count` elements of dtype with the op's gradient (g; dy for LogitGrad)
// or its input (x: y = selu(x) for SELU, self otherwise): the operands of
// tools/inputs/op_inputs.h (value ranges there), a fixed 2^20-element pattern
// per (op, dtype, role), tiled.
void FillG(Op op, DType dt, void* dst, size_t count);
void FillX(Op op, DType dt, void* dst, size_t count);

// Contiguous operands of n elements at one placement: g and x filled, out
// written once.
struct Operands {
  inputs::PlacedArena arena;
  void* g = nullptr;
  void* x = nullptr;
  void* out = nullptr;
  size_t n = 0;
};
// Cached: consecutive benchmarks (and every timing trial of one benchmark)
// on the same (op, dtype, n, placement) share the buffers; the cache keeps
// the most recently used sets within --actgrad_cache_mb.
std::shared_ptr<Operands> GetOperands(Op op, DType dt, size_t n, const inputs::Placement& place);
// Generic cache entry for callers with their own layout (the API benchmark).
std::shared_ptr<void> CacheGet(const std::string& key);
void CachePut(const std::string& key, std::shared_ptr<void> value, size_t bytes);
// Evicts the oldest entries until `bytes` more fit in the budget (call before
// allocating a new entry, so that old buffers are freed first).
void CacheReserve(size_t bytes);
void CacheClear();

// ---------------------------------------------------------------- names
// "<kind>/<subject>/n:<n>/thr:<t>/place:<k>"
std::string BenchName(const std::string& kind, const std::string& subject, size_t n, int threads,
                      const inputs::Placement& place);
// Records the placement of a run: the counter `placement` (its index) and the
// label "g+0,x+0,out+64" (docs/conventions.md).
void SetPlacement(benchmark::State& st, const inputs::Placement& place);

// ---------------------------------------------------------------- context
struct ContextInfo {
  std::string tiling_table = "none";   // name of the tiling table in use
  // Whose table it is and which of its cells have candidates it never
  // measured (tiling/freshness.h): "this machine's own table: tuned among ..."
  std::string tiling_table_freshness = "unknown";
  std::string variant_targets;         // targets of the supported variants
  std::string peers;                   // peers compiled in
  std::string binary;                  // actgrad-bench or actgrad-bench-variants
};
// Adds the actgrad_* keys of docs/conventions.md (and a few more) with
// benchmark::AddCustomContext. Call once, before RunSpecifiedBenchmarks.
void AddContext(const ContextInfo& info);
std::string CpuModel();
std::string MachineId();     // <vendor>-<family>-<model>, lower case
std::string HwyTargets();    // Highway targets this CPU supports, lower case
std::string CompilerId();    // e.g. "GNU 12.2.0"

// ---------------------------------------------------------------- registration
// roof/<memcpy|stream_plain|stream_nt>/n:N/thr:T/place:K for every size, thread count and placement.
void RegisterRoofBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads);
// An op as the benchmarks name it: the five ops, GELU in both forms
// ("gelu_bwd" is GELU erf, "gelu_bwd_tanh" aclnnGeluBackwardV2 with
// approximate = "tanh"; docs/conventions.md).
struct OpForm {
  Op op;
  GeluApprox gelu = GeluApprox::kNone;
};
const std::vector<OpForm>& OpForms();
std::string FormToken(const OpForm& f);   // "selu_bwd", ..., "gelu_bwd_tanh"
OpParams ParamsOf(const OpForm& f);       // DefaultParams with the form's GELU approximation

// Our API's result on a layout's views (layouts.h) over the operands of
// GetOperands(op, dt, n, place), written into their out buffer: true, or
// false with the reason in *why.
using ApiFn = std::function<bool(const OpForm& form, DType dt, Layout layout, size_t n,
                                 const inputs::Placement& place, std::string* why)>;
// peer/<peer>.<form>.<dtype>/n:N/thr:T/place:K for every compiled peer, op
// form and dtype it supports, every thread count it can honour in this
// process (Peer::RunsWithThreads) and every placement (the same operands as
// ours). With the API (actgrad-bench) also the peers that compute on views
// (PyTorch) on the other layouts of layouts.h, on the same views as
// api/<form>.<dtype>.<layout>: peer/<peer>.<form>.<dtype>.<layout>/...,
// bytes_per_second counted as the API benchmark of that layout counts them.
void RegisterPeerBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads,
                            const ApiFn& api = {});
// The correctness mode: every compiled peer (and, given, the API) on every
// op form x float dtype x layout it computes, on small operands, against the
// double reference under the spec's accuracy rule (kernels/reference/accuracy_rule.h),
// so that no benchmark times another formula or other parameters. Prints a
// line per case (every_case) or per failing case, and a summary, to `out`;
// true when every case passes.
bool CheckPeers(const ApiFn& api, std::FILE* out, bool every_case);
// One case of the correctness mode: `compute` writes the result for n
// elements of (form, dt) on the layout's views into ops.out (false and why
// when it cannot). Ours is held to the whole rule; a peer to the rule's hard
// bound and specials, leaving out the op's branch points where
// implementations pick either one-sided derivative. "" when it passes, else
// the first failing element; prints the case's line (named `who`) when
// every_case or failing.
using ComputeFn = std::function<bool(Operands& ops, size_t n, std::string* why)>;
enum class Held { kWholeRule, kHardBound };
std::string CheckCase(const std::string& who, Held held, const ComputeFn& compute, const OpForm& form, DType dt,
                      Layout layout, std::FILE* out, bool every_case);
// The ComputeFn of a peer on one thread: its view path, or its contiguous one.
ComputeFn PeerCompute(peers::Peer& peer, const OpForm& form, DType dt, Layout layout);

// "torch,dnnl" (or "none")
std::string PeerNames();

}  // namespace actgrad::bench
