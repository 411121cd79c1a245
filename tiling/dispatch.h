// Shipping dispatch: (op, dtype, size, layout) -> the kernel and its Split.
// layout: the table cell's (tables::Layout; the runtime's plan decides it).
// Reads the ACTGRAD_TILING_TABLE override, else this machine's table in the
// user cache (UserTableCacheDir), else the compiled-in tiling tables; never
// the tuner.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "actgrad/types.h"
#include "tiling/choice.h"
#include "tiling/compiled_tables.h"
#include "tiling/fallback.h"
#include "tiling/layout.h"

namespace actgrad {

// The kernel for a call of n elements: the active table's entry for n's size
// cell (its octave's, or a neighbour's where a tuned crossover moved the
// boundary; else the nearest tuned octave's) with the threads of its thread
// rule for n, at most MaxThreads() (at a cap of 1, the entry's one-thread
// choice if it has one), or the default (DefaultChoice) where the table has
// no entry or names a variant this CPU cannot run. A ScopedKernelOverride on
// this thread comes first.
KernelChoice ChooseKernel(Op op, DType dtype, GeluApprox mode, uint64_t n, tables::Layout layout);

// The store kind for a call whose out is written in pieces of whole, aligned
// cache lines (a transposed view's tiles, runtime/plan.cc): c's streaming
// twin (StreamingTwin) where c stores plainly and the call's g, x and out
// together exceed the last-level cache (LastLevelCacheBytes: out would not
// stay cached anyway); else c, and c as it is under a ScopedKernelOverride.
// Within the cache streaming loses (transposed f32 at 64K and 256K
// elements, 0.75-3 MB: 1.06-1.21x the time). The table's transposed cells
// are tuned on a view whose out rows are not whole lines (the tuner's sizes,
// 2^h * sqrt(2): 1024 x 23,171 f32), where a streaming store peels every
// piece and plain stores win; on whole lines the streaming twin does not
// peel and skips reading out's lines first (every op and dtype, 16M, one and
// two threads).
KernelChoice StreamingOnWholeLines(const KernelChoice& c, DType dtype, uint64_t n);

// The same decision as a Choice (the variant named), without the override:
// what the library ships for the cell (actgrad-tune --check's incumbent).
Choice TableChoice(Op op, DType dtype, GeluApprox mode, uint64_t n, tables::Layout layout);

// Which table the dispatch uses: its machine id and where it came from
// ("compiled:<json path>", "cache:<path>" or "env:<path>"), and why it was
// chosen.
struct ActiveTableInfo {
  std::string machine_id;
  std::string source;
  // "exact machine id", "same vendor and family, nearest model", "nearest
  // machine facts in ISA family x86-avx512", "portable default",
  // "ACTGRAD_TILING_TABLE", "user cache (this machine's id)"
  std::string reason;
  size_t entries = 0;
  // The table's accuracy class: cells without an entry take its default.
  AccuracyClass accuracy_class = AccuracyClass::kRule;
  // This machine's own table (ACTGRAD_TILING_TABLE, the user cache, the
  // compiled-in table of its id), not the fallback chain's: its store kinds
  // were measured against this machine's cache (else BeyondCacheTwin).
  bool own = false;
  // A fallback (not this machine's table): the compiled-in tables whose
  // series (op, dtype, GELU formula, layout) filled those the first lacks,
  // in chain order.
  std::vector<std::string> gap_tables;
};
const ActiveTableInfo& ActiveTable();
// Which of the active table's cells have candidates it never measured
// (tiling/freshness.h): computed on the first call after a selection, then
// kept; never on the path of a kernel call.
struct Freshness;
const Freshness& ActiveTableFreshness();
// For the benchmarks' context: whose table it is ("this machine's own" or
// "another machine class's") and Freshness::Summary().
std::string ActiveTableFreshnessSummary();

// The user cache of tables, where <dir>/<machine id>.json is this machine's
// own table (used after ACTGRAD_TILING_TABLE, before the compiled-in ones):
// $ACTGRAD_TABLE_CACHE if set, else $XDG_CACHE_HOME/actgrad/tables, else
// $HOME/.cache/actgrad/tables; "" when none of them is set.
std::string UserTableCacheDir();
std::string ActiveTableName();

// While alive, ChooseKernel on this thread returns `forced` (for the tuner's
// measurements through the aclnn API and for tests).
class ScopedKernelOverride {
 public:
  explicit ScopedKernelOverride(const KernelChoice& forced);
  ~ScopedKernelOverride();
  ScopedKernelOverride(const ScopedKernelOverride&) = delete;
  ScopedKernelOverride& operator=(const ScopedKernelOverride&) = delete;

 private:
  const KernelChoice* previous_;
  KernelChoice forced_;
};

// Re-selects the table (as at start-up), optionally pretending to be another
// machine; for tests and tools. as_new_machine: as a machine without a table
// of its own (no ACTGRAD_TILING_TABLE, no user cache, no compiled-in table of
// its id: what the fallback chain gives it). Not thread-safe with running ops.
void ReloadTilingTable(const std::string& machine_id_override = "", const std::string& isa_override = "",
                       bool as_new_machine = false);

// Re-selects the table as the machine `facts` describes, all of it: its id
// and ISA family pick the table, its flags decide which variants it runs
// (RunsOn), its caches the store kinds (InCacheTwin, BeyondCacheTwin,
// StreamingOnWholeLines); an unknown fact (0) stays this machine's. For
// tests, which pose as each committed table's machine (CompiledTableFacts)
// on whatever CPU runs them. The runtime never runs a posed choice this CPU
// cannot run: it takes this CPU's default then (runtime/plan.cc).
// as_new_machine as for ReloadTilingTable. ReloadTilingTable() ends a pose.
void PoseAsMachine(const MachineFacts& facts, bool as_new_machine = false);
// The machine a compiled-in table was tuned on, from its provenance: id,
// ISA family, vector flags, L2, last level, cores.
MachineFacts CompiledTableFacts(const tables::CompiledTable& t);

}  // namespace actgrad
