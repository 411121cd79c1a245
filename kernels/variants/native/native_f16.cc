// f16native: the five ops computed in fp16 arithmetic on __m512h (32 lanes),
// AVX512-FP16. Compile with -mavx512f -mavx512bw -mavx512vl -mavx512dq
// -mavx512fp16 (see native_variants.h). Each op is written so that its last
// operation is the only rounding of the result's size (the others are exact
// or much smaller): fp16 has 11 bits and the spec's fp16 rule allows about
// two roundings' worth of error.
#include "variants/native/native_warnings.h"  // first: the pragmas hold for the whole file
#include <immintrin.h>

#include "math/extreme_g.h"
#include "reference/reference.h"
#include "variants/native/gelu_f16_tables.h"
#include "variants/native/native_driver.h"
#include "variants/native/native_kernels.h"

namespace actgrad::native {
namespace {

ACTGRAD_NATIVE_INLINE __m512h H(__m512i v) { return _mm512_castsi512_ph(v); }
ACTGRAD_NATIVE_INLINE __m512i I(__m512h v) { return _mm512_castph_si512(v); }
// Lanes of v where k is set, else 0 / else src (GCC 12 has no *_mov_ph).
ACTGRAD_NATIVE_INLINE __m512h MaskzMov(__mmask32 k, __m512h v) { return _mm512_mask_blend_ph(k, _mm512_setzero_ph(), v); }
ACTGRAD_NATIVE_INLINE __m512h MaskMov(__m512h src, __mmask32 k, __m512h v) { return _mm512_mask_blend_ph(k, src, v); }
ACTGRAD_NATIVE_INLINE __m512h SetBits(uint16_t bits) { return _mm512_castsi512_ph(_mm512_set1_epi16(short(bits))); }
ACTGRAD_NATIVE_INLINE __m512h Set(double v) { return _mm512_set1_ph(static_cast<_Float16>(v)); }
// The fp16 rounding error of v: v - fp16(v), itself as fp16.
ACTGRAD_NATIVE_INLINE __m512h SetLo(double v) {
  return _mm512_set1_ph(static_cast<_Float16>(v - double(static_cast<_Float16>(v))));
}

constexpr double kSeluScale = ref::kSeluScale;
constexpr double kSeluAlphaScale = ref::kSeluAlpha * ref::kSeluScale;

// The hi/lo products below (fma(g, hi, g*lo)) round once, but an infinite g
// turns g*lo into +-Inf (or NaN when lo = 0). Vectors with an infinite g (rare)
// redo those lanes as g * (hi + lo), which has the reference's sign and zeros.
ACTGRAD_NATIVE_INLINE __mmask32 InfiniteLanes(__m512h g) { return _mm512_fpclass_ph_mask(g, 0x18); }

// y > 0: g*scale = fma(g, scale_hi, g*scale_lo).
// y <= 0 (and NaN): g*(y + alpha*scale) = fma(g, t, g*(err + as_lo)), rounded
// once, where for -3.5 <= y <= 0, y + as_hi = t + err exactly
// with err = (as_hi - t) + y (exact where |y| < 2, and for -3.5 <= y <= -2
// t itself is exact, Sterbenz, and err = 0); below -3.5 err is dropped: t's
// own rounding and the product's then stay under 9.8e-4 together. 11
// operations per 32 lanes (an error-free sum by Knuth's TwoSum would take 18).
struct SeluF16 {
  __m512h scale_hi = Set(kSeluScale), scale_lo = SetLo(kSeluScale);
  __m512h as_hi = Set(kSeluAlphaScale), as_lo = SetLo(kSeluAlphaScale), near_min = Set(-3.5);
  explicit SeluF16(const OpParams&) {}
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i gi, __m512i yi) const {
    const __m512h g = H(gi), y = H(yi);
    const __mmask32 not_pos = _mm512_cmp_ph_mask(y, _mm512_setzero_ph(), _CMP_NGT_UQ);  // y <= 0 or NaN
    const __mmask32 near = _mm512_mask_cmp_ph_mask(not_pos, y, near_min, _CMP_GE_OQ);
    const __m512h t = _mm512_mask_add_ph(scale_hi, not_pos, y, as_hi);
    const __m512h err = _mm512_add_ph(_mm512_sub_ph(as_hi, t), y);
    const __m512h lo = _mm512_mask_add_ph(MaskMov(scale_lo, not_pos, as_lo), near, err, as_lo);
    __m512h r = _mm512_fmadd_ph(g, t, _mm512_mul_ph(g, lo));
    const __mmask32 inf = InfiniteLanes(g);
    if (__builtin_expect(!_ktestz_mask32_u8(inf, inf), 0))
      r = MaskMov(r, inf, _mm512_mul_ph(g, _mm512_add_ph(t, lo)));
    return I(r);
  }
};

// x < -3: 0; -3 <= x <= 3: g*(x/3 + 0.5) = g*(x + 1.5)/3; x > 3 and NaN: g,
// rounded once: x + 1.5 = t + e exactly for -3 <= x <= 3
// with e = (1.5 - t) + x (exact where |x| < 2; for 2 <= |x| <= 3 the last
// addition is a Sterbenz difference). (t + e)/3 = hi + lo with hi = t*c3_hi
// rounded, lo its exact residual plus e*c3_hi and t*c3_lo. Above 3 (and NaN)
// hi = 1, lo = 0, so the one fma gives g; below -3 it gives 0.
struct HardswishF16 {
  __m512h three = Set(3.0), neg_three = Set(-3.0), one_half = Set(1.5), one = Set(1.0);
  __m512h c3_hi = Set(1.0 / 3.0), c3_lo = SetLo(1.0 / 3.0);
  explicit HardswishF16(const OpParams&) {}
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i gi, __m512i xi) const {
    const __m512h g = H(gi), x = H(xi);
    const __mmask32 not_below = _mm512_cmp_ph_mask(x, neg_three, _CMP_NLT_UQ);  // x >= -3 or NaN
    const __mmask32 mid = _mm512_cmp_ph_mask(x, three, _CMP_LE_OQ);             // x <= 3, not NaN
    const __m512h t = _mm512_add_ph(x, one_half);
    const __m512h e = _mm512_add_ph(_mm512_sub_ph(one_half, t), x);
    const __m512h hi = _mm512_mask_mul_ph(one, mid, t, c3_hi);
    __m512h lo = _mm512_maskz_fmsub_ph(mid, t, c3_hi, hi);
    lo = _mm512_fmadd_ph(e, c3_hi, lo);
    lo = _mm512_maskz_fmadd_ph(mid, t, c3_lo, lo);
    __m512h r = _mm512_maskz_fmadd_ph(not_below, g, hi, _mm512_mul_ph(g, lo));
    const __mmask32 inf = InfiniteLanes(g);
    if (__builtin_expect(!_ktestz_mask32_u8(inf, inf), 0))
      r = MaskMov(r, inf, _mm512_maskz_mul_ph(not_below, g, hi));
    return I(r);
  }
};

