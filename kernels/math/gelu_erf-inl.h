// GELU backward factor, exact (erf) mode (Highway per-target header):
//   f(x) = 0.5 + 0.5*erf(x/sqrt2) + x/sqrt(2 pi) * exp(-x^2/2) = Phi(x) + x phi(x)
// so that gradInput = g * f(x). Policies (see docs/math.md):
//   GeluGradErfSleef  "erf_sleef"  SLEEF erff_u10 + expf_u10 (x86 + scalar)
//   GeluGradErfAS     "erf_as"     Abramowitz-Stegun 7.1.26 + hn::Exp, fused
//   GeluGradErfR6     "erf_r6"     own fit, fp32 shipping accuracy
//   GeluGradErfR3     "erf_r3"     own fit, cheaper, ~1e-5
//   GeluGradErfR2     "erf_r2"     own fit, cheapest, fp16/bf16 grade
// All return f(+Inf) = 1, f(-Inf) = 0 (possibly -0), f(NaN) = NaN.
//
// The fused ("Mills ratio") form shared by erf_as and erf_r*: with a = |x|,
//   s(a) = phi(a) * (a - R(a)),   R(a) = Phi(-a)/phi(a) (Mills ratio),
//   f(x) = 1 + s(a) for x >= 0,   f(x) = -s(a) for x < 0
// (f(x) + f(-x) = 1). Phi(-a) = 0.5 erfc(a/sqrt2) = phi(a) R(a), so both the
// erfc and the Gaussian term carry the same exp(-a^2/2): one exp per element
// and no 0.5 + 0.5*erf cancellation for negative x.
//   erf_as: R(a) = sqrt(2 pi)/2 * t*P5(t), t = 1/(1 + p a/sqrt2): A&S 7.1.26.
//   erf_rN: a - R(a) = sqrt(2 pi) (a - a0) H(a), a0 ~ 0.7518 the root of
//           a - R(a) (= the zero of f at x = -a0); H is fitted as a degree-N
//           polynomial in t = 1/(1 + p a). Factoring out (a - a0) with a0
//           split hi+lo keeps the relative accuracy near f's zero, where any
//           difference of two O(0.2) terms would lose ~1e-7 absolute.

#if defined(ACTGRAD_KERNELS_MATH_GELU_ERF_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_KERNELS_MATH_GELU_ERF_INL_H_
#undef ACTGRAD_KERNELS_MATH_GELU_ERF_INL_H_
#else
#define ACTGRAD_KERNELS_MATH_GELU_ERF_INL_H_
#endif

#include "actgrad/types.h"
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "math/poly-inl.h"
#include "math/sleef_decl.h"

// Which SLEEF flavour matches this target (re-evaluated for every target).
#undef ACTGRAD_SLEEF_ON_TARGET
#if ACTGRAD_HAVE_SLEEF &&                                                 \
    ((ACTGRAD_SLEEF_X86 &&                                                \
      (HWY_TARGET == HWY_SSSE3 || HWY_TARGET == HWY_SSE4 ||               \
       HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 ||                \
       HWY_TARGET == HWY_AVX3_DL)) ||                                     \
     HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128)
