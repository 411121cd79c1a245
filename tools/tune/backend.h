// The tuner's measurement backend, in three parts: the search space, the
// runner that measures, and the identity of the measurements. The search
// (strategy.h, the resume log) is the tuner's and does not change per
// backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actgrad/types.h"
#include "tiling/choice.h"

namespace actgrad::tune {

// One cell of the table: op x dtype x GELU mode x layout x size octave
// (tiling/size_cells.h), measured at n. Its log key, a string, is CellKey
// (tuner.h): "<op>/<dtype>/<mode>/<layout>/o<octave>[@n]"; a cell is always
// this tuple, its key always a `key`.
struct Cell {
  Op op;
  DType dtype;
  std::string layout;  // tables::LayoutName: "contig" | "bcast" | "strided" | "transposed"
  int octave;          // n in [2^octave, 2^(octave+1)) (tables::Entry::octave)
  uint64_t n;          // the size measured for this cell
  // GELU only: which formula (erf = kNone, or tanh); kNone for the other ops.
  // (Last so that aggregate initializers without it compile.)
  GeluApprox mode = GeluApprox::kNone;
};

// A point of the search space is a Choice (tiling/choice.h): for the CPU a
// variant and its Split; for Atlas an Atlas variant, the block dim
// (split.threads) and the UB tile length (split.stage_tile).

// The three parts of a backend, apart as Kernel Tuner keeps its search
// space, its runners and its cache key apart: what can be chosen
// (SearchSpace), what measures (Runner) and whose measurements they are
// (Identity). A Strategy (strategy.h) reads the space's traits and measures
// through the runner; the log and the table are keyed by the identity.

// What can be chosen for a cell: the candidates, the refinements of a
// winner's split, the untuned default, and the dimensions that cross over.
class SearchSpace {
 public:
  virtual ~SearchSpace() = default;
  // Candidates for a cell; only accuracy-passing variants. Splits beyond
  // the thread count (chunk, stage tile) come from SplitRefinements.
  virtual std::vector<Choice> Candidates(const Cell& cell) = 0;
  // Variations of the winner's split (chunk sizes, stage tiles) that the
  // tuner measures against it in a cell's last stage, so that these
  // dimensions cost a few candidates per cell, not a product with the rest.
  virtual std::vector<Choice> SplitRefinements(const Cell& cell, const Choice& best) {
    (void)cell, (void)best;
    return {};
  }
  // The untuned default (the incumbent when no table entry exists).
  virtual Choice Default(const Cell& cell) = 0;
  // Where a candidate stands on the dimensions whose best value flips with
  // size or machine state (a crossover: one vs two threads, plain vs
  // streaming stores), as "name=value" strings. The search takes the best
  // candidate of each value to its final round, so such a choice is made on
  // the long interleaved samples, not on a round-0 sample or two.
  virtual std::vector<std::string> Traits(const Choice& c) const {
    return {"threads=" + std::to_string(c.split.threads)};
  }
  // Whether callers can cap the threads below the table's (the CPU:
  // OMP_NUM_THREADS, omp_set_num_threads), so that an entry needs its
  // one-thread fallback. An Atlas launch's block dim is the table's own.
  virtual bool CallersCapThreads() const { return true; }
  // The most threads a choice can use here: a table entry's thread rule is
  // evaluated with it (--verify). Unlimited for backends whose "threads" are
  // not a CPU's (Atlas block dims).
  virtual int ThreadsAvailable() const { return 1 << 20; }
};

// What measures a candidate of a cell.
class Runner {
 public:
  virtual ~Runner() = default;
  // A deterministic runner (a model) needs one sample per candidate.
  virtual bool Deterministic() const = 0;
  // Sets up what measuring `cell` needs (data, buffers) before its first
  // sample, outside the samples' timed cost (the budget's clock), so a cell
  // that needs larger buffers is not priced as if each sample paid for them.
  virtual void Prepare(const Cell& cell) { (void)cell; }
  // Where the operands sit for the Prepare and Measure calls that follow:
  // placement k of the documented set (tools/inputs/placement.h: byte offsets
  // of g, x and out within their 4 KiB pages); 0 until set. A streaming
  // kernel's time can depend on it (4K aliasing, cache-set conflicts), so the
  // search spreads its final round over several placements. A runner whose
  // times do not depend on where host buffers sit (a cost model, a device)
  // keeps this default and ignores it.
  virtual void SetPlacement(int k) { (void)k; }
  // `reps` samples of the time of one call, in nanoseconds; each sample runs
  // for at least min_seconds (a model ignores it).
  virtual std::vector<double> Measure(const Cell& cell, const Choice& c, int reps, double min_seconds) = 0;
};

// Whose measurements these are: the backend's name and the machine's id
// (the log's and the table's key, with the measurement key of
// measurement_key.h) and the table's provenance.
class Identity {
 public:
  virtual ~Identity() = default;
  virtual std::string Name() const = 0;  // "cpu", "atlas-model", "atlas-device"
  virtual std::string MachineId() = 0;
  // Provenance block of the table (see docs/conventions.md).
  virtual nlohmann::json Provenance() = 0;
};

// A measurement backend: the three together. The CPU backend times real
// kernels (cpu_backend.h); the Atlas model backend prices AscendC tilings
// with a cost model; a device backend times them on an NPU (atlas/tune).
class Backend : public SearchSpace, public Runner, public Identity {};

}  // namespace actgrad::tune
