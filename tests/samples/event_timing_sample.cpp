/*
 * Timing aclnnGeluBackward the way CANN programs benchmark their ops: a
 * context, a copy stream and a compute stream ordered by events
 * (aclrtStreamWaitEvent), the output cleared with aclrtMemsetAsync, events
 * around the timed calls (aclrtEventElapsedTime), aclrtSynchronizeStreamWithTimeout,
 * aclrtGetMemInfo. Public headers only; it runs unchanged on actgrad's CPU
 * runtime. It checks its own results: every output value against the one for
 * its input, the elapsed time above zero and close to the host clock's
 * reading around the same work, and prints them.
 */
#include <chrono>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"

#define CHECK_RET(cond, return_expr) \
  do {                               \
    if (!(cond)) {                   \
      return_expr;                   \
    }                                \
  } while (0)

#define LOG_PRINT(message, ...)     \
  do {                              \
    printf(message, ##__VA_ARGS__); \
  } while (0)

#define ACL_CALL(expr)                                                                             \
  do {                                                                                             \
    auto ret_ = (expr);                                                                            \
    CHECK_RET(ret_ == ACL_SUCCESS,                                                                 \
              LOG_PRINT("%s failed. ERROR: %d (%s)\n", #expr, int(ret_), aclGetRecentErrMsg()); \
              return 1);                                                                           \
  } while (0)

namespace {
constexpr int64_t kElements = 1 << 20;
constexpr int kWarmup = 2;
constexpr int kTimed = 10;
constexpr int32_t kTimeoutMs = 60000;
// The inputs repeat these 8 values, so output i equals output i % 8.
const float kX[8] = {-3, -1, -0.5, 0, 0.5, 1, 2, 3};

aclTensor* CreateTensor(void* deviceAddr, int64_t n) {
  const int64_t shape[1] = {n};
  const int64_t strides[1] = {1};
  return aclCreateTensor(shape, 1, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, shape, 1, deviceAddr);
}

// The two phases of one aclnnGeluBackward on `stream`.
int GeluBackward(aclTensor* gradOutput, aclTensor* self, aclTensor* gradInput, void** workspace,
                 uint64_t* workspaceCap, aclrtStream stream) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  auto ret = aclnnGeluBackwardGetWorkspaceSize(gradOutput, self, gradInput, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGeluBackwardGetWorkspaceSize failed. ERROR: %d\n", ret); return 1);
  if (workspaceSize > *workspaceCap) {
    if (*workspace) aclrtFree(*workspace);
    ACL_CALL(aclrtMalloc(workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST));
    *workspaceCap = workspaceSize;
  }
  ret = aclnnGeluBackward(*workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnGeluBackward failed. ERROR: %d\n", ret); return 1);
  return 0;
}
}  // namespace

int main() {
  // 1. Runtime, device, an explicit context, two streams.
  const int32_t deviceId = 0;
  ACL_CALL(aclInit(nullptr));
  ACL_CALL(aclrtSetDevice(deviceId));
  aclrtContext context = nullptr;
  ACL_CALL(aclrtCreateContext(&context, deviceId));
  aclrtStream copyStream = nullptr, computeStream = nullptr;
  ACL_CALL(aclrtCreateStream(&copyStream));
  ACL_CALL(aclrtCreateStream(&computeStream));
  size_t freeBytes = 0, totalBytes = 0;
  ACL_CALL(aclrtGetMemInfo(ACL_HBM_MEM, &freeBytes, &totalBytes));
  LOG_PRINT("device memory: %zu MB free of %zu MB\n", freeBytes >> 20, totalBytes >> 20);
  CHECK_RET(totalBytes > 0 && freeBytes <= totalBytes, LOG_PRINT("aclrtGetMemInfo: implausible figures\n"); return 1);

  // 2. Inputs on the copy stream; the compute stream waits for them.
  const size_t bytes = kElements * sizeof(float);
  std::vector<float> gradOutputHost(kElements, 1.0f), selfHost(kElements);
  for (int64_t i = 0; i < kElements; ++i) selfHost[i] = kX[i % 8];
  void *gradOutputDev = nullptr, *selfDev = nullptr, *gradInputDev = nullptr, *workspace = nullptr;
  uint64_t workspaceCap = 0;
  ACL_CALL(aclrtMalloc(&gradOutputDev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  ACL_CALL(aclrtMalloc(&selfDev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  ACL_CALL(aclrtMalloc(&gradInputDev, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  aclrtEvent inputsReady = nullptr, start = nullptr, end = nullptr, computed = nullptr;
  ACL_CALL(aclrtCreateEventWithFlag(&inputsReady, ACL_EVENT_SYNC));
  ACL_CALL(aclrtCreateEventWithFlag(&computed, ACL_EVENT_SYNC));
  ACL_CALL(aclrtCreateEvent(&start));
  ACL_CALL(aclrtCreateEvent(&end));
  ACL_CALL(aclrtMemcpyAsync(gradOutputDev, bytes, gradOutputHost.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, copyStream));
  ACL_CALL(aclrtMemcpyAsync(selfDev, bytes, selfHost.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE, copyStream));
  ACL_CALL(aclrtRecordEvent(inputsReady, copyStream));
  ACL_CALL(aclrtStreamWaitEvent(computeStream, inputsReady));
  ACL_CALL(aclrtResetEvent(inputsReady, computeStream));
  // The output starts as NaN bits: any element the op does not write fails the check below.
  ACL_CALL(aclrtMemsetAsync(gradInputDev, bytes, 0xff, bytes, computeStream));

  aclTensor* gradOutput = CreateTensor(gradOutputDev, kElements);
  aclTensor* self = CreateTensor(selfDev, kElements);
  aclTensor* gradInput = CreateTensor(gradInputDev, kElements);
  CHECK_RET(gradOutput && self && gradInput, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return 1);

  // 3. Warm-up, then the timed calls between two events.
  for (int i = 0; i < kWarmup; ++i)
    CHECK_RET(GeluBackward(gradOutput, self, gradInput, &workspace, &workspaceCap, computeStream) == 0, return 1);
  ACL_CALL(aclrtSynchronizeStreamWithTimeout(computeStream, kTimeoutMs));
  const auto hostStart = std::chrono::steady_clock::now();
  ACL_CALL(aclrtRecordEvent(start, computeStream));
  for (int i = 0; i < kTimed; ++i)
    CHECK_RET(GeluBackward(gradOutput, self, gradInput, &workspace, &workspaceCap, computeStream) == 0, return 1);
  ACL_CALL(aclrtRecordEvent(end, computeStream));
  ACL_CALL(aclrtSynchronizeStreamWithTimeout(computeStream, kTimeoutMs));
  const auto hostEnd = std::chrono::steady_clock::now();
  float elapsedMs = 0.0f;
  ACL_CALL(aclrtEventElapsedTime(&elapsedMs, start, end));
  const double hostMs = std::chrono::duration<double, std::milli>(hostEnd - hostStart).count();
  const double perCallUs = elapsedMs * 1e3 / kTimed;
  LOG_PRINT("aclnnGeluBackward fp32 x %lld: %d calls in %.3f ms (events), %.3f ms (host clock), %.1f us per call, "
            "%.1f GB/s\n",
            (long long)kElements, kTimed, elapsedMs, hostMs, perCallUs, 3.0 * bytes / (perCallUs * 1e3));
  // The events lie inside the host's readings; the host's interval adds only
  // the calls around them (generous bounds: a busy machine may preempt us).
  CHECK_RET(elapsedMs > 0.0f, LOG_PRINT("elapsed time %f ms is not positive\n", elapsedMs); return 1);
  CHECK_RET(elapsedMs <= hostMs * 1.05 + 0.1,
            LOG_PRINT("elapsed %.3f ms exceeds the host clock's %.3f ms\n", elapsedMs, hostMs); return 1);
  CHECK_RET(elapsedMs >= hostMs * 0.2 - 1.0,
            LOG_PRINT("elapsed %.3f ms is far below the host clock's %.3f ms\n", elapsedMs, hostMs); return 1);

  // 4. The result back on the copy stream once the compute stream is done.
  ACL_CALL(aclrtRecordEvent(computed, computeStream));
  ACL_CALL(aclrtStreamWaitEvent(copyStream, computed));
  ACL_CALL(aclrtResetEvent(computed, copyStream));
  std::vector<float> result(kElements, 0.0f);
  ACL_CALL(aclrtMemcpyAsync(result.data(), bytes, gradInputDev, bytes, ACL_MEMCPY_DEVICE_TO_HOST, copyStream));
  ACL_CALL(aclrtSynchronizeStreamWithTimeout(copyStream, kTimeoutMs));
  int64_t mismatches = 0;
  for (int64_t i = 8; i < kElements; ++i) mismatches += !(result[i] == result[i % 8]);
  CHECK_RET(mismatches == 0, LOG_PRINT("%lld outputs differ from the output of the same input\n", (long long)mismatches);
            return 1);
  for (int64_t i = 0; i < 8; ++i) LOG_PRINT("result[%lld] is: %f\n", (long long)i, result[i]);

  // 5. Release.
  aclDestroyTensor(gradOutput);
  aclDestroyTensor(self);
  aclDestroyTensor(gradInput);
  for (aclrtEvent e : {inputsReady, start, end, computed}) ACL_CALL(aclrtDestroyEvent(e));
  for (void* p : {gradOutputDev, selfDev, gradInputDev}) ACL_CALL(aclrtFree(p));
  if (workspace) ACL_CALL(aclrtFree(workspace));
  ACL_CALL(aclrtDestroyStream(copyStream));
  ACL_CALL(aclrtDestroyStream(computeStream));
  ACL_CALL(aclrtDestroyContext(context));
  ACL_CALL(aclrtResetDevice(deviceId));
  ACL_CALL(aclFinalize());
  return 0;
}
