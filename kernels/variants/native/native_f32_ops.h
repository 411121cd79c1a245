// Internal to the native kernel files: the five ops on 16 fp32 lanes
// (AVX512F + FMA), shared by bf16cvt (native_bf16.cc) and the fp16 register
// upcast (native_f16reg.cc). Each op: constructed once per call from the
// OpParams and the output dtype, `__m512 operator()(__m512 g, __m512 x) const`.
#pragma once
#include <immintrin.h>

#include <limits>

#include "math/extreme_g.h"
#include "reference/reference.h"
#include "variants/native/native_driver.h"

namespace actgrad::native {
namespace {

ACTGRAD_NATIVE_INLINE __m512 SetF(double v) { return _mm512_set1_ps(static_cast<float>(v)); }

// Lanes of `redo` recomputed in double by the reference (math/extreme_g.h).
__attribute__((noinline)) __m512 RedoInDouble(__m512 g, __m512 x, __m512 r, __mmask16 redo,
                                              double (*ref)(double, double)) {
  alignas(64) float gb[16], xb[16], rb[16];
  _mm512_store_ps(gb, g);
  _mm512_store_ps(xb, x);
  _mm512_store_ps(rb, r);
  extreme::RedoInDouble(gb, xb, rb, uint64_t(redo), ref);
  return _mm512_load_ps(rb);
}

// The output dtype's overflow band: finite-g lanes whose result lies in it
// are recomputed in double (SELU, Hardswish; rare). The per-vector test is
// one compare on |r| (as ops-inl.h's FixNearOverflow); g's finiteness and the
// band's upper end are tested only in the rare branch.
struct OverflowBand {
  __m512 lo, hi;
  explicit OverflowBand(DType out)
      : lo(_mm512_set1_ps(extreme::NearOverflowLo(out))), hi(_mm512_set1_ps(extreme::NearOverflowHi(out))) {}
  __attribute__((noinline)) __m512 FixLanes(__m512 g, __m512 x, __m512 r, __mmask16 ge_lo,
                                            double (*ref)(double, double)) const {
    const __mmask16 finite_g = _knot_mask16(_mm512_fpclass_ps_mask(g, 0x99));  // not NaN or +-Inf
    const __mmask16 near =
        _kand_mask16(_kand_mask16(finite_g, ge_lo), _mm512_cmp_ps_mask(_mm512_abs_ps(r), hi, _CMP_LE_OQ));
    return near ? RedoInDouble(g, x, r, near, ref) : r;
  }
  ACTGRAD_NATIVE_INLINE __m512 Fix(__m512 g, __m512 x, __m512 r, double (*ref)(double, double)) const {
    const __mmask16 ge_lo = _mm512_cmp_ps_mask(_mm512_abs_ps(r), lo, _CMP_GE_OQ);
    if (__builtin_expect(ge_lo != 0, 0)) return FixLanes(g, x, r, ge_lo, ref);
    return r;
  }
};

// alpha*scale = as_hi + as_lo: y + as_hi is exact near -as_hi, and as_lo
// keeps the factor at y = -as_hi the reference's 2.3e-8, not 0.
struct SeluF32 {
  static constexpr double kAlphaScale = ref::kSeluAlpha * ref::kSeluScale;
  __m512 scale = SetF(ref::kSeluScale);
  __m512 as_hi = SetF(kAlphaScale), as_lo = SetF(kAlphaScale - double(float(kAlphaScale)));
  OverflowBand band;
  SeluF32(const OpParams&, DType out) : band(out) {}
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 g, __m512 y) const {
    const __mmask16 pos = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_GT_OQ);
    const __m512 neg = _mm512_mul_ps(g, _mm512_add_ps(_mm512_add_ps(y, as_hi), as_lo));
    return band.Fix(g, y, _mm512_mask_mul_ps(neg, pos, g, scale), &ref::SeluBwd);
  }
};

