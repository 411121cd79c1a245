// host-call: stdio in device code.
#include <cstdio>

#include "bad_kernel.h"

extern "C" __global__ __aicore__ void bad_printf(GM_ADDR out, float s) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  printf("scale x1000 = %d\n", static_cast<int>(s * 1000.0f));
  StoreScaled(out, s);
}
