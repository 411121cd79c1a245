// actgrad-percall-probe: a loop of complete calls through the public API on
// three 4K f32 tensors, for counting instructions per call under
// callgrind (a shared machine's noise does not touch the counts; docs/
// performance.md, "Per-call cost"). No timing, no peers, nothing but the
// library linked, so that a run costs seconds under valgrind:
//   actgrad-percall-probe <selu|hardswish|gelu|softshrink|logit> <calls> [phase1|both] [n] [contig|splat|strided]
//     phase1: aclnnXxxGetWorkspaceSize + aclDestroyAclOpExecutor
//     both:   phase one, phase two, aclrtSynchronizeStream (the default)
//     contig: all three contiguous, shape [n] (the default)
//     splat:  g and out [n/64, 64] contiguous, x an expanded view of n/64
//             values (strides 1, 0): a splat x per 64-element run, the
//             runtime's tiles of runs (n a multiple of 64)
//     strided: g and x [n/1024, 4, 4, 64] views whose dims 1 and 2 are
//             swapped in storage, out contiguous: the benchmarks' strided
//             layout (n a multiple of 1024)
// Per call: (count at calls = N+1 - count at calls = 1) / N, e.g.
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null ./bench/actgrad-percall-probe softshrink 2001 both
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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
  const char* layout = argc > 5 ? argv[5] : "contig";
  const bool splat = std::strcmp(layout, "splat") == 0, strided = std::strcmp(layout, "strided") == 0;
  if (op < 0 || calls <= 0 || n <= 0 || (!splat && !strided && std::strcmp(layout, "contig") != 0) ||
      (splat && n % 64 != 0) || (strided && n % 1024 != 0)) {
    std::fprintf(stderr,
                 "usage: %s <selu|hardswish|gelu|softshrink|logit> <calls> [phase1|both] [n]"
                 " [contig|splat|strided]\n",
                 argv[0]);
    return 2;
  }
  aclrtStream stream = nullptr;
  if (aclInit(nullptr) != 0 || aclrtSetDevice(0) != 0 || aclrtCreateStream(&stream) != 0) return 1;
  // 64-byte aligned, as aclrtMalloc's memory (a std::vector's 16-byte
  // alignment would send a streaming-store variant through its peel per run).
  const size_t bytes = (size_t(n) * sizeof(float) + 63) / 64 * 64;
  std::unique_ptr<float, decltype(&std::free)> gb(static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free),
      xb(static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free),
      ob(static_cast<float*>(std::aligned_alloc(64, bytes)), &std::free);
  float *g = gb.get(), *x = xb.get(), *out = ob.get();
  if (!g || !x || !out) return 1;
  for (int64_t i = 0; i < n; ++i) {
    g[size_t(i)] = 0.5f + float(i % 9) / 8.0f;
    x[size_t(i)] = float(i % 31) / 31.0f;  // in [0, 1): LogitGrad's domain, the others' too
  }
  const int64_t dims[1] = {n}, strides[1] = {1};
  const int64_t rows[2] = {n / 64, 64}, row_strides[2] = {64, 1}, splat_strides[2] = {1, 0}, values[1] = {n / 64};
  // strided: storage [n/1024, 4, 4, 64] row-major, viewed with dims 1 and 2 swapped.
  const int64_t blocks[4] = {n / 1024, 4, 4, 64}, swapped[4] = {1024, 64, 256, 1}, dense[4] = {1024, 256, 64, 1};
  aclTensor *tg, *tx, *to;
  if (splat) {
    tg = aclCreateTensor(rows, 2, ACL_FLOAT, row_strides, 0, ACL_FORMAT_ND, rows, 2, g);
    tx = aclCreateTensor(rows, 2, ACL_FLOAT, splat_strides, 0, ACL_FORMAT_ND, values, 1, x);
    to = aclCreateTensor(rows, 2, ACL_FLOAT, row_strides, 0, ACL_FORMAT_ND, rows, 2, out);
  } else if (strided) {
    tg = aclCreateTensor(blocks, 4, ACL_FLOAT, swapped, 0, ACL_FORMAT_ND, blocks, 4, g);
    tx = aclCreateTensor(blocks, 4, ACL_FLOAT, swapped, 0, ACL_FORMAT_ND, blocks, 4, x);
    to = aclCreateTensor(blocks, 4, ACL_FLOAT, dense, 0, ACL_FORMAT_ND, blocks, 4, out);
  } else {
    tg = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, g);
    tx = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, x);
    to = aclCreateTensor(dims, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, dims, 1, out);
  }
  std::vector<char> workspace;  // the views' paths need one (tiles of runs)
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
    if (ws > workspace.size()) workspace.resize(ws);
    void* w = ws ? workspace.data() : nullptr;
    switch (op) {
      case 0: st |= aclnnSeluBackward(w, ws, ex, stream); break;
      case 1: st |= aclnnHardswishBackward(w, ws, ex, stream); break;
      case 2: st |= aclnnGeluBackward(w, ws, ex, stream); break;
      case 3: st |= aclnnSoftshrinkBackward(w, ws, ex, stream); break;
      default: st |= aclnnLogitGrad(w, ws, ex, stream); break;
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