#define ACTGRAD_SLEEF_ON_TARGET 1
#else
#define ACTGRAD_SLEEF_ON_TARGET 0
#endif

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace math {

inline constexpr float kInvSqrt2 = 0x1.6a09e6p-1f;     // 1/sqrt(2)
inline constexpr float kInvSqrt2Pi = 0x1.988454p-2f;   // 1/sqrt(2 pi)
// |x| beyond which f(x) is 0 or 1 in fp32 (exp(-a^2/2) underflows to 0 in
// ExpPolyN / hn::Exp). Clamping keeps Inf out of the arithmetic.
inline constexpr float kGeluErfClamp = 16.0f;

// Shared tail of the fused forms: f = x >= 0 ? 1 + s : -s, NaN restored.
template <class D>
HWY_INLINE hn::Vec<D> GeluErfFromS(D d, hn::Vec<D> x, hn::Vec<D> s) {
  const auto f = hn::IfThenElse(hn::Ge(x, hn::Zero(d)), hn::Add(hn::Set(d, 1.0f), s),
                                hn::Neg(s));
  return KeepNaN(d, x, f);
}

// The own-fit family. kDegH: degree of H; kDegExp: ExpPolyN degree;
// kSquareLo: add the rounding error of a*a to the exp argument (needed below
// ~1e-7); kTrueDiv: the reciprocal by division (else estimate + Newton);
// kUBasis: H is a polynomial in u = p a/(1 + p a) = 1 - t instead of
// t = 1/(1 + p a). u is computed as pa/(1 + pa): near a = 0 its absolute
// error is ~1e-7*u, while t = 1/(1 + pa) carries the rounding of 1 + pa
// (up to 6e-8) and of t itself near 1, and Horner in u is benign there (the
// constant term dominates); this is where erf_r6's worst cases were.
template <int kDegH, int kDegExp, bool kSquareLo, bool kTrueDiv, bool kUBasis, class D,
          size_t N>
HWY_INLINE hn::Vec<D> GeluErfMills(D d, hn::Vec<D> x, float p, const float (&h)[N]) {
  static_assert(N == kDegH + 1, "coefficient count");
  const auto one = hn::Set(d, 1.0f);
  const auto a = hn::Min(hn::Abs(x), hn::Set(d, kGeluErfClamp));
  const auto a2 = hn::Mul(a, a);
  const auto y = hn::Mul(a2, hn::Set(d, -0.5f));  // exact
  // exp(-a^2/2) = (1 + em1) * scale
  hn::Vec<D> em1, scale;
  if constexpr (kSquareLo) {
    ExpPolyNParts<kDegExp>(d, y, hn::Mul(SquareLo(d, a, a2), hn::Set(d, -0.5f)), &em1, &scale);
  } else {
    ExpPolyNParts<kDegExp>(d, y, &em1, &scale);
  }
  hn::Vec<D> v;  // t or u
  if constexpr (kUBasis) {
    const auto pa = hn::Mul(hn::Set(d, p), a);
    const auto den = hn::Add(pa, one);
    if constexpr (kTrueDiv) {
      v = hn::Div(pa, den);
    } else {
      v = hn::Mul(pa, RcpNR(d, den));
    }
  } else {
    const auto den = hn::MulAdd(hn::Set(d, p), a, one);
    if constexpr (kTrueDiv) {
      v = hn::Div(one, den);
    } else {
      v = RcpNR(d, den);
    }
  }
  const auto hv = Horner(d, v, h);
  // a - a0: exact near a0 (Sterbenz), then the low part of a0.
  const auto dm = hn::Sub(hn::Sub(a, hn::Set(d, 0x1.80ead2p-1f)), hn::Set(d, -0x1.a03fd4p-27f));
  const auto w = hn::Mul(dm, hv);
  const auto s = hn::Mul(hn::MulAdd(em1, w, w), scale);
  return GeluErfFromS(d, x, s);
}

#if ACTGRAD_SLEEF_ON_TARGET
// SLEEF on Highway vectors: pick the entry point by the raw register type.
#if HWY_TARGET == HWY_SCALAR || HWY_TARGET == HWY_EMU128
template <class D>
HWY_INLINE hn::Vec<D> SleefErf(D d, hn::Vec<D> v) {
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = Sleef_erff_u10(lanes[i]);
  return hn::Load(d, lanes);
}
template <class D>
HWY_INLINE hn::Vec<D> SleefExp(D d, hn::Vec<D> v) {
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(v, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = Sleef_expf_u10(lanes[i]);
  return hn::Load(d, lanes);
}
#else
HWY_INLINE __m128 SleefErfRaw(__m128 v) {
#if HWY_TARGET == HWY_SSSE3
  return Sleef_erff4_u10sse2(v);
#elif HWY_TARGET == HWY_SSE4
  return Sleef_erff4_u10sse4(v);
#else
  return Sleef_erff4_u10avx2128(v);
#endif
}
HWY_INLINE __m128 SleefExpRaw(__m128 v) {
#if HWY_TARGET == HWY_SSSE3
  return Sleef_expf4_u10sse2(v);
#elif HWY_TARGET == HWY_SSE4
  return Sleef_expf4_u10sse4(v);
#else
  return Sleef_expf4_u10avx2128(v);
#endif
}
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
HWY_INLINE __m256 SleefErfRaw(__m256 v) { return Sleef_erff8_u10avx2(v); }
HWY_INLINE __m256 SleefExpRaw(__m256 v) { return Sleef_expf8_u10avx2(v); }
#endif
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
HWY_INLINE __m512 SleefErfRaw(__m512 v) { return Sleef_erff16_u10avx512f(v); }
HWY_INLINE __m512 SleefExpRaw(__m512 v) { return Sleef_expf16_u10avx512f(v); }
#endif
template <class D>
HWY_INLINE hn::Vec<D> SleefErf(D /*d*/, hn::Vec<D> v) {
  v.raw = SleefErfRaw(v.raw);
  return v;
}
template <class D>
HWY_INLINE hn::Vec<D> SleefExp(D /*d*/, hn::Vec<D> v) {
  v.raw = SleefExpRaw(v.raw);
  return v;
}
#endif  // scalar / x86
#endif  // ACTGRAD_SLEEF_ON_TARGET

}  // namespace math

// ---------------------------------------------------------------------------
// erf_sleef: library-backed reference-quality variant, the textbook formula
// 0.5 + 0.5*erf(x/sqrt2) + x/sqrt(2pi)*exp(-x^2/2) with SLEEF's 1-ulp erff
// and expf. Two library calls per vector. Its error is dominated by the
// 0.5 + 0.5*erf cancellation for x < 0 (1 ulp of erf ~ 6e-8 absolute against
// the 1/16 floor). Available where a SLEEF entry point matches the target
// (x86 SSSE3..AVX3, SCALAR, EMU128); elsewhere kAvailable is false and the
// policy must not be instantiated.
struct GeluGradErfSleef {
  static constexpr const char* kName = "erf_sleef";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 1.5e-6;
  static constexpr bool kAvailable = ACTGRAD_SLEEF_ON_TARGET != 0;

  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
#if ACTGRAD_SLEEF_ON_TARGET
    const auto half = hn::Set(d, 0.5f);
    // Clamp only the Gaussian term's x: keeps Inf*0 out; erf gets x itself
    // (erf(+-Inf) = +-1, erf(NaN) = NaN, so f(NaN) = NaN).
    const auto lim = hn::Set(d, math::kGeluErfClamp);
    const auto xg = hn::Min(hn::Max(x, hn::Neg(lim)), lim);
    const auto er = math::SleefErf(d, hn::Mul(x, hn::Set(d, math::kInvSqrt2)));
    const auto e = math::SleefExp(d, hn::Mul(hn::Mul(xg, xg), hn::Set(d, -0.5f)));
    const auto gauss = hn::Mul(hn::Mul(xg, hn::Set(d, math::kInvSqrt2Pi)), e);
    return hn::Add(hn::MulAdd(er, half, half), gauss);
#else
    static_assert(sizeof(D) == 0, "erf_sleef is not available on this target");
    return x;
#endif
  }
};

