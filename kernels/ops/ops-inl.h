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
#include "math/extreme_g.h"
#include "reference/reference.h"

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
  // The output dtype's overflow band (math/extreme_g.h) and, for GELU, the
  // smallest |g| whose product can reach it.
  float near_lo, near_hi, gelu_big_g;
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
HWY_INLINE OpConsts<D> MakeConsts(D /*d*/, const OpParams& p, DType out) {
  OpConsts<D> c;
  c.lambd = p.lambd;
  c.neg_lambd = -p.lambd;
  c.eps = p.eps;
  c.one_minus_eps = 1.0f - p.eps;
  c.logit_mode = LogitModeFor(p.eps);
  c.near_lo = extreme::NearOverflowLo(out);
  c.near_hi = extreme::NearOverflowHi(out);
  c.gelu_big_g = c.near_lo / extreme::kGeluMaxFactor;
  return c;
}

// The rare paths below are out of line (HWY_NOINLINE) and take vectors by
// value, so they are `static`: each translation unit keeps its own copy. The
// hand-written AVX-512 files instantiate them too (native_hwy_ops.h) under
// other compiler flags than Highway's per-target code; with external linkage
// the linker kept one copy for both, and where the two disagree on how a
// 512-bit vector is passed (clang) a call crashed (ASan: SEGV in
// RedoLanesInDouble from a bf16cvt GELU variant with a huge g).

// Lanes of `redo` recomputed in double by `ref` (extreme::RedoInDouble).
template <class D, class M>
static HWY_NOINLINE hn::Vec<D> RedoLanesInDouble(D d, hn::Vec<D> g, hn::Vec<D> x, hn::Vec<D> r, M redo,
                                          double (*ref)(double, double)) {
  HWY_ALIGN float gb[hn::MaxLanes(d)], xb[hn::MaxLanes(d)], rb[hn::MaxLanes(d)];
  uint8_t bits[8] = {};
  hn::Store(g, d, gb);
  hn::Store(x, d, xb);
  hn::Store(r, d, rb);
  hn::StoreMaskBits(d, redo, bits);
  uint64_t lanes = 0;
  for (size_t i = 0; i < hn::Lanes(d) && i < 64; ++i) lanes |= uint64_t((bits[i / 8] >> (i % 8)) & 1) << i;
  extreme::RedoInDouble(gb, xb, rb, lanes, ref);
  return hn::Load(d, rb);
}

// The rare part of FixNearOverflow: of the lanes at or above the band's
// lower end, those with a finite g and a result inside the band.
template <class D>
static HWY_NOINLINE hn::Vec<D> FixNearOverflowLanes(D d, hn::Vec<D> g, hn::Vec<D> x, hn::Vec<D> r, const OpConsts<D>& c,
                                             double (*ref)(double, double)) {
  const auto ar = hn::Abs(r);
  const auto near = hn::And(hn::IsFinite(g), hn::And(hn::Ge(ar, hn::Set(d, c.near_lo)), hn::Le(ar, hn::Set(d, c.near_hi))));
  return hn::AllFalse(d, near) ? r : RedoLanesInDouble(d, g, x, r, near, ref);
}

// SELU and Hardswish: lanes with a finite g whose result lies in the output's
// overflow band are recomputed in double (rare; see math/extreme_g.h). The
// per-vector test is one compare on |r|; infinite results (g = +-Inf) also
// pass it and are sorted out in the rare branch. (Testing g's finiteness and
// the band's upper end here made Hardswish f32 at 64K 1.44x slower.)
template <class D>
HWY_INLINE hn::Vec<D> FixNearOverflow(D d, hn::Vec<D> g, hn::Vec<D> x, hn::Vec<D> r, const OpConsts<D>& c,
                                      double (*ref)(double, double)) {
  if (HWY_UNLIKELY(!hn::AllFalse(d, hn::Ge(hn::Abs(r), hn::Set(d, c.near_lo)))))
    return FixNearOverflowLanes(d, g, x, r, c, ref);
  return r;
}

struct SeluBwdOp {
  static constexpr Op kOp = Op::kSeluBwd;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> y, const OpConsts<D>& c) {
    const auto scale = hn::Set(d, 1.0507009873554804934193349852946f);
    // alpha*scale = as_hi + as_lo: y + as_hi is exact near -as_hi, and as_lo
    // (2.3e-8) keeps the factor at y = -as_hi (every saturated SELU output)
    // the reference's positive 2.3e-8, not 0 (g = Inf: +Inf, not NaN).
    constexpr double kAlphaScale = ref::kSeluAlpha * ref::kSeluScale;
    const auto as_hi = hn::Set(d, float(kAlphaScale));
    const auto as_lo = hn::Set(d, float(kAlphaScale - double(float(kAlphaScale))));
    // y > 0: g*scale; else (incl. y == 0, as PyTorch): g*(y + alpha*scale).
    const auto r = hn::IfThenElse(hn::Gt(y, hn::Zero(d)), hn::Mul(g, scale),
                                  hn::Mul(g, hn::Add(hn::Add(y, as_hi), as_lo)));
    return FixNearOverflow(d, g, y, r, c, &ref::SeluBwd);
  }
};

