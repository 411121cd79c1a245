// The CPU measurement backend: times the real kernels of the variant list.
//  - layout "contig": RunVariant (the shipping fast path);
//  - layout "bcast": the public aclnn API (g [rows, 1024], x [1, 1024]) with
//    ScopedKernelOverride forcing the candidate and a repeatable executor.
// A sample loops the kernel for at least min_seconds and reports the time of
// one call, at the cell's n (the octave's geometric centre). With two_points
// it times n/sqrt2 and n*sqrt2 instead (clamped into the octave and to max_n)
// and reports the mean time per element times n: a choice that serves a wide
// size range, but one that hides a crossover inside it (plain vs streaming
// stores, one vs two threads), which is why the tables have octave cells.
// The operands sit in an inputs::PlacedArena at the placement SetPlacement
// chose (0 by default); a placement switch moves them in place, in Prepare
// (untimed) when the caller calls it first, as the search does.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/inputs/placement.h"
#include "tools/tune/accuracy_gate.h"
#include "tools/tune/backend.h"

namespace actgrad::tune {

struct CpuBackendOptions {
  uint64_t max_n = uint64_t(1) << 26;  // 64M elements: memory and time cap per operand
  int max_threads = 0;                 // 0: omp_get_max_threads()
  bool two_points = false;
};

class CpuBackend : public Backend {
 public:
  explicit CpuBackend(const AccuracyGate* gate, CpuBackendOptions opts = {});
  ~CpuBackend() override;

  // SearchSpace
  // Variants x thread counts (1, and from 8K elements max/2 and max).
  std::vector<Choice> Candidates(const Cell& cell) override;
  // Contiguous cells only: chunks of the threaded winner and stage tiles of a
  // staged winner whose working set fills L1d, sqrt(L1d * L2) and L2.
  std::vector<Choice> SplitRefinements(const Cell& cell, const Choice& best) override;
  // The untuned default of the gate's accuracy class (DefaultChoice).
  Choice Default(const Cell& cell) override;
  // The gate's accuracy class (the rule without a gate): the candidates and the default meet it.
  AccuracyClass Class() const;
  // threads=N and stores=plain|nt (the two crossovers of these kernels).
  std::vector<std::string> Traits(const Choice& c) const override;
  int ThreadsAvailable() const override { return ThreadCap(); }  // the max_threads option, else the pool's MaxThreads()

  // Runner
  bool Deterministic() const override { return false; }
  void SetPlacement(int k) override;  // k >= 0 (inputs::PlacementAt)
  void Prepare(const Cell& cell) override;
  std::vector<double> Measure(const Cell& cell, const Choice& c, int reps, double min_seconds) override;

  // Identity
  std::string Name() const override { return "cpu"; }
  nlohmann::json Provenance() override;
  std::string MachineId() override;

  // The sizes a bucket is timed at.
  std::vector<uint64_t> Points(const Cell& cell) const;
  int ThreadCap() const;
  // Where the kernels read g and x and write out since the last Prepare or
  // Measure (null before the first). For tests.
  struct OperandView {
    const void* g;
    const void* x;
    void* out;
    inputs::Placement placement;
  };
  OperandView Operands() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace actgrad::tune