struct HardswishF32 {
  __m512 three = SetF(3.0), neg_three = SetF(-3.0), third = SetF(1.0 / 3.0), one_half = SetF(1.5);
  OverflowBand band;
  HardswishF32(const OpParams&, DType out) : band(out) {}
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 g, __m512 x) const {
    const __mmask16 below = _mm512_cmp_ps_mask(x, neg_three, _CMP_LT_OQ);
    const __mmask16 upto3 = _mm512_cmp_ps_mask(x, three, _CMP_LE_OQ);  // false for NaN
    // (x + 1.5)/3: exactly 0 at x = -1.5 (as the reference), so g = Inf gives NaN there.
    const __m512 mid = _mm512_mul_ps(g, _mm512_mul_ps(_mm512_add_ps(x, one_half), third));
    const __m512 r = _mm512_maskz_mov_ps(_knot_mask16(below), _mm512_mask_blend_ps(upto3, g, mid));
    return band.Fix(g, x, r, &ref::HardswishBwd);
  }
};

// SELU and Hardswish without the overflow band or any care for an infinite
// g: for a caller that recomputes from the double reference every lane whose
// output is the dtype's largest finite magnitude, Inf or NaN (bf16int,
// native_bf16int.cc), which is where those cases land. alpha*scale and 1/3
// are single fp32 constants: their error (<= 1.1e-7 absolute on the factor)
// is below 2e-6 of the rule's |g|/16 floor, far under bf16's rounding.
struct SeluF32Bare {
  __m512 scale = SetF(ref::kSeluScale), alpha_scale = SetF(ref::kSeluAlpha * ref::kSeluScale);
  SeluF32Bare(const OpParams&, DType) {}
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 g, __m512 y) const {
    const __mmask16 not_pos = _mm512_cmp_ps_mask(y, _mm512_setzero_ps(), _CMP_NGT_UQ);  // y <= 0 or NaN
    return _mm512_mul_ps(g, _mm512_mask_add_ps(scale, not_pos, y, alpha_scale));
  }
};

// x/3 + 1/2 in one fma; 1 above 3 (and for NaN x: g), 0 below -3.
struct HardswishF32Bare {
  __m512 three = SetF(3.0), neg_three = SetF(-3.0), third = SetF(1.0 / 3.0), half = SetF(0.5), one = SetF(1.0);
  HardswishF32Bare(const OpParams&, DType) {}
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 g, __m512 x) const {
    const __mmask16 not_below = _mm512_cmp_ps_mask(x, neg_three, _CMP_NLT_UQ);  // x >= -3 or NaN
    const __mmask16 above = _mm512_cmp_ps_mask(x, three, _CMP_NLE_UQ);         // x > 3 or NaN
    const __m512 slope = _mm512_mask_mov_ps(_mm512_fmadd_ps(x, third, half), above, one);
    return _mm512_maskz_mul_ps(not_below, g, slope);
  }
};

struct SoftshrinkF32 {
  __m512 lam, neg_lam;
  SoftshrinkF32(const OpParams& p, DType) : lam(_mm512_set1_ps(p.lambd)), neg_lam(_mm512_set1_ps(-p.lambd)) {}
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 g, __m512 x) const {
    const __mmask16 ge = _mm512_cmp_ps_mask(x, neg_lam, _CMP_GE_OQ);
    const __mmask16 le = _mm512_cmp_ps_mask(x, lam, _CMP_LE_OQ);
    return _mm512_maskz_mov_ps(_knot_mask16(_kand_mask16(ge, le)), g);
  }
};

