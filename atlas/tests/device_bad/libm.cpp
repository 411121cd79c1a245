// host-call: a scalar libm function (the vector unit has Exp; the scalar
// unit has no libm).
#include <math.h>

#include "bad_kernel.h"

extern "C" __global__ __aicore__ void bad_libm(GM_ADDR out, float s) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  StoreScaled(out, expf(s));
}
