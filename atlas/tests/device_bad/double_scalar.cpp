// double: scalar double arithmetic in device code (a float promoted by a
// double literal).
#include "bad_kernel.h"

extern "C" __global__ __aicore__ void bad_double_scalar(GM_ADDR out, float s) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  StoreScaled(out, static_cast<float>(s * 0.1));  // 0.1f was meant
}
