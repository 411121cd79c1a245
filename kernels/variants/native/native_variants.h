// Hand-written AVX512-FP16 / AVX512_BF16 intrinsics variants (target
// "avx512fp16"): fp16 arithmetic on __m512h (upcast "f16native"), bf16 via
// fp32 with the native round-to-nearest-even conversion (upcast "bf16cvt"),
// and fp16 via fp32 with vcvtph2ps/vcvtps2ph (upcast "reg").
//
// Build: the kernel files native_f16.cc, native_bf16.cc and native_f16reg.cc
// need  -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512fp16 -mavx512bf16
// -mfma -mf16c -mbmi -mbmi2 -mpclmul -maes (the last four make Highway's static
// target AVX3, for native_hwy_ops.h) ; native_variants.cc (the registration, which runs at start-up
// on any CPU and instantiates std::string / std::vector<Variant> code that is
// shared with every other file) should be compiled WITHOUT them. Every
// variant's `supported` requires the CPU to have every ISA extension its
// kernel file was compiled with (read from the predefined macros).
#pragma once
#include <vector>

#include "variants/variant.h"

namespace actgrad {
void AppendNativeVariants(std::vector<Variant>* out);
}  // namespace actgrad