// dy / (x - x*x) (fma: x*(1-x) rounded once), true division. eps rules as
// in native_f16.cc's LogitF16, with the fp32 bounds eps and 1-eps as they are.
struct LogitF32 {
  __m512 nan_lo, nan_hi, zero_lo, zero_hi;
  __mmask16 div_zero = 0;
  LogitF32(const OpParams& p, DType) {
    const float inf = __builtin_inff(), max = 3.40282346638528859812e+38f;
    float nl = -max, nh = max, zl = -inf, zh = inf;
    switch (LogitModeOf(p.eps)) {
      case kLogitAllNaN: nl = inf; nh = -inf; break;
      case kLogitZero: zl = inf; break;
      case kLogitDivZero: div_zero = __mmask16(0xFFFF); break;
      case kLogitNeg: nl = 0.0f; nh = 1.0f; break;
      case kLogitNonNeg: zl = p.eps; zh = 1.0f - p.eps; break;
    }
    nan_lo = _mm512_set1_ps(nl); nan_hi = _mm512_set1_ps(nh);
    zero_lo = _mm512_set1_ps(zl); zero_hi = _mm512_set1_ps(zh);
  }
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 dy, __m512 x) const {
    const __mmask16 ok = _kand_mask16(_mm512_cmp_ps_mask(x, nan_lo, _CMP_GE_OQ),
                                      _mm512_cmp_ps_mask(x, nan_hi, _CMP_LE_OQ));
    const __mmask16 zero = _kor_mask16(_mm512_cmp_ps_mask(x, zero_lo, _CMP_LT_OQ),
                                       _mm512_cmp_ps_mask(x, zero_hi, _CMP_GT_OQ));
    const __m512 den = _mm512_maskz_mov_ps(_knot_mask16(div_zero), _mm512_fnmadd_ps(x, x, x));
    const __m512 r = _mm512_mask_mov_ps(_mm512_div_ps(dy, den), zero, _mm512_setzero_ps());
    return _mm512_mask_mov_ps(_mm512_castsi512_ps(_mm512_set1_epi32(0x7FC00000)), ok, r);
  }
};

// exp(y) for y <= 0 (and NaN): Cody-Waite reduction y = n*ln2 + r, Cephes'
// expf polynomial on |r| <= ln2/2 (about 1 ulp), 2^n applied with vscalefps
// (exact, gradual underflow to 0).
ACTGRAD_NATIVE_INLINE __m512 ExpF32(__m512 y) {
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(y, SetF(1.44269504088896341)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), y);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

// 1/d for d in [1, 2^24] (no zero, Inf or subnormal): vrcp14ps and one
// Newton step, within about 1 ulp (a true division costs 3-4x more here).
ACTGRAD_NATIVE_INLINE __m512 Reciprocal(__m512 d) {
  const __m512 r = _mm512_rcp14_ps(d);
  return _mm512_fmadd_ps(_mm512_fnmadd_ps(d, r, _mm512_set1_ps(1.0f)), r, r);
}

// GELU with |g| near the largest finite value or infinite (math/extreme_g.h):
// g = +-Inf takes the sign of the reference's factor by region of x (NaN where
// it is 0); finite huge g is recomputed in double.
template <GeluApprox kMode>
__attribute__((noinline)) __m512 GeluBigG(__m512 g, __m512 x, __m512 r, __mmask16 big) {
  constexpr extreme::GeluSigns s = extreme::GeluSignsOf(kMode);
  const __mmask16 inf = _mm512_fpclass_ps_mask(g, 0x18);
  const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_set1_ps(s.first_positive), _CMP_GE_OQ);
  const __mmask16 neg = _kand_mask16(_mm512_cmp_ps_mask(x, _mm512_set1_ps(s.lowest_nonzero), _CMP_GE_OQ),
                                     _mm512_cmp_ps_mask(x, _mm512_set1_ps(s.last_negative), _CMP_LE_OQ));
  __m512 inf_r = _mm512_set1_ps(std::numeric_limits<float>::quiet_NaN());
  inf_r = _mm512_mask_sub_ps(inf_r, neg, _mm512_setzero_ps(), g);
  inf_r = _mm512_mask_mov_ps(inf_r, pos, g);
  r = _mm512_mask_mov_ps(r, inf, inf_r);
  const __mmask16 finite_big = _kandn_mask16(inf, big);
  if (_ktestz_mask16_u8(finite_big, finite_big)) return r;
  return RedoInDouble(g, x, r, finite_big, kMode == GeluApprox::kTanh ? &ref::GeluBwdTanh : &ref::GeluBwdErf);
}

