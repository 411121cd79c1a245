// SeluBackward as an AscendC kernel: dx = dy * scale            if y > 0
//                                     dx = dy * (y + alpha*scale) if y <= 0
// (y is the forward result; NaN y takes the second branch and gives NaN.)
// Storage fp32 / fp16 / bf16 / int32 / int8; compute fp32 (fp16-native
// compute fails the fp16 accuracy rule near y = -alpha*scale: not built).
// Integers: fp32 compute, truncation toward zero, saturation.
#include "elementwise_grad.h"

namespace actgrad::atlas {

constexpr float kSeluScale = static_cast<float>(1.0507009873554804934193349852946);
constexpr float kSeluAlphaScale = static_cast<float>(1.6732632423543772848170429916717 * 1.0507009873554804934193349852946);

template <typename C>
struct SeluGradCompute {
  __aicore__ inline void Init(const AtlasTilingData& t, const LocalTensor<C>& scratch, uint32_t tile) {
    (void)t;
    pos_ = scratch;  // dy * scale
    (void)tile;
  }
  __aicore__ inline void Compute(const LocalTensor<C>& out, const LocalTensor<C>& dy, const LocalTensor<C>& y,
                                 const LocalTensor<uint8_t>& mask, uint32_t count) {
    Muls(pos_, dy, static_cast<C>(kSeluScale), count);
    Adds(out, y, static_cast<C>(kSeluAlphaScale), count);
    Mul(out, out, dy, count);
    CompareScalar(mask, y, static_cast<C>(0.0f), CMPMODE::GT, CompareCount<C>(count));
    Select(out, mask, pos_, out, SELMODE::VSEL_TENSOR_TENSOR_MODE, count);
  }
  LocalTensor<C> pos_;
};

}  // namespace actgrad::atlas

extern "C" __global__ __aicore__ void selu_grad_custom(GM_ADDR dy, GM_ADDR y, GM_ADDR dx, GM_ADDR workspace,
                                                       GM_ADDR tiling) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);  // launches AI Vector cores only
  (void)workspace;
  actgrad::atlas::Dispatch<actgrad::atlas::SeluGradCompute, false, true>(dy, y, dx, tiling);
}
