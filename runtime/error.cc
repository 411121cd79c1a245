#include "runtime/error.h"

#include <cstdio>

#include "acl/acl_base.h"

namespace actgrad::rt {

namespace {
// "[<code>] <message>": the message is cut at 511 characters, the prefix is
// at most 14 ("[-2147483648] "). A plain array, not a std::string: a
// trivially constructed thread_local is one TLS access (no init guard), and
// recording a message allocates nothing.
constexpr size_t kMaxMessage = 512;
thread_local char g_last_error[kMaxMessage + 16];

int VFail(int code, const char* fmt, va_list ap) {
  const int prefix = std::snprintf(g_last_error, sizeof g_last_error, "[%d] ", code);
  std::vsnprintf(g_last_error + prefix, kMaxMessage, fmt, ap);
  return code;
}
}  // namespace

int Fail(int code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  VFail(code, fmt, ap);
  va_end(ap);
  return code;
}

int FailIf(bool report, int code, const char* fmt, ...) {
  if (!report) return code;
  va_list ap;
  va_start(ap, fmt);
  VFail(code, fmt, ap);
  va_end(ap);
  return code;
}

void ClearError() { g_last_error[0] = '\0'; }
const char* RecentError() { return g_last_error; }

}  // namespace actgrad::rt
