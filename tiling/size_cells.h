// The size cells of the tiling tables (docs/conventions.md): octave h holds
// n in [2^h, 2^(h+1)). The one home of the cell arithmetic, for the CPU and
// the Atlas tables, the dispatch and the tuner.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace actgrad {

inline constexpr int kMinOctave = 10;       // 1K: the smallest octave a tuning run measures
inline constexpr int kMaxOctave = 26;       // 64M: the largest
inline constexpr int kMaxOctaveIndex = 47;  // the largest octave a table may hold

// The octave of n: h with n in [2^h, 2^(h+1)); 0 for n < 2.
constexpr int SizeOctave(uint64_t n) { return n < 2 ? 0 : int(std::bit_width(n)) - 1; }
constexpr uint64_t OctaveLo(int h) { return uint64_t(1) << h; }  // first n of octave h
constexpr uint64_t OctaveHi(int h) { return OctaveLo(h + 1); }   // one past the last

// The n a tuning run measures for octave h: the geometric centre 2^h * sqrt(2)
// rounded to a multiple of 64, at most max_n (and at least 2^h).
inline uint64_t RepresentativeN(int h, uint64_t max_n) {
  const uint64_t lo = OctaveLo(h);
  const uint64_t centre = std::max<uint64_t>(lo, uint64_t(std::llround(double(lo) * std::sqrt(2.0) / 64.0)) * 64);
  return std::max(lo, std::min(centre, max_n));
}

// The n of octave h "between" tuned sizes: 2^(h+1) - 3, the top of the octave,
// sqrt(2) past RepresentativeN, where the dispatch switches to the next
// octave's entry (actgrad-tune --check measures there).
constexpr uint64_t BetweenN(int h) { return OctaveHi(h) - 3; }

}  // namespace actgrad
