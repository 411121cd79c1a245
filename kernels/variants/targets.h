// Every target a variant may be compiled for, in order of preference, widest
// first: TargetRank (variant.h) reads it, so the untuned default takes the
// best supported target and the tuner's prior order follows it; the scripts
// read it from reports/vocabulary.json (tools/vocabulary). Arm as Highway's
// dispatch prefers them: the fixed-width SVE targets (sve2_128: 128-bit SVE2
// as on Neoverse N2; sve_256: 256-bit SVE as on V1) before the scalable ones.
#pragma once
#include <cstdint>
#include <string_view>

namespace actgrad {

enum class TargetKind : uint8_t {
  kNative,   // the hand-written AVX-512 files (kernels/variants/native)
  kHighway,  // Highway's per-target code (driver-inl.h)
  kScalar,   // the portable fallback (variants_scalar.cc)
};

struct TargetInfo {
  std::string_view name;  // Variant::target
  TargetKind kind;
};

inline constexpr TargetInfo kTargets[] = {
    {"avx512fp16", TargetKind::kNative}, {"avx512bf16", TargetKind::kNative}, {"avx512", TargetKind::kNative},
    {"avx3_spr", TargetKind::kHighway},  {"avx3_zen4", TargetKind::kHighway}, {"avx3_dl", TargetKind::kHighway},
    {"avx3", TargetKind::kHighway},      {"avx2", TargetKind::kHighway},      {"sse4", TargetKind::kHighway},
    {"sve2_128", TargetKind::kHighway},  {"sve_256", TargetKind::kHighway},   {"sve2", TargetKind::kHighway},
    {"sve", TargetKind::kHighway},       {"neon", TargetKind::kHighway},      {"emu128", TargetKind::kHighway},
    {"scalar", TargetKind::kScalar}};

}  // namespace actgrad
