// GELU backward: one family per approximation of dGELU/dx (kernels/math).
#include "variants/native/native_warnings.h"  // first: before <immintrin.h>
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "variants/variants_gelu.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "math/approx_list-inl.h"
#include "variants/driver-inl.h"
#include "variants/registry.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
void AppendGeluVariants(std::vector<Variant>* out) {
  // Highway's scalar baseline adds nothing over our own scalar variants.
#if HWY_TARGET != HWY_SCALAR
#define ACTGRAD_GELU_ERF(P) AppendFamily<GeluBwdOp<P>>(out, P::kName, P::kClaimedMaxErr, GeluApprox::kNone);
#define ACTGRAD_GELU_TANH(P) AppendFamily<GeluBwdOp<P>>(out, P::kName, P::kClaimedMaxErr, GeluApprox::kTanh);
  ACTGRAD_FOR_EACH_GELU_ERF_APPROX(ACTGRAD_GELU_ERF)
  ACTGRAD_FOR_EACH_GELU_TANH_APPROX(ACTGRAD_GELU_TANH)
#undef ACTGRAD_GELU_ERF
#undef ACTGRAD_GELU_TANH
#else
  (void)out;
#endif
}
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace actgrad {
HWY_EXPORT(AppendGeluVariants);
void AppendGeluVariantsAllTargets(std::vector<Variant>* out) { ACTGRAD_APPEND_FOR_ALL_TARGETS(AppendGeluVariants, out); }
}  // namespace actgrad
#endif
