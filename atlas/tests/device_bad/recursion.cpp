// recursion: a recursive device function.
#include "bad_kernel.h"

__aicore__ inline float Power(float x, uint32_t k) { return k == 0 ? 1.0f : x * Power(x, k - 1); }

extern "C" __global__ __aicore__ void bad_recursion(GM_ADDR out, float x, uint32_t k) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  StoreScaled(out, Power(x, k));
}
