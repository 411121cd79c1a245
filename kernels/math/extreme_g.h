// Gradients at the extremes, shared by the portable (Highway) and the native
// kernels. Plain C++ (no target code): constants and one scalar fix-up.
//
// 1. g = +-Inf against a tiny factor. GELU's factor f(x) is tiny but non-zero
//    in the double reference far below where fp32 holds it (erf form down to
//    x = -38.6, tanh form to x = -21.5; fp32 underflows near -14 and the
//    approximations are flushed or clamped earlier still), and near its root
//    at x = -0.7518 its fp32 sign is only as good as the approximation. With
//    an infinite g only the reference's sign of f matters, so the kernels
//    take the result from the sign regions below instead of from g * f.
// 2. |g * f| near the output dtype's largest finite value. The reference
//    rounds once, from double; g * f rounded in fp32 (with f's own error) can
//    land on the other side of the overflow threshold (e.g. GELU with
//    g = FLT_MAX at x = 5.7, where f = 1 + 4e-8 rounds to 1). Those lanes
//    (rare: |g| within 0.2 % of the dtype's maximum) are recomputed in double.
#pragma once
#include <cstdint>
#include <limits>

#include "actgrad/types.h"

namespace actgrad::extreme {

// Where the double reference's GELU factor is negative, zero and positive,
// for fp32 x (found by bisection on reference.h; tests/math checks them):
//   x < lowest_nonzero (and x = -Inf)      f == 0  -> Inf * 0 = NaN
//   lowest_nonzero <= x <= last_negative   f < 0   -> -g
//   x >= first_positive (= next float up)  f > 0   -> g   (x = +Inf: g)
struct GeluSigns {
  float lowest_nonzero;
  float last_negative;
  float first_positive;
};
inline constexpr GeluSigns kGeluErfSigns{-0x1.34d4ecp+5f, -0x1.80ead2p-1f, -0x1.80eadp-1f};
inline constexpr GeluSigns kGeluTanhSigns{-0x1.58441cp+4f, -0x1.8142ap-1f, -0x1.81429ep-1f};
inline constexpr const GeluSigns& GeluSignsOf(GeluApprox mode) {
  return mode == GeluApprox::kTanh ? kGeluTanhSigns : kGeluErfSigns;
}

// max |f| of either GELU form (1.1289 at x = 1.41), rounded up.
inline constexpr float kGeluMaxFactor = 1.13f;

// A result r (fp32, before the output's rounding) is "near overflow" when
// near_lo <= |r| <= near_hi: within 2^-9 of the output's rounding threshold,
// a margin above every approximation's error (<= 2e-4) and rounding.
inline constexpr float kMargin = 0x1p-9f;
inline constexpr float NearOverflowLo(DType out) {
  return out == DType::kF16    ? 65504.0f * (1.0f - kMargin)
         : out == DType::kBF16 ? 0x1.fep127f * (1.0f - kMargin)
                               : std::numeric_limits<float>::max() * (1.0f - kMargin);
}
inline constexpr float NearOverflowHi(DType out) {
  // fp16 rounds to Inf from 65520; fp32 results past the band are certain.
  return out == DType::kF16 ? 65520.0f * (1.0f + kMargin) : std::numeric_limits<float>::infinity();
}

// r[i] = float(ref(g[i], x[i])) for every lane i set in `lanes`: the double
// reference rounded once to fp32 (the output rounding that follows for
// fp16/bf16 is the reference's own RoundTo).
inline void RedoInDouble(const float* g, const float* x, float* r, uint64_t lanes,
                         double (*ref)(double g, double x)) {
  for (; lanes != 0; lanes &= lanes - 1) {
    const int i = __builtin_ctzll(lanes);
    r[i] = float(ref(double(g[i]), double(x[i])));
  }
}

}  // namespace actgrad::extreme
