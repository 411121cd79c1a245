// Vector bodies of the five ops on fp32 lanes, one policy struct per op.
// Semantics are those of kernels/reference/reference.h (shared/spec).
// Per-target header: included once per Highway target by foreach_target.
#if defined(ACTGRAD_OPS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_OPS_INL_H_
#undef ACTGRAD_OPS_INL_H_
#else
#define ACTGRAD_OPS_INL_H_
#endif

#include <cmath>
#include <limits>

#include "actgrad/types.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Per-call constants, resolved once per kernel call. Scalars, not vectors:
// SVE vectors are sizeless and cannot be struct members; the broadcasts
// (hn::Set at the use) are loop-invariant and hoisted by the compiler.
template <class D>
struct OpConsts {
  float lambd, neg_lambd, eps, one_minus_eps;
  int logit_mode;  // see LogitMode below
};

// LogitGrad's eps rules depend only on eps: resolve them once per call.
enum LogitMode : int { kLogitNaN, kLogitZero, kLogitDivZero, kLogitNeg, kLogitNonNeg };
inline int LogitModeFor(float eps) {
  if (std::isnan(eps)) return kLogitNaN;
  if (std::isinf(eps) && eps > 0) return kLogitZero;
  if (eps > 1.0f) return kLogitNaN;
  if (eps == 1.0f) return kLogitDivZero;
  return eps < 0.0f ? kLogitNeg : kLogitNonNeg;
}

template <class D>
HWY_INLINE OpConsts<D> MakeConsts(D /*d*/, const OpParams& p) {
  OpConsts<D> c;
  c.lambd = p.lambd;
  c.neg_lambd = -p.lambd;
  c.eps = p.eps;
  c.one_minus_eps = 1.0f - p.eps;
  c.logit_mode = LogitModeFor(p.eps);
  return c;
}

struct SeluBwdOp {
  static constexpr Op kOp = Op::kSeluBwd;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> y, const OpConsts<D>&) {
    const auto scale = hn::Set(d, 1.0507009873554804934193349852946f);
    const auto alpha_scale = hn::Set(d, float(1.6732632423543772848170429916717 * 1.0507009873554804934193349852946));
    // y > 0: g*scale; else (incl. y == 0, as PyTorch): g*(y + alpha*scale).
    return hn::IfThenElse(hn::Gt(y, hn::Zero(d)), hn::Mul(g, scale), hn::Mul(g, hn::Add(y, alpha_scale)));
  }
};

struct HardswishBwdOp {
  static constexpr Op kOp = Op::kHardswishBwd;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> x, const OpConsts<D>&) {
    const auto three = hn::Set(d, 3.0f);
    const auto neg_three = hn::Set(d, -3.0f);
    const auto mid = hn::And(hn::Ge(x, neg_three), hn::Le(x, three));  // false for NaN
    // x/3 + 0.5 as (x + 1.5) * (1/3): no division (it would dominate the
    // cost of this op), exactly 0 at x = -1.5 (so g = Inf gives NaN there,
    // as the exact formula does), the same bits on every target.
    const auto slope = hn::Mul(g, hn::Mul(hn::Add(x, hn::Set(d, 1.5f)), hn::Set(d, 1.0f / 3.0f)));
    const auto r = hn::IfThenElse(mid, slope, g);  // x > 3 and NaN -> g
    return hn::IfThenZeroElse(hn::Lt(x, neg_three), r);
  }
};

struct SoftshrinkBwdOp {
  static constexpr Op kOp = Op::kSoftshrinkBwd;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> x, const OpConsts<D>& c) {
    // Inside [-lambd, lambd] -> 0; outside and NaN -> g.
    return hn::IfThenZeroElse(hn::And(hn::Ge(x, hn::Set(d, c.neg_lambd)), hn::Le(x, hn::Set(d, c.lambd))), g);
  }
};

template <class Approx>
struct GeluBwdOp {
  static constexpr Op kOp = Op::kGeluBwd;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> x, const OpConsts<D>&) {
    return hn::Mul(g, Approx::Factor(d, x));
  }
};

// g = dy, x = x. Division strategy is a policy (true division or
// reciprocal estimate + Newton step), see kernels/math.
template <class DivPolicy>
struct LogitGradOp {
  static constexpr Op kOp = Op::kLogitGrad;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> dy, hn::Vec<D> x, const OpConsts<D>& c) {
    const auto nan = hn::Set(d, std::numeric_limits<float>::quiet_NaN());
    const auto zero = hn::Zero(d);
    const auto one = hn::Set(d, 1.0f);
    const auto finite = hn::IsFinite(x);
    switch (c.logit_mode) {
      case kLogitNaN: return nan;
      case kLogitZero: return hn::IfThenElse(finite, zero, nan);
      case kLogitDivZero: return hn::IfThenElse(finite, hn::Div(dy, zero), nan);
      default: break;
    }
    const auto q = DivPolicy::Div(d, dy, hn::Mul(x, hn::Sub(one, x)));
    if (c.logit_mode == kLogitNeg) {
      // x outside [0, 1] (incl. +-Inf) -> NaN; NaN x gives NaN through q.
      return hn::IfThenElse(hn::Or(hn::Lt(x, zero), hn::Gt(x, one)), nan, q);
    }
    const auto outside = hn::Or(hn::Lt(x, hn::Set(d, c.eps)), hn::Gt(x, hn::Set(d, c.one_minus_eps)));
    return hn::IfThenElse(finite, hn::IfThenZeroElse(outside, q), nan);
  }
};

}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#endif  // ACTGRAD_OPS_INL_H_
