// HardswishBackward as an AscendC kernel:
//   dx = 0                  if x < -3
//   dx = dy * (x/3 + 0.5)   if -3 <= x <= 3
//   dx = dy                 if x > 3 or x is NaN
#include "elementwise_grad.h"

namespace actgrad::atlas {

template <typename C>
struct HardswishGradCompute {
  __aicore__ inline void Init(const AtlasTilingData& t, const LocalTensor<C>& scratch, uint32_t tile) {
    (void)t;
    (void)tile;
    mid_ = scratch;
  }
  __aicore__ inline void Compute(const LocalTensor<C>& out, const LocalTensor<C>& dy, const LocalTensor<C>& x,
                                 const LocalTensor<uint8_t>& mask, uint32_t count) {
    const uint32_t cc = CompareCount<C>(count);
    Muls(mid_, x, static_cast<C>(1.0f / 3.0f), count);
    Adds(mid_, mid_, static_cast<C>(0.5f), count);
    Mul(mid_, mid_, dy, count);
    // x >= -3 keeps the middle branch, else 0 (NaN: 0 here, fixed below)
    CompareScalar(mask, x, static_cast<C>(-3.0f), CMPMODE::GE, cc);
    Select(mid_, mask, mid_, static_cast<C>(0.0f), SELMODE::VSEL_TENSOR_SCALAR_MODE, count);
    // x <= 3 takes that, else dy (x > 3 and NaN)
    CompareScalar(mask, x, static_cast<C>(3.0f), CMPMODE::LE, cc);
    Select(out, mask, mid_, dy, SELMODE::VSEL_TENSOR_TENSOR_MODE, count);
  }
  LocalTensor<C> mid_;
};

}  // namespace actgrad::atlas

extern "C" __global__ __aicore__ void hardswish_grad_custom(GM_ADDR dy, GM_ADDR x, GM_ADDR dx, GM_ADDR workspace,
                                                            GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // launches AI Vector cores only
  (void)workspace;
  actgrad::atlas::Dispatch<actgrad::atlas::HardswishGradCompute, false, false>(dy, x, dx, tiling);
}
