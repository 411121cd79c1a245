// host-call: a C++ standard library function in device code.
#include <algorithm>

#include "bad_kernel.h"

extern "C" __global__ __aicore__ void bad_std_call(GM_ADDR out, float a, float b) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  StoreScaled(out, std::max(a, b));
}
