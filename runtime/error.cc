#include "runtime/error.h"

#include <cstdio>

#include "acl/acl_base.h"

namespace actgrad::rt {

namespace {
thread_local std::string g_last_error;
}

int Fail(int code, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_last_error.assign("[").append(std::to_string(code)).append("] ").append(buf);
  return code;
}

void ClearError() { g_last_error.clear(); }
const char* RecentError() { return g_last_error.c_str(); }

}  // namespace actgrad::rt

extern "C" const char* aclGetRecentErrMsg(void) { return actgrad::rt::RecentError(); }
