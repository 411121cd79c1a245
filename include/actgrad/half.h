// Scalar IEEE binary16 and bfloat16 conversions (round to nearest even),
// portable and exact; used by tails, the reference and the tests.
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>

namespace actgrad {

inline uint32_t FloatBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  const uint32_t man = h & 0x3FF;
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = float(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return BitsFloat(sign | 0x7F800000u | (man << 13));
  return BitsFloat(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t FloatToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u)  // Inf or NaN (keep NaN quiet)
    return sign | 0x7C00 | (abs > 0x7F800000u ? 0x200 | ((abs >> 13) & 0x3FF) : 0);
  if (abs >= 0x477FF000u) return sign | 0x7C00;  // rounds past 65504
  if (abs < 0x38800000u) {  // below the smallest normal half: exact RNE via float add
    const float a = BitsFloat(abs) + 0.5f;  // 0.5 = 2^-1 puts half ulp 2^-24 at float ulp
    return sign | uint16_t(FloatBits(a) - 0x3F000000u);
  }
  const uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
  return sign | uint16_t((rounded - 0x38000000u) >> 13);
}

inline float BF16ToFloat(uint16_t b) { return BitsFloat(uint32_t(b) << 16); }

inline uint16_t FloatToBF16(float f) {
  const uint32_t u = FloatBits(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
  return uint16_t((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace actgrad