// |x| <= lambd -> 0, else g (NaN x -> g). lambd is an fp32 value; for an
// fp16 x, x <= lambd <=> x <= (the largest fp16 <= lambd), so the comparison
// is exact even when lambd has no fp16 representation.
struct SoftshrinkF16 {
  __m512h lam, neg_lam;
  explicit SoftshrinkF16(const OpParams& p) {
    const uint16_t l = FloorToHalfBits(p.lambd);
    lam = SetBits(l);
    neg_lam = SetBits(uint16_t(l ^ 0x8000u));  // -floor(l) = ceil(-l)
  }
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i gi, __m512i xi) const {
    const __m512h x = H(xi);
    const __mmask32 ge = _mm512_cmp_ph_mask(x, neg_lam, _CMP_GE_OQ);
    const __mmask32 le = _mm512_cmp_ph_mask(x, lam, _CMP_LE_OQ);
    return _mm512_maskz_mov_epi16(_knot_mask32(_kand_mask32(ge, le)), gi);
  }
};

// LogitGrad in pure fp16: dy / (x - x*x) with x - x*x = x*(1-x) rounded once
// (fma), then one correctly rounded division. The eps rules are resolved per
// call into two ranges (see reference.h::LogitGrad):
//   NaN unless nan_lo <= x <= nan_hi; else 0 if x < zero_lo or x > zero_hi;
//   else dy / (x - x*x)  (x = -0 keeps its sign: dy / -0), or dy / +0 when
//   eps == 1.
// The fp32 bounds eps and 1-eps become exact fp16 bounds (ceil / floor).
struct LogitF16 {
  __m512h nan_lo, nan_hi, zero_lo, zero_hi;
  __mmask32 div_zero = 0;
  explicit LogitF16(const OpParams& p) {
    const uint16_t kInf = 0x7C00u, kNegInf = 0xFC00u, kMax = 0x7BFFu, kNegMax = 0xFBFFu;
    uint16_t nl = kNegMax, nh = kMax, zl = kNegInf, zh = kInf;
    switch (LogitModeOf(p.eps)) {
      case kLogitAllNaN: nl = kInf; nh = kNegInf; break;
      case kLogitZero: zl = kInf; break;
      case kLogitDivZero: div_zero = ~__mmask32(0); break;
      case kLogitNeg: nl = 0; nh = 0x3C00u; break;
      case kLogitNonNeg: zl = CeilToHalfBits(p.eps); zh = FloorToHalfBits(1.0f - p.eps); break;
    }
    nan_lo = SetBits(nl); nan_hi = SetBits(nh); zero_lo = SetBits(zl); zero_hi = SetBits(zh);
  }
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i dyi, __m512i xi) const {
    const __m512h dy = H(dyi), x = H(xi);
    const __m512h den = MaskzMov(_knot_mask32(div_zero), _mm512_fnmadd_ph(x, x, x));
    return Bounds(x, _mm512_div_ph(dy, den));
  }
  // r where x is inside the bounds, else 0 or NaN.
  ACTGRAD_NATIVE_INLINE __m512i Bounds(__m512h x, __m512h r) const {
    const __mmask32 ok = _kand_mask32(_mm512_cmp_ph_mask(x, nan_lo, _CMP_GE_OQ),
                                      _mm512_cmp_ph_mask(x, nan_hi, _CMP_LE_OQ));
    const __mmask32 zero = _kor_mask32(_mm512_cmp_ph_mask(x, zero_lo, _CMP_LT_OQ),
                                       _mm512_cmp_ph_mask(x, zero_hi, _CMP_GT_OQ));
    r = MaskMov(r, zero, _mm512_setzero_ph());
    return I(MaskMov(SetBits(0x7E00u), ok, r));
  }
};

