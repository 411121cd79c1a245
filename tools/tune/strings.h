// Two string idioms the tuner's files share: one number printf-formatted, and
// an error message handed back through an optional out-parameter.
#pragma once
#include <cstdio>
#include <string>

namespace actgrad::tune {

// printf's `f` (one conversion) applied to v.
inline std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

// *error = msg when error is set; false, for `return Fail(error, ...)`.
inline bool Fail(std::string* error, const std::string& msg) {
  if (error) *error = msg;
  return false;
}

}  // namespace actgrad::tune
