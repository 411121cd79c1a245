// data: a namespace-scope coefficient table read with a runtime index (the
// pattern gelu_grad_custom.cpp had): a GM global on the device.
#include "bad_kernel.h"

constexpr float kCoeff[4] = {0.5f, 0.25f, 0.125f, 0.0625f};

extern "C" __global__ __aicore__ void bad_namespace_table(GM_ADDR out, uint32_t k) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  StoreScaled(out, kCoeff[k % 4]);
}