// GELU backward in fp32 via the symmetry d(x) + d(-x) = 1: with a = |x|
// (clamped to 16, where e underflows to 0; NaN stays NaN) and e = d(-a),
// x < 0 -> g*e, x >= 0 -> g*(1 - e).
//   erf form ("erf_as"): e = 0.5*erfc(a/sqrt2) - a*phi(a)
//     = E*(0.5*P(t) - a/sqrt(2pi)),  E = exp(-a^2/2) = exp(-z^2), z = a/sqrt2,
//     erfc(z) = P(t)*exp(-z^2), t = 1/(1 + p*z) (Abramowitz-Stegun 7.1.26,
//     |error of erf| <= 1.5e-7), one exp shared by both terms.
//   tanh form ("tanh_exp"): v = sqrt(2/pi)*(a + 0.044715*a^3), E = exp(-2v),
//     s = 1/(1+E): 0.5*(1+tanh(-v)) = E*s, 1 - tanh^2 = 4*E*s^2, so
//     e = E*s*(1 - 2*a*s*sqrt(2/pi)*(1 + 3*0.044715*a^2)).
template <GeluApprox kMode>
struct GeluF32 {
  __m512 big_g;
  GeluF32(const OpParams&, DType out)
      : big_g(_mm512_set1_ps(extreme::NearOverflowLo(out) / extreme::kGeluMaxFactor)) {}
  ACTGRAD_NATIVE_INLINE __m512 operator()(__m512 g, __m512 x) const {
    const __m512 a = _mm512_min_ps(SetF(16.0), _mm512_abs_ps(x));  // min(c, NaN) = NaN
    __m512 e;
    if constexpr (kMode == GeluApprox::kTanh) {
      const double k = 0.79788456080286535588, c = 0.044715;
      const __m512 a2 = _mm512_mul_ps(a, a);
      const __m512 v = _mm512_mul_ps(a, _mm512_fmadd_ps(SetF(k * c), a2, SetF(k)));
      const __m512 big_e = ExpF32(_mm512_mul_ps(v, SetF(-2.0)));
      const __m512 s = Reciprocal(_mm512_add_ps(_mm512_set1_ps(1.0f), big_e));
      const __m512 slope = _mm512_fmadd_ps(SetF(3.0 * c * k), a2, SetF(k));
      const __m512 w = _mm512_fnmadd_ps(_mm512_mul_ps(_mm512_add_ps(a, a), s), slope, _mm512_set1_ps(1.0f));
      e = _mm512_mul_ps(_mm512_mul_ps(big_e, s), w);
    } else {
      const __m512 z = _mm512_mul_ps(a, SetF(0.70710678118654752440));
      const __m512 t = Reciprocal(_mm512_fmadd_ps(SetF(0.3275911), z, _mm512_set1_ps(1.0f)));
      __m512 p = SetF(1.061405429);
      p = _mm512_fmadd_ps(p, t, SetF(-1.453152027));
      p = _mm512_fmadd_ps(p, t, SetF(1.421413741));
      p = _mm512_fmadd_ps(p, t, SetF(-0.284496736));
      p = _mm512_fmadd_ps(p, t, SetF(0.254829592));
      p = _mm512_mul_ps(p, t);  // erfc(z) * exp(z^2)
      const __m512 big_e = ExpF32(_mm512_mul_ps(_mm512_mul_ps(a, a), SetF(-0.5)));
      e = _mm512_mul_ps(big_e, _mm512_fmsub_ps(SetF(0.5), p, _mm512_mul_ps(a, SetF(0.39894228040143267794))));
    }
    const __mmask16 neg = _mm512_movepi32_mask(_mm512_castps_si512(x));
    const __m512 r = _mm512_mul_ps(g, _mm512_mask_blend_ps(neg, _mm512_sub_ps(_mm512_set1_ps(1.0f), e), e));
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(g), big_g, _CMP_GE_OQ);  // Inf too
    if (__builtin_expect(!_ktestz_mask16_u8(big, big), 0)) return GeluBigG<kMode>(g, x, r, big);
    return r;
  }
};

}  // namespace
}  // namespace actgrad::native
