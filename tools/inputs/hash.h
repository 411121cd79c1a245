// The tools' one home of two small hashes: splitmix64's step (the Rng's
// generator, rng.h, and the tuner's seeded permutations and key mixing) and
// FNV-1a 64 (the tuner's measurement keys, variant-list hashes and shard
// plans, the tests' operand fingerprints).
//
// The FNV offset basis here is 1469598103934665603, not the published
// 14695981039346656037 (one digit shorter). Logs, tables and shard plans
// carry hashes computed with it, so it must stay: changing it would make
// every stored measurement key differ. tests/tools/inputs/inputs_test.cc
// (Hash.*) and tests/tools/tune/measurement_key_test.cc pin known values.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace actgrad::inputs {

inline constexpr uint64_t kFnvBasis = 1469598103934665603ull;
inline constexpr uint64_t kFnvPrime = 1099511628211ull;

// FNV-1a 64 over `bytes`, continuing from `h` (pass a previous result to hash
// a concatenation piece by piece).
inline uint64_t Fnv1aBytes(const void* bytes, size_t size, uint64_t h = kFnvBasis) {
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * kFnvPrime;
  return h;
}
inline uint64_t Fnv1a(std::string_view s, uint64_t h = kFnvBasis) { return Fnv1aBytes(s.data(), s.size(), h); }

// The low 48 bits of a hash as 12 lower-case hex digits: how measurement
// keys, variant-list hashes and shard plans are written.
inline std::string Hex12(uint64_t h) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%012llx", (unsigned long long)(h & 0xffffffffffffull));
  return buf;
}

// One step of splitmix64 (Steele, Lea, Flood 2014): advances *state and
// returns the next output.
inline uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace actgrad::inputs
