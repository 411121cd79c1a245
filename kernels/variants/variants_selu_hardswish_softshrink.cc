// SELU, Hardswish and Softshrink backward: the ops with one ("exact")
// approximation each, having no transcendental part (SELU's backward works
// from the forward result y); every dtype/upcast/unroll/store/target. One
// file for the three: one Highway translation unit, not three (build time).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "variants/variants_selu_hardswish_softshrink.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "variants/driver-inl.h"
#include "variants/registry.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
void AppendSeluHardswishSoftshrinkVariants(std::vector<Variant>* out) {
  // Highway's scalar baseline adds nothing over our own scalar variants.
#if HWY_TARGET != HWY_SCALAR
  AppendFamily<SeluBwdOp>(out, "exact", 0.0);
  AppendFamily<HardswishBwdOp>(out, "exact", 0.0);
  AppendFamily<SoftshrinkBwdOp>(out, "exact", 0.0);
#else
  (void)out;
#endif
}
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace actgrad {
HWY_EXPORT(AppendSeluHardswishSoftshrinkVariants);
void AppendSeluHardswishSoftshrinkVariantsAllTargets(std::vector<Variant>* out) {
  ACTGRAD_APPEND_FOR_ALL_TARGETS(AppendSeluHardswishSoftshrinkVariants, out);
}
}  // namespace actgrad
#endif
