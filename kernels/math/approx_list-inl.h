// All math approximation policies and, per Highway target, the lists of those
// available on that target (Highway per-target header).
//
// Usage, in a translation unit that includes hwy/foreach_target.h:
//   #include "math/approx_list-inl.h"       // after foreach_target.h
//   HWY_BEFORE_NAMESPACE(); namespace actgrad { namespace HWY_NAMESPACE {
//   #define REGISTER(P) Register<P>(P::kName, P::kClaimedMaxErr);
//   ACTGRAD_FOR_EACH_GELU_ERF_APPROX(REGISTER)
//   ...
// The macros are redefined for every target pass, so expand them inside the
// per-target section (after this include, before the next target's pass).
// Each list is ordered from the most to the least accurate; every X(P) names
// a policy struct in actgrad::HWY_NAMESPACE:
//   GELU erf mode  : static Vec<D> Factor(D, Vec<D> x)   -> f(x)
//   GELU tanh mode : static Vec<D> Factor(D, Vec<D> x)   -> f(x)
//   division       : static Vec<D> Div(D, Vec<D> num, Vec<D> den)
// with kName (the variant-name "approx" field), kClaimedMaxErr (spec metric,
// g = 1; relative error for division) and kAvailable (always true for the
// policies a list names).
//
// erf_sleef needs libsleef at link time (-lsleef); build with
// -DACTGRAD_HAVE_SLEEF=0 to leave it out.

#if defined(ACTGRAD_KERNELS_MATH_APPROX_LIST_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ACTGRAD_KERNELS_MATH_APPROX_LIST_INL_H_
#undef ACTGRAD_KERNELS_MATH_APPROX_LIST_INL_H_
#else
#define ACTGRAD_KERNELS_MATH_APPROX_LIST_INL_H_
#endif

#include "math/poly-inl.h"
#include "math/gelu_erf-inl.h"
#include "math/gelu_tanh-inl.h"
#include "math/div-inl.h"
#include "math/gelu_pw-inl.h"

// ACTGRAD_SLEEF_ON_TARGET was just (re)computed for this target by
// gelu_erf-inl.h.
// The piecewise policies (gelu_pw-inl.h) exist on 16-lane targets only.
#undef ACTGRAD_GELU_PW_ERF
#undef ACTGRAD_GELU_PW_TANH
#if ACTGRAD_GELU_PW_ON_TARGET
#define ACTGRAD_GELU_PW_ERF(X) X(GeluGradErfPw6) X(GeluGradErfPw4h) X(GeluGradErfPw5)
#define ACTGRAD_GELU_PW_TANH(X) X(GeluGradTanhPw6) X(GeluGradTanhPw4h) X(GeluGradTanhPw5)
#else
#define ACTGRAD_GELU_PW_ERF(X)
#define ACTGRAD_GELU_PW_TANH(X)
#endif

#undef ACTGRAD_FOR_EACH_GELU_ERF_APPROX
#if ACTGRAD_SLEEF_ON_TARGET
#define ACTGRAD_FOR_EACH_GELU_ERF_APPROX(X) \
  X(GeluGradErfR6) X(GeluGradErfSleef) X(GeluGradErfAS) X(GeluGradErfR3) ACTGRAD_GELU_PW_ERF(X) X(GeluGradErfR2)
#else
#define ACTGRAD_FOR_EACH_GELU_ERF_APPROX(X) \
  X(GeluGradErfR6) X(GeluGradErfAS) X(GeluGradErfR3) ACTGRAD_GELU_PW_ERF(X) X(GeluGradErfR2)
#endif

#undef ACTGRAD_FOR_EACH_GELU_TANH_APPROX
#define ACTGRAD_FOR_EACH_GELU_TANH_APPROX(X) X(GeluGradTanhExp) X(GeluGradTanhHwy) ACTGRAD_GELU_PW_TANH(X)

#undef ACTGRAD_FOR_EACH_DIV_APPROX
#define ACTGRAD_FOR_EACH_DIV_APPROX(X) X(DivExact) X(DivRcpNR) X(DivRcpNRx)

#endif  // ACTGRAD_KERNELS_MATH_APPROX_LIST_INL_H_
