// Portable scalar variants: one element at a time in fp32 with the C
// library's erf/exp/tanh. The always-available fallback on any CPU, and the
// only path for SELU's integer types.
#include <cmath>
#include <cstdint>
#include <limits>

#include "actgrad/half.h"
#include "reference/reference.h"
#include "variants/registry.h"

namespace actgrad {
namespace {

struct F32 { using T = float; static float Load(T v) { return v; } static T Store(float f) { return f; } };
struct F16 { using T = uint16_t; static float Load(T v) { return HalfToFloat(v); } static T Store(float f) { return FloatToHalf(f); } };
struct BF16 { using T = uint16_t; static float Load(T v) { return BF16ToFloat(v); } static T Store(float f) { return FloatToBF16(f); } };

// The scalar GELU evaluates the factor in double: it is the portable
// fallback, and fp32 libm erf/exp lose accuracy where the factor cancels
// (x near -0.75) and in the tails.
float GeluFactor(float xf, GeluApprox mode) {
  const double x = xf;
  if (std::isinf(x)) return x > 0 ? 1.0f : 0.0f;
  if (mode == GeluApprox::kTanh) {
    const double k = 0.79788456080286535588, c = 0.044715;
    const double t = std::tanh(k * (x + c * x * x * x));
    return float(0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x));
  }
  return float(0.5 + 0.5 * std::erf(x * 0.70710678118654752440) + x * 0.39894228040143267794 * std::exp(-0.5 * x * x));
}

float ScalarOp(Op op, float g, float x, const OpParams& p, GeluApprox mode) {
  switch (op) {
    case Op::kSeluBwd:
      return x > 0.0f ? g * float(ref::kSeluScale) : g * (x + float(ref::kSeluAlpha * ref::kSeluScale));
    case Op::kHardswishBwd:
      if (x < -3.0f) return 0.0f;
      return x <= 3.0f ? g * ((x + 1.5f) * (1.0f / 3.0f)) : g;
    case Op::kSoftshrinkBwd: return (x >= -p.lambd && x <= p.lambd) ? 0.0f : g;
    case Op::kGeluBwd: return g * GeluFactor(x, mode);
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
  const auto* g = static_cast<const typename S::T*>(a.g);
  const auto* x = static_cast<const typename S::T*>(a.x);
  auto* out = static_cast<typename S::T*>(a.out);
  for (size_t i = 0; i < a.n; ++i) out[i] = S::Store(ScalarOp(kOp, S::Load(g[i]), S::Load(x[i]), a.params, kMode));
}

template <typename Int>
void SeluIntKernel(const KernelArgs& a) {
  const Int* g = static_cast<const Int*>(a.g);
  const Int* y = static_cast<const Int*>(a.x);
  Int* out = static_cast<Int*>(a.out);
  for (size_t i = 0; i < a.n; ++i) out[i] = ref::SeluBwdInt<Int>(g[i], y[i]);
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
