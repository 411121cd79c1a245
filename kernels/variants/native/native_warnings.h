// Included first by every native kernel file (kernels/variants/native) and
// by variants_gelu.cc (the piecewise GELU's raw AVX-512 intrinsics,
// math/gelu_pw-inl.h): GCC 12 reports its own _mm512_undefined_*()
// (self-initialized) as "maybe uninitialized" / "uninitialized" once many
// intrinsics are inlined into one function (a false positive). The pragmas
// hold for the rest of the including file.
#pragma once
#if !defined(__clang__)  // a GCC-only warning (clang, in the sanitizer builds, has none)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"
