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

namespace actgrad::tune {

// One cell of the table: op x dtype x layout x size octave, measured at n.
struct Bucket {
  Op op;
  DType dtype;
  std::string layout;  // "contig" | "bcast"
  int octave;          // n in [2^octave, 2^(octave+1)) (tables::Entry::octave)
  uint64_t n;          // the size measured for this cell
  // GELU only: which formula (erf = kNone, or tanh); kNone for the other ops.
  // (Added by the tuner; last so that existing aggregate initializers compile.)
  GeluApprox mode = GeluApprox::kNone;
};

// One point of the search space. For the CPU: a variant name, the per-thread
// chunk and the thread count. For Atlas: a kernel variant, the tile length
// and the block (core) count; backend-specific knobs go in `extra`.
struct Candidate {
  std::string variant;
  int64_t tile = 0;
  int threads = 1;
  nlohmann::json extra = nlohmann::json::object();
  // Stable identity used by the resume log.
  std::string Key() const {
    return variant + "|" + std::to_string(tile) + "|" + std::to_string(threads) +
           (extra.empty() ? "" : "|" + extra.dump());
  }
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string Name() const = 0;  // "cpu", "atlas-model", "atlas-device"
  // A deterministic backend (a model) needs one sample per candidate.
  virtual bool Deterministic() const = 0;
  // Candidates for a bucket; only accuracy-passing variants.
  virtual std::vector<Candidate> Candidates(const Bucket& b) = 0;
  // The untuned default (the incumbent when no table entry exists).
  virtual Candidate Default(const Bucket& b) = 0;
  // Sets up what measuring cell `b` needs (data, buffers) before its first
  // sample, outside the samples' timed cost (the budget's clock), so a cell
  // that needs larger buffers is not priced as if each sample paid for them.
  virtual void Prepare(const Bucket& b) { (void)b; }
  // `reps` samples of the time of one call, in nanoseconds; each sample runs
  // for at least min_seconds (a model backend ignores it).
  virtual std::vector<double> Measure(const Bucket& b, const Candidate& c, int reps, double min_seconds) = 0;
  // Where a candidate stands on the dimensions whose best value flips with
  // size or machine state (a crossover: one vs two threads, plain vs
  // streaming stores), as "name=value" strings. The search takes the best
  // candidate of each value to its final round, so such a choice is made on
  // the long interleaved samples, not on a round-0 sample or two.
  virtual std::vector<std::string> Traits(const Candidate& c) const {
    return {"threads=" + std::to_string(c.threads)};
  }
  // Provenance block of the table (see docs/conventions.md).
  virtual nlohmann::json Provenance() = 0;
  virtual std::string MachineId() = 0;
};

}  // namespace actgrad::tune