// LogitF16 without the divider (vdivph takes about 16 cycles per 32 lanes
// here): q = dy * rcp(den) corrected once by its residual,
// q + (dy - q*den) * rcp(den), is dy / den rounded once up to a second-order
// term, as long as the residual is a normal fp16 (|dy| >= 2^-10; below it the
// residual's subnormal rounding, times 1/den, would reach the result) and
// 1/den is finite (x >= 2^-13; x near 1 keeps den >= 2^-12). Vectors with a
// lane outside that, or whose result is Inf or NaN (den = 0, an Inf dy, a
// quotient at the edge of fp16's range), take LogitF16's division for those
// lanes; the NaN and zero bounds then apply as there.
struct LogitF16Rcp : LogitF16 {
  __m512h x_min = Set(0x1p-13), dy_min = Set(0x1p-10);
  explicit LogitF16Rcp(const OpParams& p) : LogitF16(p) {}
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i dyi, __m512i xi) const {
    const __m512h dy = H(dyi), x = H(xi);
    const __m512h den = MaskzMov(_knot_mask32(div_zero), _mm512_fnmadd_ph(x, x, x));
    const __m512h inv = _mm512_rcp_ph(den);
    const __m512h q = _mm512_mul_ph(dy, inv);
    __m512h r = _mm512_fmadd_ph(_mm512_fnmadd_ph(q, den, dy), inv, q);
    const __mmask32 slow = _kor_mask32(_kor_mask32(_mm512_cmp_ph_mask(x, x_min, _CMP_LT_OQ),
                                                   _mm512_cmp_ph_mask(_mm512_abs_ph(dy), dy_min, _CMP_LT_OQ)),
                                       _mm512_fpclass_ph_mask(r, 0x99));  // NaN, +-Inf
    if (__builtin_expect(!_ktestz_mask32_u8(slow, slow), 0)) r = MaskMov(r, slow, _mm512_div_ph(dy, den));
    return Bounds(x, r);
  }
};

// GELU lanes with |g| near 65504 or infinite (math/extreme_g.h): g = +-Inf
// takes the sign of the reference's factor by region of x (NaN where it is
// 0); finite huge g (the fp16 factor's 8e-4 error could put g*f on either side
// of 65520) is recomputed in double.
template <GeluApprox kMode>
__attribute__((noinline)) __m512h GeluBigG(__m512h g, __m512h x, __m512h r, __mmask32 big) {
  constexpr extreme::GeluSigns s = extreme::GeluSignsOf(kMode);
  const __mmask32 inf = InfiniteLanes(g);
  const __mmask32 pos = _mm512_cmp_ph_mask(x, SetBits(CeilToHalfBits(s.first_positive)), _CMP_GE_OQ);
  const __mmask32 neg = _kand_mask32(_mm512_cmp_ph_mask(x, SetBits(CeilToHalfBits(s.lowest_nonzero)), _CMP_GE_OQ),
                                     _mm512_cmp_ph_mask(x, SetBits(FloorToHalfBits(s.last_negative)), _CMP_LE_OQ));
  const __m512h inf_r = MaskMov(MaskMov(SetBits(0x7E00u), neg, _mm512_sub_ph(_mm512_setzero_ph(), g)), pos, g);
  r = MaskMov(r, inf, inf_r);
  uint32_t redo = _cvtmask32_u32(_kandn_mask32(inf, big));
  if (redo == 0) return r;
  alignas(64) uint16_t gb[32], xb[32], rb[32];
  _mm512_store_si512(gb, I(g));
  _mm512_store_si512(xb, I(x));
  _mm512_store_si512(rb, I(r));
  double (*fn)(double, double) = kMode == GeluApprox::kTanh ? &ref::GeluBwdTanh : &ref::GeluBwdErf;
  for (; redo != 0; redo &= redo - 1) {
    const int i = __builtin_ctz(redo);
    rb[i] = FloatToHalfBits(float(fn(HalfBitsToFloat(gb[i]), HalfBitsToFloat(xb[i]))));
  }
  return H(_mm512_load_si512(rb));
}

