// The suite's one pseudo-random generator: splitmix64 (Steele, Lea, Flood,
// "Fast splittable pseudorandom number generators", 2014). The integer
// sequence is the same on every platform, and so is Uniform() where the
// compiler does not fuse lo + (hi - lo) * u into an FMA (op_inputs.cc builds
// with -ffp-contract=off). Normal() and LogUniform() go through the C
// library's log/cos/exp, so they may differ by an ulp between libms (the
// operands are rounded to float or narrower afterwards).
// Used by the benchmarks, the tuner, the accuracy tool and the tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "tools/inputs/hash.h"

namespace actgrad::inputs {

struct Rng {
  uint64_t s;  // the state: any value is a valid seed

  uint64_t Next() { return SplitMix64(&s); }
  // [0, 1) with 53 random bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // N(0, 1), Box-Muller (one value per two draws).
  double Normal() {
    const double u1 = std::max(Uniform(), 1e-300);
    const double u2 = Uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  // exp(U[log lo, log hi)): every decade of [lo, hi) equally often (lo > 0).
  double LogUniform(double lo, double hi) { return std::exp(Uniform(std::log(lo), std::log(hi))); }
};

}  // namespace actgrad::inputs
