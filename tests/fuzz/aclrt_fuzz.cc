// libFuzzer target: the CPU runtime's CANN surface (contexts, streams,
// events, async memset, synchronisation; runtime/acl_*.cc) driven by
// arbitrary call sequences over a few handle slots, each slot live, destroyed
// (a stale handle) or garbage (a pointer that was never a handle).
// Invariants: no crash, hang or sanitizer report; every call returns
// ACL_SUCCESS or an ACL error code with a message for aclGetRecentErrMsg;
// an elapsed time that succeeds is finite; aclrtMemsetAsync writes value to
// exactly count bytes when it succeeds and nothing when it fails; the current
// context a call reports is one this input made or the default one.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "acl/acl.h"

namespace {

[[noreturn]] void Fail(const char* what, int code) {
  std::fprintf(stderr, "aclrt_fuzz: %s (code %d, message '%s')\n", what, code, aclGetRecentErrMsg());
  std::abort();
}

// ACL_SUCCESS, or a code of the ACL ranges (1xxxxx parameter, 2xxxxx
// feature, 5xxxxx runtime) with a message.
void Check(aclError e, const char* call) {
  if (e == ACL_SUCCESS) return;
  if (e < 100000 || e >= 600000) Fail(call, e);
  const char* m = aclGetRecentErrMsg();
  if (!m || !*m) Fail("an error without a message", e);
}

// Reads the input front to back; zeros past its end.
struct Reader {
  const uint8_t* p;
  size_t n, i = 0;
  bool More() const { return i < n; }
  uint8_t Byte() { return i < n ? p[i++] : 0; }
  uint32_t U32() { return uint32_t(Byte()) | uint32_t(Byte()) << 8 | uint32_t(Byte()) << 16 | uint32_t(Byte()) << 24; }
};

constexpr int kSlots = 3;
template <typename H>
struct Slots {
  H h[kSlots] = {};
  bool live[kSlots] = {};
  // A handle to pass: a slot's (live, stale or never set), null, or garbage.
  H Pick(uint8_t b, void* garbage) const {
    const int s = b % (kSlots + 2);
    if (s == kSlots) return nullptr;
    if (s == kSlots + 1) return static_cast<H>(garbage);
    return h[s];
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool inited = [] { return aclInit(nullptr) == ACL_SUCCESS; }();
  if (!inited) Fail("aclInit failed", -1);
  Reader in{data, size};
  alignas(64) static unsigned char garbage_bytes[256];  // never a handle
  void* garbage = garbage_bytes;
  Slots<aclrtContext> ctx;
  Slots<aclrtStream> str;
  Slots<aclrtEvent> ev;
  int devices_set = 0;
  std::vector<unsigned char> buf(128);  // off + maxCount stays inside it
  for (int steps = 0; in.More() && steps < 64; ++steps) {
    const uint8_t op = in.Byte() % 19, a = in.Byte(), b = in.Byte();
    const int sa = a % kSlots;
    switch (op) {
      case 0: {
        aclrtContext c = nullptr;
        const aclError e = aclrtCreateContext(&c, int32_t(b % 3) - 1);
        Check(e, "aclrtCreateContext");
        if (e == ACL_SUCCESS) {
          if (!c) Fail("aclrtCreateContext succeeded with a null context", 0);
          if (ctx.live[sa]) Check(aclrtDestroyContext(ctx.h[sa]), "aclrtDestroyContext");
          ctx.h[sa] = c, ctx.live[sa] = true;
        }
        break;
      }
      case 1: {
        const aclrtContext c = ctx.Pick(a, garbage);
        const aclError e = aclrtDestroyContext(c);
        Check(e, "aclrtDestroyContext");
        for (int s = 0; s < kSlots; ++s)
          if (e == ACL_SUCCESS && ctx.h[s] == c) ctx.live[s] = false;
        break;
      }
      case 2: Check(aclrtSetCurrentContext(ctx.Pick(a, garbage)), "aclrtSetCurrentContext"); break;
      case 3: {
        aclrtContext c = nullptr;
        const aclError e = aclrtGetCurrentContext(b & 1 ? nullptr : &c);
        Check(e, "aclrtGetCurrentContext");
        if (e == ACL_SUCCESS && !(b & 1) && !c) Fail("a current context that is null", 0);
        break;
      }
      case 4: {
        aclrtStream s = nullptr;
        const aclError e = aclrtCreateStream(b & 1 ? nullptr : &s);
        Check(e, "aclrtCreateStream");
        if (e == ACL_SUCCESS && !(b & 1)) {
          if (str.live[sa]) aclrtDestroyStream(str.h[sa]);  // may belong to another context: refused, kept
          str.h[sa] = s, str.live[sa] = true;
        }
        break;
      }
      case 5: Check(aclrtDestroyStream(str.Pick(a, garbage)), "aclrtDestroyStream"); break;
      case 6: {
        aclrtEvent e = nullptr;
        const aclError st = b & 1 ? aclrtCreateEventWithFlag(&e, in.U32() & 0x7f) : aclrtCreateEvent(&e);
        Check(st, "aclrtCreateEvent[WithFlag]");
        if (st == ACL_SUCCESS) {
          if (ev.live[sa]) aclrtDestroyEvent(ev.h[sa]);
          ev.h[sa] = e, ev.live[sa] = true;
        }
        break;
      }
      case 7: Check(aclrtDestroyEvent(ev.Pick(a, garbage)), "aclrtDestroyEvent"); break;
      case 8: Check(aclrtRecordEvent(ev.Pick(a, garbage), str.Pick(b, garbage)), "aclrtRecordEvent"); break;
      case 9: Check(aclrtResetEvent(ev.Pick(a, garbage), str.Pick(b, garbage)), "aclrtResetEvent"); break;
      case 10: Check(aclrtSynchronizeEvent(ev.Pick(a, garbage)), "aclrtSynchronizeEvent"); break;
      case 11: {
        aclrtEventRecordedStatus status;
        Check(aclrtQueryEventStatus(ev.Pick(a, garbage), b & 1 ? nullptr : &status), "aclrtQueryEventStatus");
        break;
      }
      case 12: {
        float ms = 0;
        const aclError e = aclrtEventElapsedTime(in.Byte() & 1 ? nullptr : &ms, ev.Pick(a, garbage), ev.Pick(b, garbage));
        Check(e, "aclrtEventElapsedTime");
        if (e == ACL_SUCCESS && !std::isfinite(ms)) Fail("an elapsed time that is not finite", 0);
        break;
      }
      case 13: Check(aclrtStreamWaitEvent(str.Pick(a, garbage), ev.Pick(b, garbage)), "aclrtStreamWaitEvent"); break;
      case 14: {  // memset of [off, off + count) with maxCount max into the buffer
        const size_t off = in.Byte() % 32, max = in.Byte() % 72, count = in.Byte() % 80;
        const int32_t value = int32_t(in.Byte()) - 64;
        std::memset(buf.data(), 0xA5, buf.size());
        const aclError e = aclrtMemsetAsync(b & 1 ? nullptr : buf.data() + off, max, value, count, str.Pick(a, garbage));
        Check(e, "aclrtMemsetAsync");
        for (size_t i = 0; i < buf.size(); ++i) {
          const bool set = e == ACL_SUCCESS && !(b & 1) && i >= off && i < off + count;
          if (buf[i] != (set ? static_cast<unsigned char>(value) : 0xA5)) Fail("aclrtMemsetAsync wrote the wrong bytes", e);
        }
        break;
      }
      case 15: {
        const int32_t timeout = int32_t(int8_t(b));
        Check(aclrtSynchronizeStreamWithTimeout(str.Pick(a, garbage), timeout), "aclrtSynchronizeStreamWithTimeout");
        break;
      }
      case 16: {
        size_t free_b = 0, total_b = 0;
        const aclError e = aclrtGetMemInfo(static_cast<aclrtMemAttr>(int(b) - 8), a & 1 ? nullptr : &free_b,
                                           a & 2 ? nullptr : &total_b);
        Check(e, "aclrtGetMemInfo");
        if (e == ACL_SUCCESS && !(a & 3) && free_b > total_b) Fail("free memory above the total", 0);
        break;
      }
      case 17: {
        const int32_t dev = int32_t(b % 3) - 1;
        if (a & 1) {
          const aclError e = aclrtSetDevice(dev);
          Check(e, "aclrtSetDevice");
          devices_set += e == ACL_SUCCESS;
        } else if (devices_set > 0) {
          const aclError e = aclrtResetDevice(dev);
          Check(e, "aclrtResetDevice");
          devices_set -= e == ACL_SUCCESS;
        }
        break;
      }
      default: Check(aclrtSynchronizeStream(str.Pick(a, garbage)), "aclrtSynchronizeStream"); break;
    }
  }
  // Leave nothing behind for the next input (results are not checked: a
  // reset device or a destroyed context may have taken the handles with it).
  for (int s = 0; s < kSlots; ++s) {
    if (ev.live[s]) aclrtDestroyEvent(ev.h[s]);
    if (str.live[s]) aclrtDestroyStream(str.h[s]);
  }
  for (int s = 0; s < kSlots; ++s)
    if (ctx.live[s]) aclrtDestroyContext(ctx.h[s]);
  while (devices_set-- > 0) aclrtResetDevice(0);
  aclrtSetCurrentContext(nullptr);
  return 0;
}
