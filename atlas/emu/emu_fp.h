// Exact rounding of real values to the binary formats of the Ascend vector
// unit (fp32, fp16, bf16) and to integers, under the AscendC RoundMode set.
// Independent of actgrad/half.h on purpose: the tests compare the two.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace AscendEmu::fp {

enum class Mode : uint8_t { kRint, kRound, kFloor, kCeil, kTrunc, kOdd };

struct Format {
  int p;     // significand bits including the hidden one
  int emin;  // exponent of the smallest normal (value 2^emin)
  int emax;  // exponent of the largest binade
};
inline constexpr Format kHalf{11, -14, 15};
inline constexpr Format kBF16{8, -126, 127};
inline constexpr Format kF32{24, -126, 127};

// Rounds the finite value (-1)^neg * mant * 2^exp2 to `f` under `m`.
// Returns a double that is exactly representable in `f` (or +-inf).
inline double RoundExact(bool neg, uint64_t mant, int exp2, Format f, Mode m) {
  if (mant == 0) return neg ? -0.0 : 0.0;
  int bl = 64 - __builtin_clzll(mant);
  const int e = exp2 + bl - 1;  // exponent of the leading bit
  const int q = (e > f.emin ? e : f.emin) - (f.p - 1);  // quantum exponent
  const int shift = q - exp2;
  uint64_t k;
  bool inexact = false, up = false;
  if (shift <= 0) {
    k = mant << (-shift);  // exact: fits in p bits
  } else {
    uint64_t rem;
    bool above_half, at_half;
    if (shift >= 65) {
      k = 0;
      rem = mant;
      above_half = false;
      at_half = false;
    } else if (shift == 64) {
      k = 0;
      rem = mant;
      const uint64_t half = 1ull << 63;
      above_half = rem > half;
      at_half = rem == half;
    } else {
      k = mant >> shift;
      rem = mant & ((1ull << shift) - 1);
      const uint64_t half = 1ull << (shift - 1);
      above_half = rem > half;
      at_half = rem == half;
    }
    inexact = rem != 0;
    switch (m) {
      case Mode::kRint: up = above_half || (at_half && (k & 1)); break;
      case Mode::kRound: up = above_half || at_half; break;
      case Mode::kFloor: up = inexact && neg; break;
      case Mode::kCeil: up = inexact && !neg; break;
      case Mode::kTrunc: up = false; break;
      case Mode::kOdd: if (inexact) k |= 1; break;
    }
    if (up) ++k;
  }
  double v = std::ldexp(double(k), q);
  const double max_finite = std::ldexp(double((1ull << f.p) - 1), f.emax - f.p + 1);
  if (v > max_finite) {
    bool to_inf;
    switch (m) {
      case Mode::kRint: case Mode::kRound: to_inf = true; break;
      case Mode::kFloor: to_inf = neg; break;
      case Mode::kCeil: to_inf = !neg; break;
      default: to_inf = false; break;  // trunc, odd: largest finite
    }
    // An exact value above max_finite can only come from an input beyond the
    // format, where directed modes still give infinity only toward it.
    v = to_inf ? std::numeric_limits<double>::infinity() : max_finite;
  }
  return neg ? -v : v;
}

// Decomposes a finite double exactly.
inline void Decompose(double v, bool* neg, uint64_t* mant, int* exp2) {
  uint64_t u;
  std::memcpy(&u, &v, 8);
  *neg = (u >> 63) != 0;
  const int be = int((u >> 52) & 0x7FF);
  const uint64_t frac = u & ((1ull << 52) - 1);
  if (be == 0) {
    *mant = frac;
    *exp2 = -1074;
  } else {
    *mant = frac | (1ull << 52);
    *exp2 = be - 1075;
  }
}

// Rounds any double (NaN and inf pass through) to format f.
inline double RoundTo(double v, Format f, Mode m) {
  if (std::isnan(v) || std::isinf(v)) return v;
  bool neg;
  uint64_t mant;
  int e;
  Decompose(v, &neg, &mant, &e);
  return RoundExact(neg, mant, e, f, m);
}

// Encodes a value representable in fp16 (or NaN/inf) as fp16 bits.
inline uint16_t EncodeHalf(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xFE00 : 0x7E00;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (std::isinf(a)) return sign | 0x7C00;
  if (a == 0) return sign;
  int e;
  (void)std::frexp(a, &e);
  const int E = e - 1;
  if (E < -14) return sign | uint16_t(std::ldexp(a, 24));
  return sign | uint16_t((E + 15) << 10) | uint16_t(std::ldexp(a, 10 - E) - 1024.0);
}

inline double DecodeHalf(uint16_t h) {
  const bool neg = (h & 0x8000) != 0;
  const int ex = (h >> 10) & 0x1F;
  const int man = h & 0x3FF;
  double v;
  if (ex == 0) v = std::ldexp(double(man), -24);
  else if (ex == 31) v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else v = std::ldexp(double(man | 0x400), ex - 25);
  return neg ? -v : v;
}

inline uint16_t EncodeBF16(double v) {  // v representable in bf16 (or NaN/inf)
  const float f = float(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);
  return uint16_t(u >> 16);
}

inline float DecodeBF16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Rounds v to an integer value in double under m (kOdd not meaningful here).
inline double RoundToIntegral(double v, Mode m) {
  switch (m) {
    case Mode::kRint: return std::nearbyint(v);
    case Mode::kRound: return std::round(v);
    case Mode::kFloor: return std::floor(v);
    case Mode::kCeil: return std::ceil(v);
    default: return std::trunc(v);
  }
}

// Saturating conversion to an integer range; NaN gives 0.
inline int64_t ToIntSat(double v, Mode m, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  const double r = RoundToIntegral(v, m);
  if (r <= double(lo)) return lo;
  if (r >= double(hi)) return hi;
  return int64_t(r);
}

}  // namespace AscendEmu::fp
