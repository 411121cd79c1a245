// host-call: dynamic allocation.
#include "bad_kernel.h"

extern "C" __global__ __aicore__ void bad_heap(GM_ADDR out, uint32_t n) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  float* w = new float[n + 1];
  w[0] = 3.0f;
  StoreScaled(out, w[0]);
  delete[] w;
}
