// SoftshrinkBackward as an AscendC kernel: dx = 0 if -lambd <= x <= lambd,
// else dy (NaN x gives dy). Exact in every compute type: the native fp16
// variant compares against lambd rounded toward -inf to fp16, which selects
// the same fp16 inputs as the fp32 comparison.
#include "elementwise_grad.h"

namespace actgrad::atlas {

template <typename C>
struct SoftshrinkGradCompute {
  __aicore__ inline void Init(const AtlasTilingData& t, const LocalTensor<C>& scratch, uint32_t tile) {
    absx_ = scratch;
    zeros_ = scratch[tile];
    lambd_ = IsSameType<C, float>::value ? static_cast<C>(t.scalar0) : static_cast<C>(t.scalarHalf);
    Duplicate(zeros_, static_cast<C>(0.0f), static_cast<int32_t>(tile));
  }
  __aicore__ inline void Compute(const LocalTensor<C>& out, const LocalTensor<C>& dy, const LocalTensor<C>& x,
                                 const LocalTensor<uint8_t>& mask, uint32_t count) {
    Abs(absx_, x, count);
    CompareScalar(mask, absx_, lambd_, CMPMODE::LE, CompareCount<C>(count));
    Select(out, mask, zeros_, dy, SELMODE::VSEL_TENSOR_TENSOR_MODE, count);
  }
  LocalTensor<C> absx_, zeros_;
  C lambd_;
};

}  // namespace actgrad::atlas

extern "C" __global__ __aicore__ void softshrink_grad_custom(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace,
                                                             GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // launches AI Vector cores only
  (void)workspace;
  actgrad::atlas::Dispatch<actgrad::atlas::SoftshrinkGradCompute, true, false>(dy, x, dx, tiling);
}
