// Status + message for the acl/aclnn entry points (aclGetRecentErrMsg).
#pragma once
#include <cstdarg>
#include <string>

namespace actgrad::rt {

// Records a message for aclGetRecentErrMsg and returns code (printf-style).
int Fail(int code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
// Fail when report is true; else only returns code (a check run for its
// verdict alone: no message is formatted or recorded).
int FailIf(bool report, int code, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void ClearError();
const char* RecentError();

}  // namespace actgrad::rt
