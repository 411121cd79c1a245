// Helpers shared by the Atlas tests: storage encoding, SoC loading.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "actgrad/half.h"
#include "actgrad/types.h"
#include "soc.h"

namespace atlas_test {

using actgrad::DType;

inline void Store(DType t, std::vector<uint8_t>& buf, size_t i, double v) {
  switch (t) {
    case DType::kF32: {
      const float f = float(v);
      std::memcpy(&buf[i * 4], &f, 4);
      break;
    }
    case DType::kF16: {
      const uint16_t h = actgrad::FloatToHalf(float(v));
      std::memcpy(&buf[i * 2], &h, 2);
      break;
    }
    case DType::kBF16: {
      const uint16_t h = actgrad::FloatToBF16(float(v));
      std::memcpy(&buf[i * 2], &h, 2);
      break;
    }
    case DType::kI32: {
      const int32_t x = int32_t(v);
      std::memcpy(&buf[i * 4], &x, 4);
      break;
    }
    case DType::kI8: {
      const int8_t x = int8_t(v);
      std::memcpy(&buf[i], &x, 1);
      break;
    }
  }
}

inline void StoreBits16(std::vector<uint8_t>& buf, size_t i, uint16_t bits) { std::memcpy(&buf[i * 2], &bits, 2); }

inline double Load(DType t, const std::vector<uint8_t>& buf, size_t i) {
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, &buf[i * 4], 4);
      return f;
    }
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, &buf[i * 2], 2);
      return actgrad::HalfToFloat(h);
    }
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, &buf[i * 2], 2);
      return actgrad::BF16ToFloat(h);
    }
    case DType::kI32: {
      int32_t x;
      std::memcpy(&x, &buf[i * 4], 4);
      return x;
    }
    case DType::kI8: {
      int8_t x;
      std::memcpy(&x, &buf[i], 1);
      return x;
    }
  }
  return 0;
}

inline actgrad::atlas::SocInfo Soc(const char* name) { return actgrad::atlas::LoadSocByName(name); }

// A small made-up SoC: 7 cores, 40 KiB UB (tiling corner cases).
inline actgrad::atlas::SocInfo TinySoc() {
  auto s = Soc("ascend910b");
  s.name = "tiny7";
  s.vector_cores = 7;
  s.ub_bytes = 48 * 1024;
  s.ub_reserved_bytes = 8 * 1024;
  return s;
}

}  // namespace atlas_test