// ---------------------------------------------------------------------------
// erf_as: Abramowitz & Stegun 7.1.26 (as in PyTorch's vectorized erf),
//   erfc(z) = t*(a1 + a2 t + a3 t^2 + a4 t^3 + a5 t^4) * exp(-z^2),
//   t = 1/(1 + p z), |error of erf| <= 1.5e-7,
// in the fused form: z = a/sqrt2, exp(-z^2) = exp(-a^2/2) from hn::Exp is
// shared with the Gaussian term, s = e * (a/sqrt(2pi) - 0.5 t P(t)).
struct GeluGradErfAS {
  static constexpr const char* kName = "erf_as";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 3.0e-6;
  static constexpr bool kAvailable = true;

  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
    // Published constants; 0.5 (for Phi = 0.5 erfc) folded in (exact).
    static constexpr float kHalfP[] = {0.5f * 0.254829592f, 0.5f * -0.284496736f,
                                       0.5f * 1.421413741f, 0.5f * -1.453152027f,
                                       0.5f * 1.061405429f};
    const auto one = hn::Set(d, 1.0f);
    const auto a = hn::Min(hn::Abs(x), hn::Set(d, math::kGeluErfClamp));
    const auto e = hn::Exp(d, hn::Mul(hn::Mul(a, a), hn::Set(d, -0.5f)));
    // p/sqrt2 with p = 0.3275911 (t is defined on z = a/sqrt2).
    const auto t = hn::Div(one, hn::MulAdd(hn::Set(d, 0.3275911f * math::kInvSqrt2), a, one));
    const auto half_erfc_over_e = hn::Mul(t, math::Horner(d, t, kHalfP));
    const auto s = hn::Mul(e, hn::MulSub(a, hn::Set(d, math::kInvSqrt2Pi), half_erfc_over_e));
    return math::GeluErfFromS(d, x, s);
  }
};

