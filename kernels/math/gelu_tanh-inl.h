// GELU backward factor, tanh mode (PyTorch approximate='tanh') (Highway
// per-target header):
//   u = k (x + c x^3),  t = tanh(u),  k = sqrt(2/pi),  c = 0.044715
//   f(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)
// Policies:
//   GeluGradTanhHwy  "tanh_hwy"  t from hn::Tanh (Expm1 + division)
//   GeluGradTanhExp  "tanh_exp"  one ExpPolyN<6> of -2|u| and one division:
//       e = exp(-2|u|), q = 1/(1 + e):  0.5(1+t) = q (x >= 0) or e q (x < 0),
//       0.5 (1 - t^2) = 2 e q^2   -- no 1 - t or 1 + t cancellation.
// Both: f(+Inf) = 1, f(-Inf) = 0, f(NaN) = NaN. x is clamped to +-10.5, past
// which f is exactly 1 or 0 in fp32 (tanh_exp: exp(-2|u|) is flushed to 0).

#if defined(ACTGRAD_KERNELS_MATH_GELU_TANH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_KERNELS_MATH_GELU_TANH_INL_H_
#undef ACTGRAD_KERNELS_MATH_GELU_TANH_INL_H_
#else
#define ACTGRAD_KERNELS_MATH_GELU_TANH_INL_H_
#endif

#include "actgrad/types.h"
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"
#include "math/poly-inl.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace math {
inline constexpr float kTanhK = 0x1.988454p-1f;     // sqrt(2/pi)
inline constexpr float kTanhKC = 0x1.2444f2p-5f;    // sqrt(2/pi) * 0.044715
inline constexpr float kTanhK3C = 0x1.b6676cp-4f;   // 3 * sqrt(2/pi) * 0.044715
inline constexpr float kGeluTanhClamp = 10.5f;

template <class D>
HWY_INLINE hn::Vec<D> ClampAbs(D d, hn::Vec<D> x, float lim) {
  const auto l = hn::Set(d, lim);
  return hn::Min(hn::Max(x, hn::Neg(l)), l);
}
}  // namespace math

struct GeluGradTanhHwy {
  static constexpr const char* kName = "tanh_hwy";
  static constexpr GeluApprox kMode = GeluApprox::kTanh;
  static constexpr double kClaimedMaxErr = 2.5e-5;
  static constexpr bool kAvailable = true;

  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
    const auto one = hn::Set(d, 1.0f);
    const auto half = hn::Set(d, 0.5f);
    const auto xc = math::ClampAbs(d, x, math::kGeluTanhClamp);
    const auto x2 = hn::Mul(xc, xc);
    const auto u = hn::Mul(xc, hn::MulAdd(x2, hn::Set(d, math::kTanhKC), hn::Set(d, math::kTanhK)));
    const auto t = hn::Tanh(d, u);
    const auto one_m_t2 = hn::Mul(hn::Sub(one, t), hn::Add(one, t));
    const auto dpoly = hn::MulAdd(x2, hn::Set(d, math::kTanhK3C), hn::Set(d, math::kTanhK));
    const auto f = hn::MulAdd(hn::Mul(hn::Mul(half, xc), one_m_t2), dpoly, hn::MulAdd(half, t, half));
    return math::KeepNaN(d, x, f);
  }
};

struct GeluGradTanhExp {
  static constexpr const char* kName = "tanh_exp";
  static constexpr GeluApprox kMode = GeluApprox::kTanh;
  static constexpr double kClaimedMaxErr = 1.5e-6;
  static constexpr bool kAvailable = true;

  template <class D>
  static HWY_INLINE hn::Vec<D> Factor(D d, hn::Vec<D> x) {
    const auto one = hn::Set(d, 1.0f);
    const auto xc = math::ClampAbs(d, x, math::kGeluTanhClamp);
    const auto x2 = hn::Mul(xc, xc);
    const auto au =  // |u|
        hn::Mul(hn::Abs(xc), hn::MulAdd(x2, hn::Set(d, math::kTanhKC), hn::Set(d, math::kTanhK)));
    const auto e = math::ExpPolyN<6>(d, hn::Mul(au, hn::Set(d, -2.0f)));  // exp(-2|u|)
    const auto q = hn::Div(one, hn::Add(one, e));
    const auto eq = hn::Mul(e, q);
    const auto half_1pt = hn::IfThenElse(hn::Ge(x, hn::Zero(d)), q, eq);  // 0.5 (1 + t)
    const auto dpoly = hn::MulAdd(x2, hn::Set(d, math::kTanhK3C), hn::Set(d, math::kTanhK));
    // 0.5 x (1 - t^2) k (1 + 3 c x^2) = (e q) q (2x) (k + 3kc x^2)
    const auto f = hn::MulAdd(hn::Mul(eq, q), hn::Mul(hn::Add(xc, xc), dpoly), half_1pt);
    return math::KeepNaN(d, x, f);
  }
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#endif  // ACTGRAD_KERNELS_MATH_GELU_TANH_INL_H_
