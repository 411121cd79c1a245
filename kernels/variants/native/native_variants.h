// Hand-written AVX-512 intrinsics variants, one kernel file per ISA
// extension they need (target in the variant name):
//   native_f16.cc     "avx512fp16": fp16 arithmetic on __m512h (upcast "f16native")
//   native_bf16.cc    "avx512bf16": bf16 via fp32 with the native round-to-nearest-even
//                     conversion (upcast "bf16cvt"); AVX512_BF16 without AVX512-FP16
//                     is enough (AMD Zen 4, Intel Cooper Lake)
//   native_bf16int.cc "avx512": bf16 via fp32 with integer conversions, edge lanes
//                     redone from the reference (upcast "bf16int")
//   native_f16reg.cc  "avx512": fp16 via fp32 with vcvtph2ps/vcvtps2ph (upcast "reg")
//   native_gather.cc  "avx512": 16-bit ops through exact 65,536-entry factor tables
//                     (upcast "gather", kernels/variants/factor_tables.h)
//   native_bits.cc    "avx512": Softshrink on the 16-bit patterns (upcast "bits")
//
// Build: kernels/CMakeLists.txt gives each kernel file its flags (AVX-512
// F/BW/VL/DQ, FMA, F16C, plus -mbmi -mbmi2 -mpclmul -maes that make Highway's
// static target AVX3 for native_hwy_ops.h, plus -mavx512fp16 / -mavx512bf16
// where named). native_variants.cc (the registration, which runs at start-up
// on any CPU and instantiates std::string / std::vector<Variant> code that is
// shared with every other file) is compiled WITHOUT them. Every variant's
// `supported` requires the CPU to have every ISA extension its kernel file was
// compiled with (read from the predefined macros).
#pragma once
#include <vector>

#include "variants/variant.h"

namespace actgrad {
void AppendNativeVariants(std::vector<Variant>* out);
}  // namespace actgrad
