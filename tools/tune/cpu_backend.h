// The CPU measurement backend: times the real kernels of the variant list.
//  - layout "contig": RunVariant on aligned buffers (the shipping fast path);
//  - layout "bcast": the public aclnn API (g [rows, 1024], x [1, 1024]) with
//    ScopedKernelOverride forcing the candidate and a repeatable executor.
// A sample loops the kernel for at least min_seconds and reports the time of
// one call, at the cell's n (the octave's geometric centre). With two_points
// it times n/sqrt2 and n*sqrt2 instead (clamped into the octave and to max_n)
// and reports the mean time per element times n: a choice that serves a wide
// size range, but one that hides a crossover inside it (plain vs streaming
// stores, one vs two threads), which is why the tables have octave cells.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

  std::string Name() const override { return "cpu"; }
  bool Deterministic() const override { return false; }
  std::vector<Candidate> Candidates(const Bucket& b) override;
  Candidate Default(const Bucket& b) override;
  void Prepare(const Bucket& b) override;
  // threads=N and stores=plain|nt (the two crossovers of these kernels).
  std::vector<std::string> Traits(const Candidate& c) const override;
  std::vector<double> Measure(const Bucket& b, const Candidate& c, int reps, double min_seconds) override;
  nlohmann::json Provenance() override;
  std::string MachineId() override;

  // The sizes a bucket is timed at.
  std::vector<uint64_t> Points(const Bucket& b) const;
  int MaxThreads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Does the op broadcast its inputs (per the spec)? GELU and Softshrink do;
// SELU, Hardswish and LogitGrad require equal shapes.
bool OpBroadcasts(Op op);

}  // namespace actgrad::tune
