// The one list of kernel variants (XNNPACK style). Tests, benchmarks, the
// accuracy tool, the tuner and the shipping dispatch all read this list.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "actgrad/types.h"
#include "variants/cache.h"  // L2CacheBytes, LastLevelCacheBytes: the run rules read them
#include "variants/split.h"

namespace actgrad {

// Several runs of one kernel call (KernelArgs::runs), for views whose
// innermost dimension is contiguous: run r computes n elements from
// g + g_off[r] and x + x_off[r] into out + out_off[r] (byte offsets from
// three bases). Offsets, not pointers: the runtime hands the kernel slices
// of the row table it builds once per plan (runtime/row_walker.h), instead
// of writing three pointers per row for every tile (that store-bound walk
// costs as much as the kernel at 64K).
// x may be a splat (splat_x: a row broadcast, one value per run): x_off[r]
// is the offset of that one element, which the kernel broadcasts to a vector
// of copies once per run and reads with stride 0. g is never a splat (the
// runtime expands a broadcast g into tiles: runtime/plan.h Plan::packed), so
// that the kernels compile one loop for views and one for row broadcasts,
// not three.
// PrefetchRuns' default distance (runs ahead) and its bytes per run and input.
inline constexpr size_t kPrefetchRuns = 8, kPrefetchBytes = 512;

struct Runs {
  size_t count = 0;
  const char* g = nullptr;
  const char* x = nullptr;
  char* out = nullptr;
  const int64_t* g_off = nullptr;
  const int64_t* x_off = nullptr;
  const int64_t* out_off = nullptr;
  bool splat_x = false;
  // PrefetchRuns' distance in runs; 0 when the view's data fits the cache
  // (there the prefetches only cost).
  uint32_t prefetch_runs = kPrefetchRuns;
};

// Arguments of a kernel: n elements of g, x and out, all of the variant's
// dtype (runs == nullptr), or runs->count runs of n elements each (g, x and
// out unused). out may alias g or x exactly (in-place).
struct KernelArgs {
  const void* g;
  const void* x;
  void* out;
  size_t n;
  OpParams params;
  size_t stage_tile;  // Split::stage_tile: elements staged per step (upcast "staged"); 0 = kDefaultStageTile
  const Runs* runs = nullptr;
};

// One run of a kernel call: where it reads and writes, and x's stride (1, or
// 0 for a splat). Every kernel driver loops over
// RunAt(a, 0 .. RunCount(a) - 1), so the contiguous call and the views share
// one loop (a plain loop, not a callback: the body stays inlined).
template <typename T>
struct RunPtrs {
  const T* g;
  const T* x;
  T* out;
  size_t xs;  // element stride of x: 1, or 0 (splat)
};
inline size_t RunCount(const KernelArgs& a) { return a.runs ? a.runs->count : 1; }
// The offsets of a call without runs: its one run at its bases.
inline constexpr int64_t kOneRunAtBase[1] = {0};

// Before run ri of a call with several: prefetch the inputs prefetch_runs
// runs ahead (the first call also the runs up to there). A view's runs lie
// apart, so the hardware prefetchers lose them; from DRAM each run would
// otherwise wait for its misses (SELU f32 on the strided view at 16M: 3.3x
// the contiguous time without). `bytes`: one run's bytes of an input.
// Contiguous runs of at least kStreamPrefetchFrom bytes per input (past the
// L2) prefetch both inputs kStreamPrefetchAhead bytes ahead of the loop: a
// kernel with tens of operations per line otherwise leaves too few misses in
// flight to stream from DRAM on one core (GELU fp16 at 16M: 6.3 ms without,
// 4.2 ms with, against 4.9 ms of the stream; SELU bf16: 4.9 and 3.9 ms).
inline constexpr size_t kStreamPrefetchFrom = size_t(2) << 20, kStreamPrefetchAhead = 4096;

// One cache line into L1. Inline asm, not __builtin_prefetch: GCC 12 deletes
// a loop whose body is only __builtin_prefetch (it has no side effect).
inline void PrefetchLine(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__aarch64__)
  asm volatile("prfm pldl1keep, %a0" : : "p"(p));
#else
  __builtin_prefetch(p);
#endif
}
// The same from the Runs' fields (bases and offsets of g and x, count,
// prefetch_runs as `ahead`).
inline void PrefetchRunsAhead(const char* g, const int64_t* g_off, const char* x, const int64_t* x_off, size_t count,
                              size_t ahead, size_t ri, size_t bytes) {
  const size_t b = bytes < kPrefetchBytes ? bytes : kPrefetchBytes;
  const size_t first = ri == 0 ? 1 : ri + ahead, last = ri + ahead;
  for (size_t k = first; k <= last && k < count; ++k)
    for (size_t o = 0; o < b; o += kCacheLineBytes) {
      PrefetchLine(g + g_off[k] + o);
      PrefetchLine(x + x_off[k] + o);
    }
}
inline void PrefetchRuns(const KernelArgs& a, size_t ri, size_t bytes) {
  const Runs* r = a.runs;
  if (r && r->prefetch_runs) PrefetchRunsAhead(r->g, r->g_off, r->x, r->x_off, r->count, r->prefetch_runs, ri, bytes);
}
template <typename T>
inline RunPtrs<T> RunAt(const KernelArgs& a, size_t i) {
  const Runs* r = a.runs;
  if (!r) return {static_cast<const T*>(a.g), static_cast<const T*>(a.x), static_cast<T*>(a.out), 1};
  return {reinterpret_cast<const T*>(r->g + r->g_off[i]), reinterpret_cast<const T*>(r->x + r->x_off[i]),
          reinterpret_cast<T*>(r->out + r->out_off[i]), r->splat_x ? size_t(0) : size_t(1)};
}

