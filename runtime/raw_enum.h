// The int behind an enum argument of the C API.
#pragma once
#include <cstdint>
#include <cstring>

namespace actgrad::rt {
// Read without an enum load: a caller may pass any int32 as an enum (e.g.
// (aclDataType)12345), and loading that as the enum is undefined behaviour.
template <class Enum>
int32_t RawEnum(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int32_t));
  int32_t raw;
  std::memcpy(&raw, &e, sizeof raw);
  return raw;
}
}  // namespace actgrad::rt
