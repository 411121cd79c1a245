// actgrad-percall-probe: a loop of complete calls through the public API on
// three contiguous 4K f32 tensors, for counting instructions per call under
// callgrind (the shared VM's noise does not touch the counts; docs/
// performance.md, "Per-call cost"). No timing, no peers, nothing but the
// library linked, so that a run costs seconds under valgrind:
//   actgrad-percall-probe <selu|hardswish|gelu|softshrink|logit> <calls> [phase1|both] [n]
//     phase1: aclnnXxxGetWorkspaceSize + aclDestroyAclOpExecutor
//     both:   phase one, phase two, aclrtSynchronizeStream (the default)
// Per call: (count at calls = N+1 - count at calls = 1) / N, e.g.
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null ./bench/actgrad-percall-probe softshrink 2001 both
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_hardswish_backward.h"
#include "aclnnop/aclnn_logit_grad.h"
#include "aclnnop/aclnn_selu_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"

int main(int argc, char** argv) {
  const char* ops[] = {"selu", "hardswish", "gelu", "softshrink", "logit"};
  int op = -1;
  for (int i = 0; argc > 1 && i < 5; ++i)
    if (std::strcmp(argv[1], ops[i]) == 0) op = i;
  const long calls = argc > 2 ? std::atol(argv[2]) : 0;
  const bool phase1 = argc > 3 && std::strcmp(argv[3], "phase1") == 0;
  const int64_t n = argc > 4 ? std::atoll(argv[4]) : 4096;
  if (op < 0 || calls <= 0 || n <= 0) {
    std::fprintf(stderr, "usage: %s <selu|hardswish|gelu|softshrink|logit> <calls> [phase1|both] [n]\n", argv[0]);
    return 2;
  }
  aclrtStream stream = nullptr;
  if (aclInit(nullptr) != 0 || aclrtSetDevice(0) != 0 || aclrtCreateStream(&stream) != 0) return 1;
  std::vector<float> g(static_cast<size_t>(n)), x(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    g[size_t(i)] = 0.5f + float(i % 9) / 8.0f;
    x[size_t(i)] = float(i % 31) / 31.0f;  // in [0, 1): LogitGrad's domain, the others' too
  }
  const int64_t dims[1] = {n}, strides[1] = {1};
  aclTensor* tg = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, g.data());
  aclTensor* tx = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, x.data());
  aclTensor* to = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, out.data());
  float lambd_value = 0.5f;
  aclScalar* lambd = aclCreateScalar(&lambd_value, ACL_FLOAT);
  long failed = 0;
  for (long i = 0; i < calls; ++i) {
    uint64_t ws = 0;
    aclOpExecutor* ex = nullptr;
    int st = 0;
    switch (op) {
      case 0: st = aclnnSeluBackwardGetWorkspaceSize(tg, tx, to, &ws, &ex); break;
      case 1: st = aclnnHardswishBackwardGetWorkspaceSize(tg, tx, to, &ws, &ex); break;
      case 2: st = aclnnGeluBackwardGetWorkspaceSize(tg, tx, to, &ws, &ex); break;
      case 3: st = aclnnSoftshrinkBackwardGetWorkspaceSize(tg, tx, lambd, to, &ws, &ex); break;
      default: st = aclnnLogitGradGetWorkspaceSize(tx, tg, -1.0, to, &ws, &ex); break;
    }
    if (phase1) {
      failed += st != 0 || aclDestroyAclOpExecutor(ex) != 0;
      continue;
    }
    switch (op) {
      case 0: st |= aclnnSeluBackward(nullptr, ws, ex, stream); break;
      case 1: st |= aclnnHardswishBackward(nullptr, ws, ex, stream); break;
      case 2: st |= aclnnGeluBackward(nullptr, ws, ex, stream); break;
      case 3: st |= aclnnSoftshrinkBackward(nullptr, ws, ex, stream); break;
      default: st |= aclnnLogitGrad(nullptr, ws, ex, stream); break;
    }
    failed += st != 0 || aclrtSynchronizeStream(stream) != 0;
  }
  aclDestroyScalar(lambd);
  aclDestroyTensor(tg);
  aclDestroyTensor(tx);
  aclDestroyTensor(to);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  if (failed) std::fprintf(stderr, "%ld calls failed: %s\n", failed, aclGetRecentErrMsg());
  return failed ? 1 : 0;
}
