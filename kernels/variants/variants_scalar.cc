// Portable scalar variants: one element at a time in fp32 with the C
// library's erf/exp/tanh. The always-available fallback on any CPU, and the
// only path for SELU's integer types.
#include <cmath>
#include <cstdint>
#include <limits>

#include "actgrad/half.h"
#include "math/extreme_g.h"
#include "reference/reference.h"
#include "variants/registry.h"

namespace actgrad {
namespace {

struct F32 { static constexpr DType kDType = DType::kF32; using T = float; static float Load(T v) { return v; } static T Store(float f) { return f; } };
struct F16 { static constexpr DType kDType = DType::kF16; using T = uint16_t; static float Load(T v) { return HalfToFloat(v); } static T Store(float f) { return FloatToHalf(f); } };
struct BF16 { static constexpr DType kDType = DType::kBF16; using T = uint16_t; static float Load(T v) { return BF16ToFloat(v); } static T Store(float f) { return FloatToBF16(f); } };

// SELU and Hardswish compute in fp32 exactly as the vector kernels
// (ops/ops-inl.h: alpha*scale as hi + lo, the slope as (x + 1.5) * (1/3)),
// including the double recomputation of results in the output's overflow
// band (math/extreme_g.h). GELU computes g * factor in double and rounds once
// (the reference's formulas): the portable fallback. fp32 libm erf/exp lose
// accuracy where the factor cancels (x near -0.75), and an fp32 factor
// underflows to 0 in the negative tail (g = Inf would give NaN, not -Inf).
float FixNearOverflow(float r, float g, float x, DType out, double (*ref)(double, double)) {
  const float ar = std::fabs(r);
  if (std::isfinite(g) && ar >= extreme::NearOverflowLo(out) && ar <= extreme::NearOverflowHi(out))
    return float(ref(g, x));
  return r;
}

float ScalarOp(Op op, float g, float x, const OpParams& p, GeluApprox mode, DType out) {
  constexpr double kAlphaScale = ref::kSeluAlpha * ref::kSeluScale;
  constexpr float kAsHi = float(kAlphaScale), kAsLo = float(kAlphaScale - double(kAsHi));
  switch (op) {
    case Op::kSeluBwd:
      return FixNearOverflow(x > 0.0f ? g * float(ref::kSeluScale) : g * ((x + kAsHi) + kAsLo), g, x, out,
                             &ref::SeluBwd);
    case Op::kHardswishBwd: {
      const float r = x < -3.0f ? 0.0f : x <= 3.0f ? g * ((x + 1.5f) * (1.0f / 3.0f)) : g;
      return FixNearOverflow(r, g, x, out, &ref::HardswishBwd);
    }
    case Op::kSoftshrinkBwd: return (x >= -p.lambd && x <= p.lambd) ? 0.0f : g;
    case Op::kGeluBwd: return float(mode == GeluApprox::kTanh ? ref::GeluBwdTanh(g, x) : ref::GeluBwdErf(g, x));
    case Op::kLogitGrad: {
      const float nan = std::numeric_limits<float>::quiet_NaN();
      const float eps = p.eps;
      if (std::isnan(eps) || std::isnan(x) || std::isinf(x)) return nan;
      if (std::isinf(eps) && eps > 0) return 0.0f;
      if (eps > 1.0f) return nan;
      if (eps == 1.0f) return g / 0.0f;
      if (eps < 0.0f) {
        if (x < 0.0f || x > 1.0f) return nan;
      } else if (x < eps || x > 1.0f - eps) {
        return 0.0f;
      }
      return g / (x * (1.0f - x));
    }
  }
  return 0.0f;
}

template <Op kOp, class S, GeluApprox kMode>
void ScalarKernel(const KernelArgs& a) {
  for (size_t k = 0; k < RunCount(a); ++k) {
    const RunPtrs<typename S::T> r = RunAt<typename S::T>(a, k);
    for (size_t i = 0; i < a.n; ++i)
      r.out[i] = S::Store(ScalarOp(kOp, S::Load(r.g[i]), S::Load(r.x[i * r.xs]), a.params, kMode, S::kDType));
  }
}

template <typename Int>
void SeluIntKernel(const KernelArgs& a) {
  for (size_t k = 0; k < RunCount(a); ++k) {
    const RunPtrs<Int> r = RunAt<Int>(a, k);
    for (size_t i = 0; i < a.n; ++i) r.out[i] = ref::SeluBwdInt<Int>(r.g[i], r.x[i * r.xs]);
  }
}

Variant Make(Op op, DType dt, const char* approx, GeluApprox mode, KernelFn fn) {
  Variant v;
  v.op = op;
  v.dtype = dt;
  v.upcast = "scalar";
  v.approx = approx;
  v.unroll = 1;
  v.target = "scalar";
  v.nt_stores = false;
  v.gelu_mode = mode;
  v.fn = fn;
  v.supported = true;
  v.claimed_max_err = 0.0;
  v.name = std::string(OpName(op)) + "." + std::string(DTypeName(dt)) + ".scalar." + approx + ".u1.scalar";
  return v;
}

template <Op kOp, GeluApprox kMode = GeluApprox::kNone>
void AppendFloatTypes(std::vector<Variant>* out, const char* approx) {
  out->push_back(Make(kOp, DType::kF32, approx, kMode, &ScalarKernel<kOp, F32, kMode>));
  out->push_back(Make(kOp, DType::kF16, approx, kMode, &ScalarKernel<kOp, F16, kMode>));
  out->push_back(Make(kOp, DType::kBF16, approx, kMode, &ScalarKernel<kOp, BF16, kMode>));
}

}  // namespace

void AppendScalarVariants(std::vector<Variant>* out) {
  AppendFloatTypes<Op::kSeluBwd>(out, "exact");
  out->push_back(Make(Op::kSeluBwd, DType::kI32, "exact", GeluApprox::kNone, &SeluIntKernel<int32_t>));
  out->push_back(Make(Op::kSeluBwd, DType::kI8, "exact", GeluApprox::kNone, &SeluIntKernel<int8_t>));
  AppendFloatTypes<Op::kHardswishBwd>(out, "exact");
  AppendFloatTypes<Op::kSoftshrinkBwd>(out, "exact");
  AppendFloatTypes<Op::kGeluBwd>(out, "erf_libm");
  AppendFloatTypes<Op::kGeluBwd, GeluApprox::kTanh>(out, "tanh_libm");
  AppendFloatTypes<Op::kLogitGrad>(out, "div");
}

}  // namespace actgrad
