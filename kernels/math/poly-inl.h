// The parts the math approximations are built from (Highway per-target header):
// polynomial evaluation, an exp with range reduction and selectable degree
// (ExpPolyN), the rounding error of a square, a Newton-refined reciprocal.
//
// Coefficients: kernels/math/fit/fit_gelu.py (reproducible, see docs/math.md).
// Only ops that Highway 1.0.3 provides are used.

// Per-target include guard (re-included once per target by foreach_target.h).
#if defined(ACTGRAD_KERNELS_MATH_POLY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_KERNELS_MATH_POLY_INL_H_
#undef ACTGRAD_KERNELS_MATH_POLY_INL_H_
#else
#define ACTGRAD_KERNELS_MATH_POLY_INL_H_
#endif

#include <stddef.h>
#include <stdint.h>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace math {

// c[0] + c[1] x + ... + c[N-1] x^(N-1), Horner with MulAdd.
template <class D, size_t N>
HWY_INLINE hn::Vec<D> Horner(D d, hn::Vec<D> x, const float (&c)[N]) {
  static_assert(N >= 1, "empty polynomial");
  auto acc = hn::Set(d, c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) acc = hn::MulAdd(acc, x, hn::Set(d, c[i]));
  return acc;
}

// exp(r) = 1 + r + r^2 * Q(r) on |r| <= ln2/2, Q's coefficients low -> high,
// relative minimax fits (fit_gelu.py, "exp(r)"): max relative error of the
// polynomial with these float32 coefficients, in exact arithmetic:
//   N=3: 1.23e-4   N=4: 5.33e-6   N=5: 1.05e-7   N=6: 3.13e-9
template <int N>
struct ExpCoefs;
template <>
struct ExpCoefs<3> {
  static constexpr float kQ[] = {0x1.02050ep-1f, 0x1.554108p-3f};
};
template <>
struct ExpCoefs<4> {
  static constexpr float kQ[] = {0x1.0006b8p-1f, 0x1.571d1ep-3f, 0x1.5224fp-5f};
};
template <>
struct ExpCoefs<5> {
  static constexpr float kQ[] = {0x1.fffdfcp-2f, 0x1.5557bp-3f, 0x1.572a3cp-5f,
                                 0x1.106208p-7f};
};
template <>
struct ExpCoefs<6> {
  static constexpr float kQ[] = {0x1.fffffcp-2f, 0x1.555492p-3f, 0x1.5558bp-5f,
                                 0x1.12399cp-7f, 0x1.6a4eccp-10f};
};

// exp(y [+ y_lo]) = (1 + *em1) * *scale for y <= 88 (no overflow handling:
// callers pass y <= 0); *scale = 2^n exactly, *em1 = exp(r) - 1 with
// |r| <= ln2/2, so a product exp(y)*W can be formed as
// MulAdd(em1, W, W) * scale with one rounding less than exp(y)*W.
// y_lo (optional) is a small correction added after the range reduction
// (e.g. the rounding error of y).
// Range reduction: n = round(y / ln2) via the 1.5*2^23 "magic" addition (the
// bias 127 is folded into the magic so the float's low bits are n + 127).
// N >= 5: r = y - n*ln2 in two Cody-Waite steps (ln2_hi has 16 significant
// bits, so n*ln2_hi is exact with or without FMA for |n| < 256).
// N <= 4: one step with ln2 rounded to float (adds <= ~5e-8*|n| to r,
// far below those polynomials' error where exp(y) is not negligible).
// Underflow: for n < -126 the scale 2^n is flushed to +0 (exp(y) < 2^-126 ->
// 0, never a subnormal), so exp(-large) is exactly 0 and NaN never appears
// for finite y. y must be > -2^21 (callers clamp). NaN y gives an
// unspecified finite value: callers restore NaN themselves.
template <int N, bool kHasLo, class D>
HWY_INLINE void ExpPolyNPartsImpl(D d, hn::Vec<D> y, hn::Vec<D> y_lo, hn::Vec<D>* em1,
                                  hn::Vec<D>* scale) {
  const hn::RebindToSigned<D> di;
  const auto kMagic = hn::Set(d, 0x1.8000FEp23f);  // 1.5*2^23 + 127
  const auto kMagicMin = hn::Set(d, 0x1.8p23f);    // biased exponent 0
  const auto vn = hn::MulAdd(y, hn::Set(d, 0x1.715476p+0f), kMagic);  // log2(e)
  const auto n = hn::Sub(vn, kMagic);
  hn::Vec<D> r;
  if constexpr (N >= 5) {
    r = hn::MulAdd(n, hn::Set(d, -0x1.62e4p-1f), y);  // -0.693145751953125
    r = hn::MulAdd(n, hn::Set(d, -0x1.7f7d1cp-20f), r);
  } else {
    r = hn::MulAdd(n, hn::Set(d, -0x1.62e43p-1f), y);  // -ln2 rounded
  }
  if constexpr (kHasLo) r = hn::Add(r, y_lo);
  // 2^n: the low 9 bits of vn's representation are n + 127; clamp at 0.
  *scale = hn::BitCast(d, hn::ShiftLeft<23>(hn::BitCast(di, hn::Max(vn, kMagicMin))));
  const auto q = hn::MulAdd(Horner(d, r, ExpCoefs<N>::kQ), r, hn::Set(d, 1.0f));
  *em1 = hn::Mul(q, r);  // r + r^2 Q(r) = exp(r) - 1
}

