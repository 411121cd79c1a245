// host-call: an exception thrown by kernel code (AscendC::Trap() stops a core).
#include "bad_kernel.h"

extern "C" __global__ __aicore__ void bad_throw(GM_ADDR out, float s) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  if (s < 0.0f) throw 1;
  StoreScaled(out, s);
}
