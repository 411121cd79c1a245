// Division policies for LogitGrad's dy / (x (1 - x)) (Highway per-target
// header). Interface:
//   template <class D> static hn::Vec<D> Div(D d, hn::Vec<D> num, hn::Vec<D> den);
//   DivExact  "div"     hn::Div, IEEE division (correctly rounded).
//   DivRcpNR  "rcp_nr"  hn::ApproximateReciprocal + one Newton-Raphson step,
//                       times num. Where den is not a normal float with
//                       |den| < 2^126 (+-0, subnormal, huge, +-Inf, NaN) the
//                       lanes are recomputed with true division (a branch
//                       that is taken only for vectors holding such lanes),
//                       so every special (+-Inf from +-0, NaN for 0/0,
//                       Inf/NaN propagation, x/Inf = 0, subnormal den) is
//                       exactly what IEEE division gives.
//   DivRcpNRx "rcp_x"   rcp_nr, whose range check LogitGrad makes on x instead
//                       (kRangeOnX, ops-inl.h): where every x of a vector lies
//                       in [2^-125, 1 - 2^-24], den = x - x*x is normal and
//                       below 1/4 and x is inside the op's NaN bounds, so one
//                       pair of compares replaces the den checks and the NaN
//                       blend. Other vectors take rcp_nr's path.
//   DivRcp14x "rcp14_x" rcp_x without the Newton step, for 16-bit outputs on
//                       AVX-512 only (rcp14: relative error under 2^-14; the
//                       portable ApproximateReciprocal of other targets is
//                       coarser): that error and the output's rounding stay
//                       under the rule's threshold in every element (bf16:
//                       2^-8 + 6.2e-5 < 4e-3; fp16: 2^-11 + 6.2e-5 < 1e-3),
//                       so only the native conversion families use it.

#if defined(ACTGRAD_KERNELS_MATH_DIV_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_KERNELS_MATH_DIV_INL_H_
#undef ACTGRAD_KERNELS_MATH_DIV_INL_H_
#else
#define ACTGRAD_KERNELS_MATH_DIV_INL_H_
#endif

#include "hwy/highway.h"
#include "math/poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

struct DivExact {
  static constexpr const char* kName = "div";
  static constexpr double kClaimedMaxErr = 0.0;  // correctly rounded
  static constexpr bool kAvailable = true;

  template <class D>
  static HWY_INLINE hn::Vec<D> Div(D /*d*/, hn::Vec<D> num, hn::Vec<D> den) {
    return hn::Div(num, den);
  }
};

// P::Quotient where |den| is in [2^-126, 2^126) (the estimate and its
// reciprocal are normal), true division in the other lanes; NaN den fails
// both comparisons.
template <class P, class D>
HWY_INLINE hn::Vec<D> CheckedQuotient(D d, hn::Vec<D> num, hn::Vec<D> den) {
  const auto q = P::Quotient(d, num, den);
  const auto ad = hn::Abs(den);
  const auto ok = hn::And(hn::Ge(ad, hn::Set(d, 0x1p-126f)), hn::Lt(ad, hn::Set(d, 0x1p126f)));
  if (HWY_LIKELY(hn::AllTrue(d, ok))) return q;
  return hn::IfThenElse(ok, q, hn::Div(num, den));
}

struct DivRcpNR {
  static constexpr const char* kName = "rcp_nr";
  static constexpr double kClaimedMaxErr = 3.0e-7;  // relative, normal results
  static constexpr bool kAvailable = true;

  // num / den for normal den below 2^126 in magnitude.
  template <class D>
  static HWY_INLINE hn::Vec<D> Quotient(D d, hn::Vec<D> num, hn::Vec<D> den) {
    return hn::Mul(num, math::RcpNR(d, den));
  }

  template <class D>
  static HWY_INLINE hn::Vec<D> Div(D d, hn::Vec<D> num, hn::Vec<D> den) {
    return CheckedQuotient<DivRcpNR>(d, num, den);
  }
};

struct DivRcpNRx : DivRcpNR {
  static constexpr const char* kName = "rcp_x";
  static constexpr bool kRangeOnX = true;
  // [kRangeLo, kRangeHi]: den = x - x*x is in [2^-126, 1/4] (normal, its
  // reciprocal normal), x within [0, 1].
  static constexpr float kRangeLo = 0x1p-125f;
  static constexpr float kRangeHi = 1.0f - 0x1p-24f;
};

struct DivRcp14x : DivRcpNRx {
  static constexpr const char* kName = "rcp14_x";
  static constexpr double kClaimedMaxErr = 6.2e-5;  // 2^-14 and two fp32 roundings

  template <class D>
  static HWY_INLINE hn::Vec<D> Quotient(D /*d*/, hn::Vec<D> num, hn::Vec<D> den) {
    static_assert(HWY_TARGET <= HWY_AVX3 || sizeof(D) == 0, "rcp14_x needs AVX-512's 14-bit reciprocal estimate");
    return hn::Mul(num, hn::ApproximateReciprocal(den));
  }

  template <class D>
  static HWY_INLINE hn::Vec<D> Div(D d, hn::Vec<D> num, hn::Vec<D> den) {
    return CheckedQuotient<DivRcp14x>(d, num, den);
  }
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#endif  // ACTGRAD_KERNELS_MATH_DIV_INL_H_
