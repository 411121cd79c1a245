// Device 0 and its contexts (CANN's model): aclrtSetDevice makes the device's
// default context current on the calling thread and counts; the aclrtResetDevice
// that undoes the last aclrtSetDevice destroys the default context's streams
// and events. aclrtCreateContext makes a context and makes it current;
// aclrtDestroyContext destroys it with its streams and events. The current
// context is per thread.
#include <new>

#include "acl/acl.h"
#include "runtime/acl_objects.h"
#include "runtime/error.h"

namespace actgrad::rt {
namespace {
int g_device_refs = 0;  // aclrtSetDevice calls not yet undone (RuntimeMutex)

// The calling thread's current context and the generation of its slot when
// it was made current (a destroyed context's slot may be taken again).
thread_local Context* t_current = nullptr;
thread_local uint64_t t_generation = 0;
}  // namespace

SlotPool<Context>& Contexts() {
  static auto* p = new SlotPool<Context>;  // never freed: runtime/slot_pool.h
  return *p;
}

Context* DefaultContext() {
  // Placement in static storage: no allocation that could fail, no destructor
  // that a thread still running at exit could race with.
  alignas(Context) static unsigned char storage[sizeof(Context)];
  static Context* const c = [] {
    auto* d = new (storage) Context;
    d->is_default = true;
    d->state.store(kSlotBusy | kContextLive, std::memory_order_release);
    return d;
  }();
  return c;
}

bool IsLiveContext(const void* c) {
  if (c == DefaultContext()) return true;
  return Contexts().Contains(c) &&
         (static_cast<const Context*>(c)->state.load(std::memory_order_acquire) & kContextLive);
}

Context* CurrentContext() {
  Context* c = t_current;
  if (!c || !IsLiveContext(c)) return nullptr;
  if ((c->state.load(std::memory_order_acquire) & kSlotGeneration) != t_generation) return nullptr;
  return c;
}

Context* CurrentOrDefault() {
  Context* c = CurrentContext();
  return c ? c : DefaultContext();
}

void SetCurrentContext(Context* c) {
  t_current = c;
  t_generation = c ? (c->state.load(std::memory_order_acquire) & kSlotGeneration) : 0;
}

namespace {
template <class T>
void Unlist(std::vector<T*>& list, T* x) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i] == x) {
      list[i] = list.back();
      list.pop_back();
      return;
    }
}

void ClearStream(Stream* s) {
  s->deferred_error.store(0, std::memory_order_relaxed);
  s->deferred_message.clear();
  s->context.store(nullptr, std::memory_order_relaxed);
  SlotPool<Stream>::Give(s);  // not live, free for the next aclrtCreateStream
}

void ClearEvent(Event* e) {
  e->error_message.clear();
  SlotPool<Event>::Give(e);
}
}  // namespace

void RetireStream(Stream* s) {
  if (auto* c = static_cast<Context*>(s->context.load(std::memory_order_relaxed))) Unlist(c->streams, s);
  ClearStream(s);
}

void RetireEvent(Event* e) {
  if (e->context) Unlist(e->context->events, e);
  ClearEvent(e);
}

void RetireContents(Context* c) {
  for (Stream* s : c->streams) ClearStream(s);
  for (Event* e : c->events) ClearEvent(e);
  c->streams.clear();
  c->events.clear();
}

int CheckTaskStream(const char* name, void* stream, Context** context) {
  Context* current = CurrentOrDefault();
  *context = current;
  if (!stream) return ACL_SUCCESS;  // the current context's default stream
  if (!IsLiveStream(stream)) return Fail(ACL_ERROR_INVALID_PARAM, "%s: not a live stream", name);
  if (static_cast<Stream*>(stream)->context.load(std::memory_order_acquire) != current)
    return Fail(ACL_ERROR_RT_STREAM_CONTEXT,
                "%s: the stream belongs to another context than the calling thread's current one", name);
  return ACL_SUCCESS;
}

}  // namespace actgrad::rt

using namespace actgrad::rt;

extern "C" {

aclError aclrtSetDevice(int32_t id) {
  if (id != 0) return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice: device %d does not exist (the CPU is device 0)", id);
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  ++g_device_refs;
  SetCurrentContext(DefaultContext());
  return ACL_SUCCESS;
}

aclError aclrtResetDevice(int32_t id) {
  if (id != 0) return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice: device %d does not exist", id);
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  if (g_device_refs > 0 && --g_device_refs == 0) RetireContents(DefaultContext());
  if (CurrentContext() == DefaultContext()) SetCurrentContext(nullptr);
  return ACL_SUCCESS;
}

aclError aclrtGetDevice(int32_t* id) {
  if (!id) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice: deviceId is null");
  *id = CurrentOrDefault()->device;
  return ACL_SUCCESS;
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (!count) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count is null");
  *count = 1;
  return ACL_SUCCESS;
}

aclError aclrtCreateContext(aclrtContext* context, int32_t id) {
  if (!context) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context is null");
  if (id != 0)
    return Fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtCreateContext: device %d does not exist (the CPU is device 0)", id);
  Context* c = Contexts().Take();
  if (!c) return Fail(ACL_ERROR_RT_MEMORY_ALLOCATION, "aclrtCreateContext: out of memory");
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  c->device = id;
  c->is_default = false;
  c->streams.clear();
  c->events.clear();
  c->state.store(c->state.load(std::memory_order_relaxed) | kContextLive, std::memory_order_release);
  SetCurrentContext(c);
  *context = c;
  return ACL_SUCCESS;
}

aclError aclrtDestroyContext(aclrtContext context) {
  if (!context) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: context is null");
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  if (!IsLiveContext(context)) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext: not a live context");
  auto* c = static_cast<Context*>(context);
  if (c->is_default)
    return Fail(ACL_ERROR_INVALID_PARAM,
                "aclrtDestroyContext: the default context of device %d is released by aclrtResetDevice", c->device);
  RetireContents(c);
  SlotPool<Context>::Give(c);  // the threads that had it current now have none (CurrentContext)
  return ACL_SUCCESS;
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  if (!context) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: context is null");
  if (!IsLiveContext(context)) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext: not a live context");
  SetCurrentContext(static_cast<Context*>(context));
  return ACL_SUCCESS;
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  if (!context) return Fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext: context is null");
  Context* c = CurrentContext();
  if (!c)
    return Fail(ACL_ERROR_RT_CONTEXT_NULL,
                "aclrtGetCurrentContext: the calling thread has no current context (aclrtSetDevice, "
                "aclrtCreateContext or aclrtSetCurrentContext gives it one)");
  *context = c;
  return ACL_SUCCESS;
}

}  // extern "C"