template <int N, class D>
HWY_INLINE void ExpPolyNParts(D d, hn::Vec<D> y, hn::Vec<D> y_lo, hn::Vec<D>* em1,
                              hn::Vec<D>* scale) {
  ExpPolyNPartsImpl<N, true>(d, y, y_lo, em1, scale);
}
template <int N, class D>
HWY_INLINE void ExpPolyNParts(D d, hn::Vec<D> y, hn::Vec<D>* em1, hn::Vec<D>* scale) {
  ExpPolyNPartsImpl<N, false>(d, y, y, em1, scale);
}

// exp(y [+ y_lo]), see ExpPolyNParts.
template <int N, class D>
HWY_INLINE hn::Vec<D> ExpPolyN(D d, hn::Vec<D> y, hn::Vec<D> y_lo) {
  hn::Vec<D> em1, scale;
  ExpPolyNParts<N>(d, y, y_lo, &em1, &scale);
  return hn::Mul(hn::Add(em1, hn::Set(d, 1.0f)), scale);
}
template <int N, class D>
HWY_INLINE hn::Vec<D> ExpPolyN(D d, hn::Vec<D> y) {
  hn::Vec<D> em1, scale;
  ExpPolyNParts<N>(d, y, &em1, &scale);
  return hn::Mul(hn::Add(em1, hn::Set(d, 1.0f)), scale);
}

// For h = fl(a*a): returns a*a - h exactly (the rounding error of the
// square). One FMA where the target has it, else Veltkamp/Dekker splitting
// (a = ah + al with 12-bit ah, so ah*ah, ah*al, al*al are exact).
template <class D>
HWY_INLINE hn::Vec<D> SquareLo(D d, hn::Vec<D> a, hn::Vec<D> h) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulSub(a, a, h);
#else
  const hn::RebindToSigned<D> di;
  const auto ah = hn::And(a, hn::BitCast(d, hn::Set(di, int32_t(0xFFFFF000u))));
  const auto al = hn::Sub(a, ah);
  const auto hi_err = hn::Sub(hn::Mul(ah, ah), h);  // exact (Sterbenz)
  return hn::MulAdd(al, al, hn::MulAdd(hn::Add(ah, ah), al, hi_err));
#endif
}

// 1/den for finite normal den (no special-case handling): hardware estimate
// plus one Newton-Raphson step. Relative error <= ~2.5e-7 on SSE4/AVX2
// (12-bit estimate), ~1.2e-7 on AVX3 (14-bit), exact on SCALAR/EMU128.
template <class D>
HWY_INLINE hn::Vec<D> RcpNR(D d, hn::Vec<D> den) {
  const auto r0 = hn::ApproximateReciprocal(den);
  const auto e = hn::NegMulAdd(den, r0, hn::Set(d, 1.0f));  // 1 - den*r0
  return hn::MulAdd(r0, e, r0);
}

// Returns x where x is NaN, else f (restores NaN after clamping with
// Min/Max, whose NaN behaviour Highway leaves unspecified).
template <class D>
HWY_INLINE hn::Vec<D> KeepNaN(D /*d*/, hn::Vec<D> x, hn::Vec<D> f) {
  return hn::IfThenElse(hn::IsNaN(x), x, f);
}

}  // namespace math

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#endif  // ACTGRAD_KERNELS_MATH_POLY_INL_H_
