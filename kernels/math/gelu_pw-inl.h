// GELU backward factor f(x) (gradInput = g * f(x)) as a piecewise polynomial
// (Highway per-target header): x clamped to [-8, 8), 16 unit segments,
// f = P_k(u) on segment k = floor(x) + 8 with u = x - floor(x) - 0.5. No exp,
// no erf, no division: a floor, one table lookup per coefficient and a Horner
// chain. Each 16-entry coefficient table is one AVX-512 register, so a lookup
// is one vpermps; the policies exist only on targets with 16 float lanes.
//   GeluGradErfPw6   "erf_pw6"   erf mode,  degree 6, fp32 grade (3.0e-6)
//   GeluGradErfPw5   "erf_pw5"   erf mode,  degree 5 (6.8e-5; fp32 passes, fp16/bf16 comfortably)
//   GeluGradTanhPw6  "tanh_pw6"  tanh mode, degree 6 (2.4e-6)
//   GeluGradTanhPw5  "tanh_pw5"  tanh mode, degree 5 (7.1e-5)
//   GeluGradErfPw4h  "erf_pw4h"  erf mode,  degree 4 on 32 half-unit segments (2.2e-5)
//   GeluGradTanhPw4h "tanh_pw4h" tanh mode, degree 4 on 32 half-unit segments (2.2e-5)
// Fits: kernels/math/fit/fit_gelu_pw.py (weighted minimax, the spec metric's
// 1/max(|f|, 1/16) weight; errors re-measured with float32 Horner). Segments
// 0 and 15 are exactly 0 and 1, so f(-Inf) = 0, f(+Inf) = 1, f(+-FLT_MAX) =
// 0 / 1 exactly; NaN stays NaN.

#if defined(ACTGRAD_KERNELS_MATH_GELU_PW_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_KERNELS_MATH_GELU_PW_INL_H_
#undef ACTGRAD_KERNELS_MATH_GELU_PW_INL_H_
#else
#define ACTGRAD_KERNELS_MATH_GELU_PW_INL_H_
#endif

#include "actgrad/types.h"
#include "hwy/highway.h"
#include "math/gelu_pw_tables.h"
#include "math/poly-inl.h"

// 16 float lanes: AVX3 and better on x86 (re-evaluated for every target).
#undef ACTGRAD_GELU_PW_ON_TARGET
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#define ACTGRAD_GELU_PW_ON_TARGET 1
#else
#define ACTGRAD_GELU_PW_ON_TARGET 0
#endif

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if ACTGRAD_GELU_PW_ON_TARGET
namespace math {

// Partial vectors (tails, tests): f of one full 16-lane vector.
template <class D, class F>
HWY_INLINE hn::Vec<D> ThroughFullVector(D d, hn::Vec<D> x, F f) {
  const hn::Simd<float, 16, 0> df;
  HWY_ALIGN float buf[16] = {};
  hn::StoreU(x, d, buf);
  hn::Store(f(df, hn::Load(df, buf)), df, buf);
  return hn::LoadU(d, buf);
}

template <int kDeg, class D>
HWY_INLINE hn::Vec<D> GeluPiecewise(D d, hn::Vec<D> x, const float (&tab)[kDeg + 1][16]) {
  if constexpr (hn::MaxLanes(D()) != 16) {
    return ThroughFullVector(d, x, [&](auto df, auto v) { return GeluPiecewise<kDeg>(df, v, tab); });
  } else {
    const hn::RebindToSigned<D> di;
    // Max(NaN, -8) is -8 on x86: NaN lanes look up a valid segment and get
    // their NaN back at the end.
    const auto xc = hn::Min(hn::Max(x, hn::Set(d, -8.0f)), hn::Set(d, 0x1.fffffep+2f));
    const auto fl = hn::Floor(xc);
    const auto u = hn::Sub(hn::Sub(xc, fl), hn::Set(d, 0.5f));
    const auto idx = hn::IndicesFromVec(d, hn::Add(hn::ConvertTo(di, fl), hn::Set(di, 8)));
    auto acc = hn::TableLookupLanes(hn::Load(d, tab[kDeg]), idx);
    for (int j = kDeg - 1; j >= 0; --j) acc = hn::MulAdd(acc, u, hn::TableLookupLanes(hn::Load(d, tab[j]), idx));
    return KeepNaN(d, x, acc);
  }
}

// 32 half-unit segments (the tables of the native 16-bit kernels, fit by
// math/fit/fit_gelu_pw.py --segments 32): t = 2x + 16 clamped to [0, 32),
// segment k = trunc(t) (t >= 0: no floor), f = P_k(t - k). A coefficient
// table is two registers and a lookup one vpermt2ps (Highway 1.0 has no
// two-table lookup: raw AVX-512). NaN x: max(0, NaN) and min(c, NaN) return
// the NaN, which flows through the Horner chain. Segments 0 and 31 are
// exactly 0 and 1.
template <int kDeg, class D>
HWY_INLINE hn::Vec<D> GeluPiecewiseHalf(D d, hn::Vec<D> x, const float (&tab)[kDeg + 1][32]) {
  if constexpr (hn::MaxLanes(D()) != 16) {
    return ThroughFullVector(d, x, [&](auto df, auto v) { return GeluPiecewiseHalf<kDeg>(df, v, tab); });
  } else {
    const __m512 t = _mm512_fmadd_ps(x.raw, _mm512_set1_ps(2.0f), _mm512_set1_ps(16.0f));
    const __m512 tc = _mm512_min_ps(_mm512_set1_ps(0x1.fffffep+4f), _mm512_max_ps(_mm512_setzero_ps(), t));
    const __m512i idx = _mm512_cvttps_epi32(tc);
    const __m512 u = _mm512_sub_ps(tc, _mm512_cvtepi32_ps(idx));
    __m512 acc = _mm512_permutex2var_ps(_mm512_load_ps(tab[kDeg]), idx, _mm512_load_ps(tab[kDeg] + 16));
    for (int j = kDeg - 1; j >= 0; --j)
      acc = _mm512_fmadd_ps(acc, u, _mm512_permutex2var_ps(_mm512_load_ps(tab[j]), idx, _mm512_load_ps(tab[j] + 16)));
    return hn::Vec<D>{acc};
  }
}

}  // namespace math

