// LogitGrad: one family per division strategy (kernels/math).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "variants/variants_logit.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "math/approx_list-inl.h"
#include "variants/driver-inl.h"
#include "variants/registry.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
void AppendLogitVariants(std::vector<Variant>* out) {
  // Highway's scalar baseline adds nothing over our own scalar variants.
#if HWY_TARGET != HWY_SCALAR
#define ACTGRAD_LOGIT(P) AppendFamily<LogitGradOp<P>>(out, P::kName, P::kClaimedMaxErr);
  ACTGRAD_FOR_EACH_DIV_APPROX(ACTGRAD_LOGIT)
#undef ACTGRAD_LOGIT
#else
  (void)out;
#endif
}
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace actgrad {
HWY_EXPORT(AppendLogitVariants);
void AppendLogitVariantsAllTargets(std::vector<Variant>* out) { ACTGRAD_APPEND_FOR_ALL_TARGETS(AppendLogitVariants, out); }
}  // namespace actgrad
#endif
