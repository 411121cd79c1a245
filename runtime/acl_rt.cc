// The CANN runtime subset on the CPU: the device is this host, device memory
// is host memory, a stream is an in-order queue whose tasks run at enqueue.
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "acl/acl.h"
#include "runtime/error.h"
#include "runtime/objects.h"
#include "runtime/slot_pool.h"
#include "runtime/stream.h"

using actgrad::rt::Fail;

namespace actgrad::rt {
namespace {
std::mutex g_mu;
bool g_initialized = false;
std::unordered_map<void*, size_t>& Allocations() {
  static auto* m = new std::unordered_map<void*, size_t>;
  return *m;
}
// Every stream ever created (never freed: runtime/slot_pool.h).
SlotPool<Stream>& Streams() {
  static auto* p = new SlotPool<Stream>;
  return *p;
}
}  // namespace

bool IsLiveStream(void* s) {
  return Streams().Contains(s) && (static_cast<Stream*>(s)->state.load(std::memory_order_acquire) & kStreamLive);
}

// Changes of a stream's deferred error and of its liveness hold g_mu.
void RecordStreamError(void* s, int code, const std::string& msg) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* st = static_cast<Stream*>(s);
  if (IsLiveStream(st) && st->deferred_error.load(std::memory_order_relaxed) == 0) {
    st->deferred_message = msg;
    st->deferred_error.store(code, std::memory_order_release);
  }
}
}  // namespace actgrad::rt

using namespace actgrad::rt;

namespace {
// aclrtMemcpy and aclrtMemcpyAsync; kind as the raw int the caller passed.
aclError Memcpy(const char* name, void* dst, size_t dest_max, const void* src, size_t count, int32_t kind) {
  if (kind < ACL_MEMCPY_HOST_TO_HOST || kind > ACL_MEMCPY_DEFAULT)
    return Fail(ACL_ERROR_INVALID_PARAM, "%s: unknown kind %d", name, kind);
  if (count == 0) return ACL_SUCCESS;
  if (!dst || !src) return Fail(ACL_ERROR_INVALID_PARAM, "%s: %s is null", name, dst ? "src" : "dst");
  if (count > dest_max) return Fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu exceeds destMax %zu", name, count, dest_max);
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}
}  // namespace

extern "C" {

size_t aclDataTypeSize(aclDataType t) {
  switch (RawEnum(t)) {  // any int may arrive here: no enum load
    case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
    case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
    case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
    case ACL_INT64: case ACL_UINT64: case ACL_DOUBLE: case ACL_COMPLEX64: return 8;
    case ACL_COMPLEX128: return 16;
    default: return 0;
  }
}

aclError aclInit(const char*) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_initialized) return Fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
  g_initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_initialized = false;
  return ACL_SUCCESS;
}

aclError aclrtSetDevice(int32_t id) {
  if (id != 0) return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice: device %d does not exist (the CPU is device 0)", id);
  return ACL_SUCCESS;
}
aclError aclrtResetDevice(int32_t id) {
  if (id != 0) return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice: device %d does not exist", id);
  return ACL_SUCCESS;
}
aclError aclrtGetDevice(int32_t* id) {
  if (!id) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is null");
  *id = 0;
  return ACL_SUCCESS;
}
aclError aclrtGetDeviceCount(uint32_t* count) {
  if (!count) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is null");
  *count = 1;
  return ACL_SUCCESS;
}
aclError aclrtGetRunMode(aclrtRunMode* mode) {
  if (!mode) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode is null");
  *mode = ACL_HOST;
  return ACL_SUCCESS;
}

aclError aclrtCreateStream(aclrtStream* stream) {
  if (!stream) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is null");
  Stream* s = Streams().Take();
  if (!s) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateStream: out of memory");
  std::lock_guard<std::mutex> lock(g_mu);
  s->deferred_error.store(0, std::memory_order_relaxed);
  s->deferred_message.clear();
  s->state.store(s->state.load(std::memory_order_relaxed) | kStreamLive, std::memory_order_release);
  *stream = s;
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto* s = static_cast<Stream*>(stream);
  if (!IsLiveStream(s)) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: not a live stream");
  s->deferred_error.store(0, std::memory_order_relaxed);
  s->deferred_message.clear();
  SlotPool<Stream>::Give(s);  // not live, free for the next aclrtCreateStream
  return ACL_SUCCESS;
}

// Work already ran in order at enqueue; report (once) the first deferred error.
// Without one (the usual case) no lock is taken.
aclError aclrtSynchronizeStream(aclrtStream stream) {
  auto* s = static_cast<Stream*>(stream);
  if (stream == nullptr) return ACL_SUCCESS;  // the default stream
  if (IsLiveStream(s) && s->deferred_error.load(std::memory_order_acquire) == 0) return ACL_SUCCESS;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!IsLiveStream(s)) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStream: not a live stream");
  if (const int code = s->deferred_error.load(std::memory_order_relaxed); code != 0) {
    Fail(code, "%s", s->deferred_message.c_str());
    s->deferred_error.store(0, std::memory_order_relaxed);
    s->deferred_message.clear();
    return code;
  }
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

aclError aclrtMalloc(void** ptr, size_t size, aclrtMemMallocPolicy policy) {
  if (!ptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is null");
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size is 0");
  if (RawEnum(policy) < 0 || RawEnum(policy) > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: unknown policy %d", RawEnum(policy));
  // 64-byte aligned like device memory (and AVX-512 loads).
  void* p = std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (!p) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMalloc: out of memory (%zu bytes)", size);
  std::lock_guard<std::mutex> lock(g_mu);
  Allocations()[p] = size;
  *ptr = p;
  return ACL_SUCCESS;
}

aclError aclrtFree(void* ptr) {
  if (!ptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr is null");
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!Allocations().erase(ptr)) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: pointer was not allocated by aclrtMalloc");
  }
  std::free(ptr);
  return ACL_SUCCESS;
}

aclError aclrtMallocHost(void** ptr, size_t size) { return aclrtMalloc(ptr, size, ACL_MEM_MALLOC_NORMAL_ONLY); }
aclError aclrtFreeHost(void* ptr) { return aclrtFree(ptr); }

aclError aclrtMemcpy(void* dst, size_t dest_max, const void* src, size_t count, aclrtMemcpyKind kind) {
  return Memcpy("aclrtMemcpy", dst, dest_max, src, count, RawEnum(kind));
}

aclError aclrtMemcpyAsync(void* dst, size_t dest_max, const void* src, size_t count, aclrtMemcpyKind kind,
                          aclrtStream stream) {
  if (stream && !IsLiveStream(stream)) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpyAsync: not a live stream");
  return Memcpy("aclrtMemcpyAsync", dst, dest_max, src, count, RawEnum(kind));
}

aclError aclrtMemset(void* ptr, size_t max_count, int32_t value, size_t count) {
  if (count == 0) return ACL_SUCCESS;
  if (!ptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: devPtr is null");
  if (count > max_count) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: count %zu exceeds maxCount %zu", count, max_count);
  std::memset(ptr, value, count);
  return ACL_SUCCESS;
}

}  // extern "C"