// One policy per (table, degree, segments: 16 unit or 32 half-unit); the
// structs below add the name and claim.
template <int kDeg, int kSegments, const float (&kTable)[kDeg + 1][kSegments]>
struct GeluGradPiecewise {
  static constexpr bool kAvailable = true;
  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
    if constexpr (kSegments == 32) return math::GeluPiecewiseHalf<kDeg>(d, x, kTable);
    else return math::GeluPiecewise<kDeg>(d, x, kTable);
  }
};

struct GeluGradErfPw6 : GeluGradPiecewise<6, 16, math_tables::kErfPw6> {
  static constexpr const char* kName = "erf_pw6";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 4.0e-6;
};
struct GeluGradErfPw5 : GeluGradPiecewise<5, 16, math_tables::kErfPw5> {
  static constexpr const char* kName = "erf_pw5";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 8.0e-5;
};
struct GeluGradTanhPw6 : GeluGradPiecewise<6, 16, math_tables::kTanhPw6> {
  static constexpr const char* kName = "tanh_pw6";
  static constexpr GeluApprox kMode = GeluApprox::kTanh;
  static constexpr double kClaimedMaxErr = 4.0e-6;
};
struct GeluGradTanhPw5 : GeluGradPiecewise<5, 16, math_tables::kTanhPw5> {
  static constexpr const char* kName = "tanh_pw5";
  static constexpr GeluApprox kMode = GeluApprox::kTanh;
  static constexpr double kClaimedMaxErr = 8.0e-5;
};
struct GeluGradErfPw4h : GeluGradPiecewise<4, 32, math_tables::kErfPw4h> {
  static constexpr const char* kName = "erf_pw4h";
  static constexpr GeluApprox kMode = GeluApprox::kNone;
  static constexpr double kClaimedMaxErr = 2.3e-5;
};
struct GeluGradTanhPw4h : GeluGradPiecewise<4, 32, math_tables::kTanhPw4h> {
  static constexpr const char* kName = "tanh_pw4h";
  static constexpr GeluApprox kMode = GeluApprox::kTanh;
  static constexpr double kClaimedMaxErr = 2.3e-5;
};
#endif  // ACTGRAD_GELU_PW_ON_TARGET

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#endif  // ACTGRAD_KERNELS_MATH_GELU_PW_INL_H_
