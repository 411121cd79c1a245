// Double-precision reference of the five ops, straight from
// shared/spec/operators.md. Used by the tests, the accuracy tool, the Atlas
// emulator tests. g = gradOutput (dy for LogitGrad), x = the op's input.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>

#include "actgrad/types.h"

namespace actgrad::ref {

inline constexpr double kSeluAlpha = 1.6732632423543772848170429916717;
inline constexpr double kSeluScale = 1.0507009873554804934193349852946;

inline double SeluBwd(double g, double y) {
  return y > 0 ? g * kSeluScale : g * (y + kSeluAlpha * kSeluScale);
}

inline double HardswishBwd(double g, double x) {
  if (x < -3.0) return 0.0;
  if (x <= 3.0) return g * (x / 3.0 + 0.5);
  return g;  // x > 3 and NaN x
}

inline double GeluBwdErf(double g, double x) {
  if (std::isinf(x)) return x > 0 ? g : g * 0.0;
  const double kInvSqrt2 = 0.70710678118654752440;
  const double kInvSqrt2Pi = 0.39894228040143267794;
  // Phi(x) as 0.5 erfc(-x/sqrt2): 0.5 + 0.5 erf(x/sqrt2) cancels for x < 0
  // (and is exactly 0 below x of about -8.3, leaving only the Gaussian term).
  return g * (0.5 * std::erfc(-x * kInvSqrt2) + x * kInvSqrt2Pi * std::exp(-0.5 * x * x));
}

// Written without the 1 + t and 1 - t*t cancellations (t = tanh(u) rounds to
// -1 for x below about -7.2, which made the factor exactly 0 there and g = Inf
// give NaN): with v = |u|, e = exp(-2v), q = 1/(1 + e),
//   0.5 (1 + t) = q (x >= 0) or e q (x < 0),   0.5 (1 - t*t) = 2 e q^2,
// so the factor stays non-zero down to x of about -21.5, where e underflows.
inline double GeluBwdTanh(double g, double x) {
  if (std::isinf(x)) return x > 0 ? g : g * 0.0;
  const double k = 0.79788456080286535588;  // sqrt(2/pi)
  const double c = 0.044715;
  const double v = k * std::fabs(x + c * x * x * x);
  const double e = std::exp(-2.0 * v);
  const double q = 1.0 / (1.0 + e);
  const double half_1pt = x >= 0 ? q : e * q;
  return g * (half_1pt + 2.0 * e * q * q * x * k * (1.0 + 3.0 * c * x * x));
}

inline double SoftshrinkBwd(double g, double x, float lambd) {
  return (x >= -double(lambd) && x <= double(lambd)) ? 0.0 : g;  // NaN x -> g
}

// The bounds eps and 1-eps are fp32 values (1-eps rounded once to fp32), as
// the kernels compute them; x is compared against them exactly.
inline double LogitGrad(double dy, double x, float eps) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (std::isnan(eps)) return nan;
  if (std::isnan(x) || std::isinf(x)) return nan;
  if (std::isinf(eps) && eps > 0) return 0.0;
  if (eps > 1.0f) return nan;
  if (eps == 1.0f) return dy / 0.0;
  if (eps < 0.0f) {
    if (x < 0.0 || x > 1.0) return nan;
  } else if (x < double(eps) || x > double(1.0f - eps)) {
    return 0.0;
  }
  return dy / (x * (1.0 - x));
}

inline double Reference(Op op, double g, double x, const OpParams& p) {
  switch (op) {
    case Op::kSeluBwd: return SeluBwd(g, x);
    case Op::kHardswishBwd: return HardswishBwd(g, x);
    case Op::kGeluBwd: return p.gelu_approx == GeluApprox::kTanh ? GeluBwdTanh(g, x) : GeluBwdErf(g, x);
    case Op::kSoftshrinkBwd: return SoftshrinkBwd(g, x, p.lambd);
    case Op::kLogitGrad: return LogitGrad(g, x, p.eps);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// SELU on integer tensors: the spec computes in fp32 and truncates toward
// zero with saturation, so the reference does exactly that and is exact.
template <typename Int>
Int SeluBwdInt(Int g, Int y) {
  const float gf = float(g), yf = float(y);
  const float r = yf > 0.0f ? gf * float(kSeluScale) : gf * (yf + float(kSeluAlpha * kSeluScale));
  const float lo = float(std::numeric_limits<Int>::min());
  const float hi = float(std::numeric_limits<Int>::max());
  if (std::isnan(r)) return 0;
  if (r <= lo) return std::numeric_limits<Int>::min();
  if (r >= hi) return std::numeric_limits<Int>::max();
  return Int(std::trunc(r));
}

}  // namespace actgrad::ref
