// Declarations of the few SLEEF functions erf_sleef uses.
//
// Why not <sleef.h>: it declares the AVX2/AVX-512 entry points only under
// #ifdef __AVX__ / __AVX512F__, i.e. only when the whole translation unit is
// compiled with -mavx2/-mavx512f, while Highway compiles its per-target code
// with function attributes in a baseline-flags translation unit. These
// declarations match sleef.h's (SLEEF 3.5, libsleef-dev) plus target
// attributes on the wide ones, so do not include <sleef.h> beside them (GCC
// would take a redeclaration without the attribute for another version of
// the function). Link with -lsleef.
//
// ACTGRAD_HAVE_SLEEF: 1 if SLEEF can be used (set by the build; defaults to
// whether <sleef.h> is on the include path).
#pragma once

#ifndef ACTGRAD_HAVE_SLEEF
#if defined(__has_include)
#if __has_include(<sleef.h>)
#define ACTGRAD_HAVE_SLEEF 1
#endif
#endif
#endif
#ifndef ACTGRAD_HAVE_SLEEF
#define ACTGRAD_HAVE_SLEEF 0
#endif

#if ACTGRAD_HAVE_SLEEF
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>  // the vector types exist whatever the -m flags
#define ACTGRAD_SLEEF_X86 1
#else
#define ACTGRAD_SLEEF_X86 0
#endif

extern "C" {
// Scalar (any architecture).
float Sleef_erff_u10(float);
float Sleef_expf_u10(float);
#if ACTGRAD_SLEEF_X86
__m128 Sleef_erff4_u10sse2(__m128);
__m128 Sleef_expf4_u10sse2(__m128);
__m128 Sleef_erff4_u10sse4(__m128);
__m128 Sleef_expf4_u10sse4(__m128);
__m128 Sleef_erff4_u10avx2128(__m128);
__m128 Sleef_expf4_u10avx2128(__m128);
// The wide entry points carry the ISA they were built for: clang refuses a
// call passing __m256/__m512 to a declaration without AVX/AVX-512 (the ABI
// of such arguments depends on it); GCC accepts either.
__attribute__((target("avx2,fma"))) __m256 Sleef_erff8_u10avx2(__m256);
__attribute__((target("avx2,fma"))) __m256 Sleef_expf8_u10avx2(__m256);
__attribute__((target("avx512f"))) __m512 Sleef_erff16_u10avx512f(__m512);
__attribute__((target("avx512f"))) __m512 Sleef_expf16_u10avx512f(__m512);
#endif
}
#else
#define ACTGRAD_SLEEF_X86 0
#endif
