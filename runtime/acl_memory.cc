// Device memory on the CPU: host memory, 64-byte aligned like device memory
// (and AVX-512 loads). Copies and sets on a stream run at enqueue.
#include <sys/sysinfo.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "acl/acl.h"
#include "runtime/acl_objects.h"
#include "runtime/error.h"
#include "runtime/raw_enum.h"

using namespace actgrad::rt;

namespace {
std::mutex g_alloc_mu;
std::unordered_map<void*, size_t>& Allocations() {  // guarded by g_alloc_mu
  static auto* m = new std::unordered_map<void*, size_t>;
  return *m;
}

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

// aclrtMemset and aclrtMemsetAsync: value is taken as a byte, as CANN does.
aclError Memset(const char* name, void* ptr, size_t max_count, int32_t value, size_t count) {
  if (count == 0) return ACL_SUCCESS;
  if (!ptr) return Fail(ACL_ERROR_INVALID_PARAM, "%s: devPtr is null", name);
  if (count > max_count) return Fail(ACL_ERROR_INVALID_PARAM, "%s: count %zu exceeds maxCount %zu", name, count, max_count);
  std::memset(ptr, value, count);
  return ACL_SUCCESS;
}

// The host's available and total memory in bytes: /proc/meminfo's
// MemAvailable and MemTotal (what can be allocated without swapping), else
// sysinfo's free and total RAM.
bool HostMemory(size_t* free, size_t* total) {
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    unsigned long long avail_kb = 0, total_kb = 0, kb = 0;
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      if (std::sscanf(line, "MemTotal: %llu kB", &kb) == 1) total_kb = kb;
      else if (std::sscanf(line, "MemAvailable: %llu kB", &kb) == 1) avail_kb = kb;
    }
    std::fclose(f);
    if (total_kb > 0 && avail_kb > 0) {
      *free = size_t(avail_kb) * 1024;
      *total = size_t(total_kb) * 1024;
      return true;
    }
  }
  struct sysinfo si;
  if (sysinfo(&si) != 0 || si.totalram == 0) return false;
  *free = size_t(si.freeram) * si.mem_unit;
  *total = size_t(si.totalram) * si.mem_unit;
  return true;
}
}  // namespace

extern "C" {

aclError aclrtMalloc(void** ptr, size_t size, aclrtMemMallocPolicy policy) {
  if (!ptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr is null");
  if (size == 0) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size is 0");
  if (RawEnum(policy) < 0 || RawEnum(policy) > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
    return Fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: unknown policy %d", RawEnum(policy));
  void* p = size > SIZE_MAX - 63 ? nullptr : std::aligned_alloc(64, (size + 63) / 64 * 64);
  if (!p) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtMalloc: out of memory (%zu bytes)", size);
  std::lock_guard<std::mutex> lock(g_alloc_mu);
  Allocations()[p] = size;
  *ptr = p;
  return ACL_SUCCESS;
}

aclError aclrtFree(void* ptr) {
  if (!ptr) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr is null");
  {
    std::lock_guard<std::mutex> lock(g_alloc_mu);
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
  Context* c;
  if (const int st = CheckTaskStream("aclrtMemcpyAsync", stream, &c)) return st;
  return Memcpy("aclrtMemcpyAsync", dst, dest_max, src, count, RawEnum(kind));
}

aclError aclrtMemset(void* ptr, size_t max_count, int32_t value, size_t count) {
  return Memset("aclrtMemset", ptr, max_count, value, count);
}

aclError aclrtMemsetAsync(void* ptr, size_t max_count, int32_t value, size_t count, aclrtStream stream) {
  Context* c;
  if (const int st = CheckTaskStream("aclrtMemsetAsync", stream, &c)) return st;
  return Memset("aclrtMemsetAsync", ptr, max_count, value, count);
}

// Every attribute is the host memory aclrtMalloc draws from (every policy
// allocates the same way here), so every one reports the same figures.
aclError aclrtGetMemInfo(aclrtMemAttr attr, size_t* free, size_t* total) {
  if (!free || !total) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetMemInfo: %s is null", free ? "total" : "free");
  if (RawEnum(attr) < ACL_DDR_MEM || RawEnum(attr) > ACL_MEM_P2P_HUGE1G)
    return Fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtGetMemInfo: unknown memory attribute %d", RawEnum(attr));
  if (!HostMemory(free, total))
    return Fail(ACL_ERROR_RT_INTERNAL_ERROR, "aclrtGetMemInfo: neither /proc/meminfo nor sysinfo gives the memory");
  return ACL_SUCCESS;
}

}  // extern "C"