struct HardswishBwdOp {
  static constexpr Op kOp = Op::kHardswishBwd;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> x, const OpConsts<D>& c) {
    const auto three = hn::Set(d, 3.0f);
    const auto neg_three = hn::Set(d, -3.0f);
    const auto mid = hn::And(hn::Ge(x, neg_three), hn::Le(x, three));  // false for NaN
    // x/3 + 0.5 as (x + 1.5) * (1/3): no division (it would dominate the
    // cost of this op), exactly 0 at x = -1.5 (so g = Inf gives NaN there,
    // as the exact formula does), the same bits on every target.
    const auto slope = hn::Mul(g, hn::Mul(hn::Add(x, hn::Set(d, 1.5f)), hn::Set(d, 1.0f / 3.0f)));
    const auto r = hn::IfThenZeroElse(hn::Lt(x, neg_three), hn::IfThenElse(mid, slope, g));  // x > 3, NaN -> g
    // g near the largest finite value: the slope's two roundings can move
    // g*slope across the overflow threshold (x = 1.5 + 1 ulp: slope 1).
    return FixNearOverflow(d, g, x, r, c, &ref::HardswishBwd);
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

// GELU with |g| near the largest finite value or infinite (math/extreme_g.h):
// g = +-Inf takes the sign of the reference's factor by region of x (NaN where
// that factor is 0); finite huge g is recomputed in double.
template <GeluApprox kMode, class D>
static HWY_NOINLINE hn::Vec<D> GeluBigG(D d, hn::Vec<D> g, hn::Vec<D> x, hn::Vec<D> r, hn::Mask<D> big) {
  constexpr extreme::GeluSigns s = extreme::GeluSignsOf(kMode);
  const auto inf = hn::IsInf(g);
  const auto pos = hn::Ge(x, hn::Set(d, s.first_positive));  // false for NaN
  const auto neg = hn::And(hn::Ge(x, hn::Set(d, s.lowest_nonzero)), hn::Le(x, hn::Set(d, s.last_negative)));
  const auto inf_r = hn::IfThenElse(pos, g, hn::IfThenElse(neg, hn::Neg(g), hn::Set(d, std::numeric_limits<float>::quiet_NaN())));
  r = hn::IfThenElse(inf, inf_r, r);
  const auto finite_big = hn::AndNot(inf, big);
  if (hn::AllFalse(d, finite_big)) return r;
  return RedoLanesInDouble(d, g, x, r, finite_big, kMode == GeluApprox::kTanh ? &ref::GeluBwdTanh : &ref::GeluBwdErf);
}

template <class Approx>
struct GeluBwdOp {
  static constexpr Op kOp = Op::kGeluBwd;
  template <class D>
  static HWY_INLINE hn::Vec<D> Apply(D d, hn::Vec<D> g, hn::Vec<D> x, const OpConsts<D>& c) {
    const auto r = hn::Mul(g, Approx::Factor(d, x));
    // One compare on g, off the factor's dependency chain; Inf is >= too.
    const auto big = hn::Ge(hn::Abs(g), hn::Set(d, c.gelu_big_g));
    if (HWY_UNLIKELY(!hn::AllFalse(d, big))) return GeluBigG<Approx::kMode>(d, g, x, r, big);
    return r;
  }
};

// A division policy that checks LogitGrad's x for its fast path (DivRcpNRx).
template <class P>
constexpr bool RangeOnX = requires { P::kRangeOnX; };

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
    // x*(1 - x): with a fused multiply-add x - x*x, rounded once; without
    // one (SSE4), that form would cancel near x = 1, so two roundings.
#if HWY_NATIVE_FMA
    const auto den = hn::NegMulAdd(x, x, x);
#else
    const auto den = hn::Mul(x, hn::Sub(one, x));
#endif
    if constexpr (RangeOnX<DivPolicy>) {
      // Every x inside the policy's range: den is normal, no lane is NaN
      // (kLogitNeg's bounds are 0 and 1). The same den and quotient as the
      // general path, so a lane's result does not depend on its neighbours.
      if (c.logit_mode == kLogitNeg) {
        const auto in = hn::And(hn::Ge(x, hn::Set(d, DivPolicy::kRangeLo)), hn::Le(x, hn::Set(d, DivPolicy::kRangeHi)));
        if (HWY_LIKELY(hn::AllTrue(d, in))) return DivPolicy::Quotient(d, dy, den);
      }
    }
    const auto q = DivPolicy::Div(d, dy, den);
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
