// Realistic operands per op and dtype: the values the benchmarks time and the
// tuner measures (the same bytes for our kernels and for the peers). Ranges
// follow the spec's accuracy inputs (shared/spec/operators.md):
//   g: N(0,1); integers: uniform integers in [-1000, 1000) (i32), [-40, 40) (i8)
//   x: SELU   y = selu(z), z in U[-30,5] (integers: y truncated)
//      Hardswish U[-5,5]; Softshrink U[-2,2]; LogitGrad U[1e-6, 1-1e-6]
//      GELU      half U[-10,10], half N(0,1) (a coin per element)
// Deterministic: the seed depends on (op, role) only, so the f32, f16 and bf16
// operands of an op are the same values rounded to each dtype.
// The accuracy tool's spec-driven edge cases live in tools/accuracy.
#pragma once
#include <cstddef>
#include <cstdint>

#include "actgrad/types.h"
#include "tools/inputs/rng.h"

namespace actgrad::inputs {

// g = gradOutput (dy for LogitGrad); x = the op's input (the result y for SELU).
enum class Role : uint8_t { kG, kX };

// Elements of the fixed pattern per (op, dtype, role) that FillOperand tiles.
inline constexpr size_t kPatternElements = size_t{1} << 20;

uint64_t OperandSeed(Op op, Role role);

// The forward SELU in double: the SELU operand is its result y = selu(z).
double Selu(double z);

// One value of the op's distribution for (dtype, role), before rounding to dt.
double SampleOperand(Op op, DType dt, Role role, Rng& r);

// v in the storage format of dt at dst: f16/bf16 through float (round to
// nearest even), integers truncated toward zero and saturated.
void StoreOperand(DType dt, double v, void* dst);

// The first `count` values of the (op, dt, role) sequence, uncached.
void GenerateOperand(Op op, DType dt, Role role, void* dst, size_t count);

// `count` elements: the first kPatternElements values of the sequence, tiled.
// The pattern is built once per (op, dt, role) and kept; thread-safe.
void FillOperand(Op op, DType dt, Role role, void* dst, size_t count);

}  // namespace actgrad::inputs
