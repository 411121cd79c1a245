// Inputs of the accuracy runs, exactly as shared/spec/operators.md ("Inputs
// for accuracy runs") asks, with their double reference:
// - fp16 / bf16: all 65,536 bit patterns of x, once with g = 1 and once with
//   random g (N(0,1) rounded to the dtype), for every parameter case;
// - fp32: `fp32_count` values per parameter case in the op's range (GELU
//   U[-10,10] + N(0,1); SELU y = selu(x), x in U[-30,5]; Hardswish U[-5,5]
//   with exact +-3; Softshrink U[-2,2] with exact +-lambd; LogitGrad U[0,1]
//   with exact 0, eps, 1-eps, 1), g = 1 on even and N(0,1) on odd elements;
// - in every op and float dtype: NaN, +-Inf, +-0, denormals, the smallest
//   normal and the largest finite values of x, each with several g, and a
//   block of special g (NaN, +-Inf, +-0, denormal, largest finite) on benign x;
// - SELU i8: every (g, y) pair; SELU i32: random, small and extreme values;
// - per float parameter case, a g-sweep case (InputCase::sweep): g in {+Inf,
//   -Inf, +max, -max, NaN} against, for fp16/bf16, every x bit pattern, and
//   for fp32 a dense grid over the op's range and tails (GELU all of
//   [-40, -5] and [5, 40]) plus, for each g, the fp32 x on both sides of every
//   point where the reference's class (NaN, +Inf, -Inf, finite) changes
//   (GELU's last non-zero factor and root, SELU's y = -alpha*scale,
//   Hardswish's overflow at x = 1.5 + 1 ulp, ...).
// Parameter cases: Softshrink lambd 0.5 and 1/3 (full size) and 0 (small);
// LogitGrad eps -1, 0, 1e-6, 0.25 (full size) and 1, 2, +-Inf, NaN (small:
// the spec's eps rules); GELU: the variant's formula (erf or tanh).
// Everything is deterministic (the suite's Rng, tools/inputs/rng.h; fixed seeds).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "actgrad/types.h"

namespace actgrad::acc {

struct AccuracyOptions {
  size_t fp32_count = 1000000;  // random fp32 values per full-size parameter case
  uint64_t seed = 0xAC6A7AD5EED2026ull;
};

// Per-element flags.
enum : uint8_t {
  kFlagG1 = 1,       // g == 1 exactly
  kFlagSpecial = 2,  // a special input (non-finite x or g, the specials blocks) or a non-finite reference
};

// One call of a kernel: parameters and n elements of g and x in the storage
// format of the dtype, with the double reference and the flags.
struct InputCase {
  std::string label;  // e.g. "eps=0.25 exhaustive g=1" (used in failure messages)
  OpParams params;
  size_t n = 0;
  std::vector<uint8_t> g, x;  // n * DTypeSize(dtype) bytes each
  std::vector<double> ref;    // n
  std::vector<uint8_t> flags; // n
  // A g-sweep case: checked for NaN/Inf placement and the hard bound only
  // (its elements would only dilute the share under the threshold).
  bool sweep = false;
};

struct InputSet {
  Op op;
  DType dtype;
  GeluApprox mode;
  std::vector<InputCase> cases;
  size_t total = 0;  // elements over all cases
};

// Builds the inputs (uncached).
InputSet BuildInputs(Op op, DType dtype, GeluApprox mode, const AccuracyOptions& opt);
// Cached by (op, dtype, mode, fp32_count, seed); thread-safe.
std::shared_ptr<const InputSet> GetInputs(Op op, DType dtype, GeluApprox mode, const AccuracyOptions& opt);
void ClearInputCache();

// Element i of a buffer of dtype t, as a double (integers exactly).
double DecodeElement(DType t, const void* data, size_t i);

// The second Softshrink lambd and the LogitGrad eps values of the runs.
inline constexpr float kSoftshrinkLambds[] = {0.5f, 1.0f / 3.0f};
inline constexpr float kLogitEps[] = {-1.0f, 0.0f, 1e-6f, 0.25f};

}  // namespace actgrad::acc