// GELU backward, piecewise cubic in fp16 (tables and scheme: see
// gen_gelu_f16_tables.py). e(a) = d(-a) = hi + q:
//   x < 0:  g*e = fma(g, hi, g*q)
//   x >= 0: g*(1 - e) = fma(g, dh, g*(dl - q)) with 1 - hi = dh + dl exactly
// (Fast2Sum), so both are rounded once.
template <GeluApprox kMode>
struct GeluF16 {
  __m512h c0hi, c0lo, c1, c2, c3, four = Set(4.0), one = Set(1.0), cutoff = Set(kGeluPwCutoff);
  __m512h big_g = SetBits(CeilToHalfBits(extreme::NearOverflowLo(DType::kF16) / extreme::kGeluMaxFactor));
  explicit GeluF16(const OpParams&) {
    const bool tanh = kMode == GeluApprox::kTanh;
    c0hi = _mm512_castsi512_ph(_mm512_load_si512(tanh ? kGeluTanhC0Hi : kGeluErfC0Hi));
    c0lo = _mm512_castsi512_ph(_mm512_load_si512(tanh ? kGeluTanhC0Lo : kGeluErfC0Lo));
    c1 = _mm512_castsi512_ph(_mm512_load_si512(tanh ? kGeluTanhC1 : kGeluErfC1));
    c2 = _mm512_castsi512_ph(_mm512_load_si512(tanh ? kGeluTanhC2 : kGeluErfC2));
    c3 = _mm512_castsi512_ph(_mm512_load_si512(tanh ? kGeluTanhC3 : kGeluErfC3));
  }
  ACTGRAD_NATIVE_INLINE __m512i operator()(__m512i gi, __m512i xi) const {
    const __m512h g = H(gi), x = H(xi);
    const __m512h a = _mm512_abs_ph(x);
    const __m512h u4 = _mm512_mul_ph(a, four);  // exact (a < 7.875 where used)
    const __m512h k = _mm512_roundscale_ph(u4, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512h u = _mm512_sub_ph(u4, k);     // exact, in [-0.5, 0.5]
    const __m512i idx = _mm512_cvttph_epi16(k);  // low 5 bits index the tables
    __m512h p = _mm512_fmadd_ph(_mm512_permutexvar_ph(idx, c3), u, _mm512_permutexvar_ph(idx, c2));
    p = _mm512_fmadd_ph(p, u, _mm512_permutexvar_ph(idx, c1));
    const __mmask32 in = _mm512_cmp_ph_mask(a, cutoff, _CMP_NGE_UQ);  // a < cutoff or NaN
    const __m512h q = MaskzMov(in, _mm512_fmadd_ph(p, u, _mm512_permutexvar_ph(idx, c0lo)));
    const __m512h hi = MaskzMov(in, _mm512_permutexvar_ph(idx, c0hi));
    const __m512h dh = _mm512_sub_ph(one, hi);  // |hi| <= 0.5 < 1: Fast2Sum
    const __m512h dl = _mm512_sub_ph(_mm512_sub_ph(one, dh), hi);
    const __mmask32 neg = _mm512_movepi16_mask(xi);  // sign bit
    const __m512h r_hi = MaskMov(dh, neg, hi);
    const __m512h r_lo = MaskMov(_mm512_sub_ph(dl, q), neg, q);
    __m512h r = _mm512_fmadd_ph(g, r_hi, _mm512_mul_ph(g, r_lo));
    const __mmask32 big = _mm512_cmp_ph_mask(_mm512_abs_ph(g), big_g, _CMP_GE_OQ);  // Inf too
    if (__builtin_expect(!_ktestz_mask32_u8(big, big), 0)) r = GeluBigG<kMode>(g, x, r, big);
    return I(r);
  }
};

constexpr KernelEntry kEntries[] = {
#define ACTGRAD_NATIVE_F16(OP, APPROX, MODE, BODY, CLAIM) \
  ACTGRAD_NATIVE_ENTRIES(OP, DType::kF16, "f16native", APPROX, MODE, CLAIM, BODY)
#include "variants/native/native_families.inc"
};

}  // namespace

extern const KernelTable kF16NativeTable = {kEntries, sizeof(kEntries) / sizeof(kEntries[0]),
                                            ACTGRAD_NATIVE_COMPILED_FEATURES, "avx512fp16"};

}  // namespace actgrad::native
