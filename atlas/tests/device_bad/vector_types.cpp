// Compile-time rejections of the emulator (atlas/tests/device_code.cmake
// compiles this with -DBAD=n and expects the static_assert's message):
//   1: vector arithmetic on double; 2: Duplicate of double;
//   3: vector arithmetic on bfloat16_t (Cast to float first).
// BAD=0 is the same kernel on float and must compile.
#include "bad_kernel.h"

#ifndef BAD
#define BAD 0
#endif
#if BAD == 1 || BAD == 2
using Elem = double;
#elif BAD == 3
using Elem = bfloat16_t;
#else
using Elem = float;
#endif

extern "C" __global__ __aicore__ void bad_vector_types(GM_ADDR out) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  TPipe pipe;
  TBuf<> b;
  pipe.InitBuffer(b, 1024);
  LocalTensor<Elem> t = b.Get<Elem>();
#if BAD == 2
  Duplicate(t, Elem(1), 32);
#else
  Add(t, t, t, 32);
#endif
  (void)out;
}