// ---------------------------------------------------------------------------
// erf_r6: own fit for fp32 shipping. H: degree 6 in u = 0.35a/(1 + 0.35a)
// (true division), exp: ExpPolyN<6> with the square's rounding error folded
// into the reduced argument. Fit error 1.7e-8 (H; mostly the float rounding
// of its constant term) + 3e-9 (exp); the rest is fp32 rounding.
struct GeluGradErfR6 {
  static constexpr const char* kName = "erf_r6";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 3.0e-7;
  static constexpr bool kAvailable = true;

  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
    static constexpr float kH[] = {0x1.54851ap-1f,  -0x1.026b08p-1f, 0x1.2aadbcp-2f,
                                   -0x1.59b2a4p-7f, -0x1.88deap-5f,  -0x1.44b39ep-7f,
                                   0x1.018146p-6f};
    return math::GeluErfMills<6, 6, true, true, true>(d, x, 0x1.666666p-2f, kH);
  }
};

// erf_r3: H degree 3 in t = 1/(1 + 0.3 a) (reciprocal estimate + Newton),
// ExpPolyN<4>. Fit errors 3.0e-6 (H) + 5.3e-6 (exp). fp32/fp16/bf16.
struct GeluGradErfR3 {
  static constexpr const char* kName = "erf_r3";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 1.0e-5;
  static constexpr bool kAvailable = true;

  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
    static constexpr float kH[] = {0x1.8f94c8p-2f, 0x1.285ep-3f, -0x1.b8ff2ap-5f,
                                   0x1.78ccf4p-3f};
    return math::GeluErfMills<3, 4, false, false, false>(d, x, 0x1.333334p-2f, kH);
  }
};

// erf_r2: H degree 2 in t = 1/(1 + 0.39 a) (reciprocal estimate + Newton),
// ExpPolyN<3>. Fit errors 4.5e-5 (H) + 1.2e-4 (exp): fp16/bf16 grade (fails
// fp32's 1e-4 threshold on part of the range, by design).
struct GeluGradErfR2 {
  static constexpr const char* kName = "erf_r2";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 2.0e-4;
  static constexpr bool kAvailable = true;

  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
    static constexpr float kH[] = {0x1.a4c3d8p-2f, 0x1.be09ccp-5f, 0x1.990744p-3f};
    return math::GeluErfMills<2, 3, false, false, false>(d, x, 0x1.8f5c28p-2f, kH);
  }
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#endif  // ACTGRAD_KERNELS_MATH_GELU_ERF_INL_H_
