// data: a function-local static table.
#include "bad_kernel.h"

__aicore__ inline float Coeff(uint32_t k) {
  static const float table[3] = {1.0f, 2.0f, 4.0f};
  return table[k % 3];
}

extern "C" __global__ __aicore__ void bad_static_local(GM_ADDR out, uint32_t k) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  StoreScaled(out, Coeff(k));
}
