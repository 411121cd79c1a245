#pragma once
#include <string>

namespace actgrad::rt {
struct Stream {
  int deferred_error = 0;
  std::string deferred_message;
};
bool IsLiveStream(void* s);
void RecordStreamError(void* s, int code, const std::string& msg);
}  // namespace actgrad::rt
