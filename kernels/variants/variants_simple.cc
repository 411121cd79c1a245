// SELU, Hardswish and Softshrink backward: no transcendental parts, so one
// "exact" approximation each; every dtype/upcast/unroll/store/target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "variants/variants_simple.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "variants/driver-inl.h"
#include "variants/registry.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
void AppendSimpleVariants(std::vector<Variant>* out) {
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
HWY_EXPORT(AppendSimpleVariants);
void AppendSimpleVariantsAllTargets(std::vector<Variant>* out) {
  ACTGRAD_APPEND_FOR_ALL_TARGETS(AppendSimpleVariants, out);
}
}  // namespace actgrad
#endif