using KernelFn = void (*)(const KernelArgs&);

struct Variant {
  std::string name;     // op.dtype.upcast.approx.uN.target[.nt]
  Op op;
  DType dtype;
  std::string upcast;   // none | reg | staged | f16native | bf16cvt | gather | bits | scalar
  std::string approx;   // op-specific approximation, "exact" if none
  int unroll;           // vectors per iteration
  std::string target;   // sse4 | avx2 | avx3 | avx512 | avx512bf16 | avx512fp16 | neon | sve | emu128 | scalar
  bool nt_stores;       // non-temporal stores
  GeluApprox gelu_mode; // which GELU formula this variant computes (kNone for other ops)
  KernelFn fn;
  bool supported;       // this CPU can run it (checked once at start-up)
  double claimed_max_err;  // claimed bound of the approximation (spec error metric, g = 1), 0 if exact
  bool factor_table = false;  // reads a factor table (upcast "gather", factor_tables.h)
};

// Every compiled variant, including those this CPU cannot run (supported=false).
const std::vector<Variant>& Variants();
// nullptr when no variant has that name.
const Variant* FindVariant(std::string_view name);
// The variant doing v's work with streaming (non-temporal) stores: v itself
// if it streams, else the one with v's fields (op, dtype, upcast, approx,
// gelu_mode, target, unroll) and streaming stores, or for unrolls without one
// (u1, u8; the native families' u2 too) the u2 or u4 one; nullptr where none
// runs on this CPU (staged variants have none). The tuner's transposed
// candidates and the runtime's whole-line rule (tiling/dispatch.h
// StreamingOnWholeLines) both use it. Found by the fields, never the name.
const Variant* StreamingTwin(const Variant& v);
// The same on a machine that runs the variants `runs` accepts (the dispatch
// posing as another machine: tiling/dispatch.h PoseAsMachine).
const Variant* StreamingTwin(const Variant& v, const std::function<bool(const Variant&)>& runs);
// The other way: the variant doing v's work with plain stores, v itself if
// it stores plainly, else the one with v's fields and plain stores; nullptr
// where that does not run on this CPU. For writes into a scratch tile that
// must stay cached (Split::transpose_result: the tuner's candidates, the
// transpose probe).
const Variant* PlainTwin(const Variant& v);
// Index in Variants(), or -1.
int VariantIndex(std::string_view name);
// Preference of targets, widest first (0 = best; unknown targets last): the
// untuned default takes the best supported one, the tuner's prior order too.
int TargetRank(std::string_view target);
// How close to the double reference a table's choices must be. kRule: the
// spec's accuracy rule (every shippable variant). kNearExact (opt-in, a
// user's own table): also at most the output's half-ulp plus 1e-6 from the
// reference in every element (the bound: kernels/reference/accuracy_rule.h
// ClassBound), as PyTorch's and oneDNN's GELU are; it rules out the fitted
// GELU approximations and fp16 arithmetic.
enum class AccuracyClass { kRule, kNearExact };
inline constexpr std::string_view AccuracyClassName(AccuracyClass c) {
  return c == AccuracyClass::kNearExact ? "near-exact" : "rule";
}
// "rule" or "near-exact"; false for anything else.
inline bool ParseAccuracyClass(std::string_view s, AccuracyClass* out) {
  if (s == "rule") return *out = AccuracyClass::kRule, true;
  if (s == "near-exact") return *out = AccuracyClass::kNearExact, true;
  return false;
}

// The portable default for (op, dtype, gelu mode): best supported target,
// register upcast (or bf16cvt), the most accurate approximation of the
// class (GELU: erf_as and tanh_hwy for the rule, erf_r6 and tanh_exp near
// exact), unroll 2, plain stores.
const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode = GeluApprox::kNone,
                              AccuracyClass cls = AccuracyClass::kRule);
// The same for a machine that runs the variants `runs` accepts (the
// dispatch posing as another machine: tiling/dispatch.h PoseAsMachine).
const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode, AccuracyClass cls,
                              const std::function<bool(const Variant&)>& runs);

// Builds what the variant reads besides its operands (a factor table) now,
// so that its first run does not: the runtime calls it in phase one.
void PrepareVariant(const Variant& v, const OpParams& p);

// Runs a variant over n elements as `split` says (split.h): chunks of
// split.chunk elements claimed dynamically by split.threads threads of the
// library pool (threads <= 1, or n < kSerialBelow: on the calling thread);
// split.stage_tile goes to the kernel as KernelArgs::stage_tile.
void RunVariant(const Variant& v, const KernelArgs& args, const Split& split);

}  // namespace actgrad
