// Internal to kernels/variants/native: what each kernel file exports to the
// registration (native_variants.cc). Data only: nothing here runs code, so
// the registration can read it on a CPU without AVX-512.
#pragma once
#include <cstddef>
#include <cstdint>

#include "actgrad/types.h"
#include "variants/variant.h"

namespace actgrad::native {

// ISA extensions a kernel file may have been compiled for.
enum NativeFeature : uint32_t {
  kFeatSSE42 = 1u << 0,
  kFeatAVX = 1u << 1,
  kFeatAVX2 = 1u << 2,
  kFeatFMA = 1u << 3,
  kFeatF16C = 1u << 4,
  kFeatBMI = 1u << 5,
  kFeatBMI2 = 1u << 6,
  kFeatAVX512F = 1u << 7,
  kFeatAVX512BW = 1u << 8,
  kFeatAVX512VL = 1u << 9,
  kFeatAVX512DQ = 1u << 10,
  kFeatAVX512CD = 1u << 11,
  kFeatAVX512FP16 = 1u << 12,
  kFeatAVX512BF16 = 1u << 13,
  kFeatAVX512VBMI = 1u << 14,
  kFeatAVX512VBMI2 = 1u << 15,
  kFeatAVX512VNNI = 1u << 16,
  kFeatAVX512BITALG = 1u << 17,
  kFeatAVX512VPOPCNTDQ = 1u << 18,
  kFeatAVX512IFMA = 1u << 19,
  kFeatGFNI = 1u << 20,
  kFeatVAES = 1u << 21,
  kFeatVPCLMULQDQ = 1u << 22,
};

// The extensions the including file is compiled with (a macro, not an inline
// function: its value differs between files).
#if defined(__SSE4_2__)
#define ACTGRAD_NATIVE_F_SSE42 ::actgrad::native::kFeatSSE42
#else
#define ACTGRAD_NATIVE_F_SSE42 0u
#endif
#if defined(__AVX__)
#define ACTGRAD_NATIVE_F_AVX ::actgrad::native::kFeatAVX
#else
#define ACTGRAD_NATIVE_F_AVX 0u
#endif
#if defined(__AVX2__)
#define ACTGRAD_NATIVE_F_AVX2 ::actgrad::native::kFeatAVX2
#else
#define ACTGRAD_NATIVE_F_AVX2 0u
#endif
#if defined(__FMA__)
#define ACTGRAD_NATIVE_F_FMA ::actgrad::native::kFeatFMA
#else
#define ACTGRAD_NATIVE_F_FMA 0u
#endif
#if defined(__F16C__)
#define ACTGRAD_NATIVE_F_F16C ::actgrad::native::kFeatF16C
#else
#define ACTGRAD_NATIVE_F_F16C 0u
#endif
#if defined(__BMI__)
#define ACTGRAD_NATIVE_F_BMI ::actgrad::native::kFeatBMI
#else
#define ACTGRAD_NATIVE_F_BMI 0u
#endif
#if defined(__BMI2__)
#define ACTGRAD_NATIVE_F_BMI2 ::actgrad::native::kFeatBMI2
#else
#define ACTGRAD_NATIVE_F_BMI2 0u
#endif
#if defined(__AVX512F__)
#define ACTGRAD_NATIVE_F_AVX512F ::actgrad::native::kFeatAVX512F
#else
#define ACTGRAD_NATIVE_F_AVX512F 0u
#endif
#if defined(__AVX512BW__)
#define ACTGRAD_NATIVE_F_AVX512BW ::actgrad::native::kFeatAVX512BW
#else
#define ACTGRAD_NATIVE_F_AVX512BW 0u
#endif
#if defined(__AVX512VL__)
#define ACTGRAD_NATIVE_F_AVX512VL ::actgrad::native::kFeatAVX512VL
#else
#define ACTGRAD_NATIVE_F_AVX512VL 0u
#endif
#if defined(__AVX512DQ__)
#define ACTGRAD_NATIVE_F_AVX512DQ ::actgrad::native::kFeatAVX512DQ
#else
#define ACTGRAD_NATIVE_F_AVX512DQ 0u
#endif
#if defined(__AVX512CD__)
#define ACTGRAD_NATIVE_F_AVX512CD ::actgrad::native::kFeatAVX512CD
#else
#define ACTGRAD_NATIVE_F_AVX512CD 0u
#endif
#if defined(__AVX512FP16__)
#define ACTGRAD_NATIVE_F_AVX512FP16 ::actgrad::native::kFeatAVX512FP16
#else
#define ACTGRAD_NATIVE_F_AVX512FP16 0u
#endif
#if defined(__AVX512BF16__)
#define ACTGRAD_NATIVE_F_AVX512BF16 ::actgrad::native::kFeatAVX512BF16
#else
#define ACTGRAD_NATIVE_F_AVX512BF16 0u
#endif
#if defined(__AVX512VBMI__)
#define ACTGRAD_NATIVE_F_AVX512VBMI ::actgrad::native::kFeatAVX512VBMI
#else
#define ACTGRAD_NATIVE_F_AVX512VBMI 0u
#endif
#if defined(__AVX512VBMI2__)
#define ACTGRAD_NATIVE_F_AVX512VBMI2 ::actgrad::native::kFeatAVX512VBMI2
#else
#define ACTGRAD_NATIVE_F_AVX512VBMI2 0u
#endif
#if defined(__AVX512VNNI__)
#define ACTGRAD_NATIVE_F_AVX512VNNI ::actgrad::native::kFeatAVX512VNNI
#else
#define ACTGRAD_NATIVE_F_AVX512VNNI 0u
#endif
#if defined(__AVX512BITALG__)
#define ACTGRAD_NATIVE_F_AVX512BITALG ::actgrad::native::kFeatAVX512BITALG
#else
#define ACTGRAD_NATIVE_F_AVX512BITALG 0u
#endif
#if defined(__AVX512VPOPCNTDQ__)
#define ACTGRAD_NATIVE_F_AVX512VPOPCNTDQ ::actgrad::native::kFeatAVX512VPOPCNTDQ
#else
#define ACTGRAD_NATIVE_F_AVX512VPOPCNTDQ 0u
#endif
#if defined(__AVX512IFMA__)
#define ACTGRAD_NATIVE_F_AVX512IFMA ::actgrad::native::kFeatAVX512IFMA
#else
#define ACTGRAD_NATIVE_F_AVX512IFMA 0u
#endif
#if defined(__GFNI__)
#define ACTGRAD_NATIVE_F_GFNI ::actgrad::native::kFeatGFNI
#else
#define ACTGRAD_NATIVE_F_GFNI 0u
#endif
#if defined(__VAES__)
#define ACTGRAD_NATIVE_F_VAES ::actgrad::native::kFeatVAES
#else
#define ACTGRAD_NATIVE_F_VAES 0u
#endif
#if defined(__VPCLMULQDQ__)
#define ACTGRAD_NATIVE_F_VPCLMULQDQ ::actgrad::native::kFeatVPCLMULQDQ
#else
#define ACTGRAD_NATIVE_F_VPCLMULQDQ 0u
#endif
#define ACTGRAD_NATIVE_COMPILED_FEATURES                                                        \
  (ACTGRAD_NATIVE_F_SSE42 | ACTGRAD_NATIVE_F_AVX | ACTGRAD_NATIVE_F_AVX2 | ACTGRAD_NATIVE_F_FMA | \
   ACTGRAD_NATIVE_F_F16C | ACTGRAD_NATIVE_F_BMI | ACTGRAD_NATIVE_F_BMI2 |                       \
   ACTGRAD_NATIVE_F_AVX512F | ACTGRAD_NATIVE_F_AVX512BW | ACTGRAD_NATIVE_F_AVX512VL |            \
   ACTGRAD_NATIVE_F_AVX512DQ | ACTGRAD_NATIVE_F_AVX512CD | ACTGRAD_NATIVE_F_AVX512FP16 |         \
   ACTGRAD_NATIVE_F_AVX512BF16 | ACTGRAD_NATIVE_F_AVX512VBMI | ACTGRAD_NATIVE_F_AVX512VBMI2 |    \
   ACTGRAD_NATIVE_F_AVX512VNNI | ACTGRAD_NATIVE_F_AVX512BITALG |                                 \
   ACTGRAD_NATIVE_F_AVX512VPOPCNTDQ | ACTGRAD_NATIVE_F_AVX512IFMA | ACTGRAD_NATIVE_F_GFNI |      \
   ACTGRAD_NATIVE_F_VAES | ACTGRAD_NATIVE_F_VPCLMULQDQ)

// One kernel of a native file; the registration builds the Variant (name,
// target of its file, supported) from it.
struct KernelEntry {
  Op op;
  DType dtype;
  const char* upcast;  // f16native | bf16cvt | bf16int | reg | gather | bits
  const char* approx;
  int unroll;          // 512-bit vectors (32 elements of 16 bits) per iteration
  bool nt_stores;
  GeluApprox gelu_mode;
  KernelFn fn;
  double claimed_max_err;  // spec metric, g = 1; 0 for approx "exact"
};

// The GELU bound of a kernel whose factor is exact to fp32 (or all but:
// erf_as), so that the rounding to the 16-bit output is the whole error: the
// measured maxima (spec metric, g = 1, all 65,536 inputs,
// tests/kernels/native_test.cc) are 4.88e-4 for fp16 and 3.881e-3 (erf),
// 3.882e-3 (tanh) for bf16.
inline constexpr double kRoundingClaimF16 = 4.9e-4;
inline constexpr double kRoundingClaimBF16 = 3.9e-3;

struct KernelTable {
  const KernelEntry* entries;
  size_t count;
  uint32_t requires_features;  // NativeFeature bits the file was compiled with
  // The variants' target, named after the ISA extension that sets the file
  // apart: "avx512fp16" (native_f16.cc), "avx512bf16" (native_bf16.cc),
  // "avx512" (AVX-512 F/BW/VL/DQ only: native_f16reg.cc, native_gather.cc, native_bits.cc,
  // native_bf16int.cc).
  const char* target;
};

// Defined by native_f16.cc, native_bf16.cc, native_bf16int.cc, native_f16reg.cc, native_gather.cc and
// native_bits.cc.
extern const KernelTable kF16NativeTable;
extern const KernelTable kBF16CvtTable;
extern const KernelTable kBF16IntTable;
extern const KernelTable kF16RegTable;
extern const KernelTable kGatherTable;
extern const KernelTable kBitsTable;

}  // namespace actgrad::native
