// LogitGrad as an AscendC kernel (argument order of aclnnLogitGrad: x first).
// Rules, first match wins (shared/spec/operators.md):
//   eps NaN -> NaN; x NaN or +-Inf -> NaN; eps == +Inf -> 0; eps > 1 -> NaN;
//   eps == 1 -> dy / 0; eps < 0: x outside [0, 1] -> NaN;
//   eps >= 0: x < eps or x > 1 - eps -> 0; otherwise dy / (x * (1 - x)).
// eps is a launch scalar, so its case is a scalar branch, not a vector one.
#include "elementwise_grad.h"

namespace actgrad::atlas {

template <typename C>
struct LogitGradCompute {
  __aicore__ inline void Init(const AtlasTilingData& t, const LocalTensor<C>& scratch, uint32_t tile) {
    den_ = scratch;
    zeros_ = scratch[tile];
    eps_ = t.scalar0;
    hi_ = t.scalar1;
    Duplicate(zeros_, static_cast<C>(0.0f), static_cast<int32_t>(tile));
  }
  __aicore__ inline void Compute(const LocalTensor<C>& out, const LocalTensor<C>& dy, const LocalTensor<C>& x,
                                 const LocalTensor<uint8_t>& mask, uint32_t count) {
    const C nan = static_cast<C>(__builtin_nanf(""));
    const C zero = static_cast<C>(0.0f);
    const uint32_t cc = CompareCount<C>(count);
    const float inf = __builtin_inff();
    if (eps_ != eps_ || (eps_ > 1.0f && eps_ < inf)) {
      Duplicate(out, nan, static_cast<int32_t>(count));
      return;
    }
    if (eps_ == inf) {
      Duplicate(out, zero, static_cast<int32_t>(count));
    } else if (eps_ == 1.0f) {
      Div(out, dy, zeros_, count);  // +-Inf, NaN where dy is 0 or NaN
    } else {
      Muls(den_, x, static_cast<C>(-1.0f), count);
      Adds(den_, den_, static_cast<C>(1.0f), count);
      Mul(den_, den_, x, count);  // x * (1 - x)
      Div(out, dy, den_, count);
      if (eps_ < 0.0f) {
        CompareScalar(mask, x, zero, CMPMODE::GE, cc);
        Select(out, mask, out, nan, SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
        CompareScalar(mask, x, static_cast<C>(1.0f), CMPMODE::LE, cc);
        Select(out, mask, out, nan, SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
      } else {
        CompareScalar(mask, x, static_cast<C>(eps_), CMPMODE::GE, cc);
        Select(out, mask, out, zero, SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
        CompareScalar(mask, x, static_cast<C>(hi_), CMPMODE::LE, cc);
        Select(out, mask, out, zero, SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
      }
    }
    // NaN and +-Inf x give NaN whatever eps is.
    Abs(den_, x, count);
    CompareScalar(mask, den_, static_cast<C>(inf), CMPMODE::LT, cc);
    Select(out, mask, out, nan, SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
  }
  LocalTensor<C> den_, zeros_;
  float eps_ = -1.0f, hi_ = 2.0f;
};

}  // namespace actgrad::atlas

extern "C" __global__ __aicore__ void logit_grad_custom(GM_ADDR x, GM_ADDR dy, GM_ADDR dx, GM_ADDR workspace,
                                                        GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // launches AI Vector cores only
  (void)workspace;
  actgrad::atlas::Dispatch<actgrad::atlas::LogitGradCompute, false, false>(dy, x, dx, tiling);
}
