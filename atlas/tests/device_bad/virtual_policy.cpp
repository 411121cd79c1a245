// data: a compute policy with virtual functions (its vtable and typeinfo).
#include "bad_kernel.h"

struct Policy {
  __aicore__ virtual float Scale() const { return 1.0f; }
};
struct Double : Policy {
  __aicore__ float Scale() const override { return 2.0f; }
};

__aicore__ inline float ScaleOf(const Policy& p) { return p.Scale(); }

extern "C" __global__ __aicore__ void bad_virtual_policy(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  Double p;
  StoreScaled(out, ScaleOf(p));
}
