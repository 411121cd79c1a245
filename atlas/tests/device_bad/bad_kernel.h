// Deliberately bad AscendC kernels, compiled only for the device-code check
// (atlas/tests/device_code.cmake): each *.cpp here holds one construct that
// g++ and the emulator accept and CANN's device compiler does not, in an
// otherwise valid vector kernel. StoreScaled is that valid part: 64 floats
// of `scale` into GM.
#pragma once
#include "kernel_operator.h"

using namespace AscendC;

__aicore__ inline void StoreScaled(GM_ADDR out, float scale) {
  TPipe pipe;
  TQue<QuePosition::VECOUT, 1> q;
  pipe.InitBuffer(q, 1, 256);
  LocalTensor<float> t = q.AllocTensor<float>();
  Duplicate(t, 1.0f, 64);
  Muls(t, t, scale, 64);
  q.EnQue(t);
  LocalTensor<float> d = q.DeQue<float>();
  GlobalTensor<float> g;
  g.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out), 64);
  DataCopy(g, d, 64);
  q.FreeTensor(d);
}
