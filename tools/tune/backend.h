// The tuner's measurement backend. The CPU backend times real kernels; the
// Atlas model backend prices AscendC tilings with a cost model; a device
// backend times them on an NPU. The search (successive halving, significance
// test, resume log) is the tuner's and does not change per backend.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actgrad/types.h"
#include "tiling/choice.h"

namespace actgrad::tune {

// One cell of the table: op x dtype x GELU mode x layout x size octave,
// measured at n.
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

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string Name() const = 0;  // "cpu", "atlas-model", "atlas-device"
  // A deterministic backend (a model) needs one sample per candidate.
  virtual bool Deterministic() const = 0;
  // Candidates for a cell; only accuracy-passing variants. Splits beyond
  // the thread count (chunk, stage tile) come from SplitRefinements.
  virtual std::vector<Choice> Candidates(const Cell& b) = 0;
  // Variations of the winner's split (chunk sizes, stage tiles) that the
  // tuner measures against it in a cell's last stage, so that these
  // dimensions cost a few candidates per cell, not a product with the rest.
  virtual std::vector<Choice> SplitRefinements(const Cell& b, const Choice& best) {
    (void)b, (void)best;
    return {};
  }
  // The untuned default (the incumbent when no table entry exists).
  virtual Choice Default(const Cell& b) = 0;
  // Sets up what measuring cell `b` needs (data, buffers) before its first
  // sample, outside the samples' timed cost (the budget's clock), so a cell
  // that needs larger buffers is not priced as if each sample paid for them.
  virtual void Prepare(const Cell& b) { (void)b; }
  // Where the operands sit for the Prepare and Measure calls that follow:
  // placement k of the documented set (tools/inputs/placement.h: byte offsets
  // of g, x and out within their 4 KiB pages); 0 until set. A streaming
  // kernel's time can depend on it (4K aliasing, cache-set conflicts), so the
  // search spreads its final round over several placements. A backend whose
  // times do not depend on where host buffers sit (a cost model, a device)
  // keeps this default and ignores it.
  virtual void SetPlacement(int k) { (void)k; }
  // `reps` samples of the time of one call, in nanoseconds; each sample runs
  // for at least min_seconds (a model backend ignores it).
  virtual std::vector<double> Measure(const Cell& b, const Choice& c, int reps, double min_seconds) = 0;
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
  // Provenance block of the table (see docs/conventions.md).
  virtual nlohmann::json Provenance() = 0;
  virtual std::string MachineId() = 0;
};

}  // namespace actgrad::tune
