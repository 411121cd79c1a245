// The CANN runtime on the CPU: process, streams and their synchronization.
// The device is this host (acl_context.cc), device memory is host memory
// (acl_memory.cc), a stream is an in-order queue whose tasks run at enqueue
// (runtime/stream.h), an event records when its stream reaches it
// (acl_events.cc). Library actgrad_acl_cpu: a program linking CANN's
// libascendcl links the rest of the project without these.
#include <mutex>
#include <new>

#include "acl/acl.h"
#include "runtime/acl_objects.h"
#include "runtime/error.h"
#include "runtime/stream.h"

using namespace actgrad::rt;

namespace {
bool g_initialized = false;  // RuntimeMutex

// Work already ran in order at enqueue, so there is nothing to wait for:
// report (once) the first deferred error. Without one (the usual case) no
// lock is taken. A stream of another context is fine (CANN switches to it).
aclError Synchronize(const char* name, aclrtStream stream) {
  auto* s = static_cast<Stream*>(stream);
  if (stream == nullptr) return ACL_SUCCESS;  // the default stream
  if (IsLiveStream(s) && s->deferred_error.load(std::memory_order_acquire) == 0) return ACL_SUCCESS;
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  if (!IsLiveStream(s)) return Fail(ACL_ERROR_INVALID_PARAM, "%s: not a live stream", name);
  if (const int code = s->deferred_error.load(std::memory_order_relaxed); code != 0) {
    Fail(code, "%s", s->deferred_message.c_str());
    s->deferred_error.store(0, std::memory_order_relaxed);
    s->deferred_message.clear();
    return code;
  }
  return ACL_SUCCESS;
}
}  // namespace

extern "C" {

aclError aclInit(const char*) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  if (g_initialized) return Fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
  g_initialized = true;
  return ACL_SUCCESS;
}

aclError aclFinalize(void) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  g_initialized = false;
  return ACL_SUCCESS;
}

aclError aclrtGetRunMode(aclrtRunMode* mode) {
  if (!mode) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode is null");
  *mode = ACL_HOST;
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeDevice(void) { return ACL_SUCCESS; }

// The stream belongs to the calling thread's current context (the default
// context if it has none).
aclError aclrtCreateStream(aclrtStream* stream) {
  if (!stream) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream: stream is null");
  Stream* s = Streams().Take();
  if (!s) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateStream: out of memory");
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  Context* c = CurrentOrDefault();
  try {
    c->streams.push_back(s);
  } catch (const std::bad_alloc&) {
    SlotPool<Stream>::Give(s);
    return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateStream: out of memory");
  }
  s->context.store(c, std::memory_order_relaxed);
  s->deferred_error.store(0, std::memory_order_relaxed);
  s->deferred_message.clear();
  s->state.store(s->state.load(std::memory_order_relaxed) | kStreamLive, std::memory_order_release);
  *stream = s;
  return ACL_SUCCESS;
}

aclError aclrtDestroyStream(aclrtStream stream) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  auto* s = static_cast<Stream*>(stream);
  if (!IsLiveStream(s)) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyStream: not a live stream");
  if (s->context.load(std::memory_order_relaxed) != CurrentOrDefault())
    return Fail(ACL_ERROR_RT_STREAM_CONTEXT,
                "aclrtDestroyStream: the stream belongs to another context than the calling thread's current one");
  RetireStream(s);
  return ACL_SUCCESS;
}

aclError aclrtSynchronizeStream(aclrtStream stream) { return Synchronize("aclrtSynchronizeStream", stream); }

// timeout: -1 waits forever, > 0 milliseconds (CANN refuses 0 and < -1). No
// task is ever pending here, so the wait never runs into the timeout
// (ACL_ERROR_RT_STREAM_SYNC_TIMEOUT).
aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  if (timeout == 0 || timeout < -1)
    return Fail(ACL_ERROR_RT_PARAM_INVALID,
                "aclrtSynchronizeStreamWithTimeout: timeout %d is neither -1 (wait forever) nor a positive number "
                "of milliseconds",
                timeout);
  return Synchronize("aclrtSynchronizeStreamWithTimeout", stream);
}

}  // extern "C"
