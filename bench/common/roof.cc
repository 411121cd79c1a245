// The roofline loops: memcpy and a STREAM-like triad (2 reads, 1 write) with
// ordinary and with non-temporal stores. The loops are written with
// intrinsics behind a run-time CPU check (AVX-512F, then AVX, then SSE2), so
// that they run at the widest vector width this CPU has while the binary is
// built with the flags a user ships with (no -march).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "common/bench_common.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ACTGRAD_BENCH_X86 1
#endif

namespace actgrad::bench {
namespace {

constexpr float kScale = 3.0f;

void TriadScalar(const float* a, const float* b, float* c, size_t n) {
  for (size_t i = 0; i < n; ++i) c[i] = a[i] + kScale * b[i];
}

#ifdef ACTGRAD_BENCH_X86
__attribute__((target("avx512f"))) void TriadAvx512(const float* a, const float* b, float* c, size_t n,
                                                     bool nt) {
  const __m512 s = _mm512_set1_ps(kScale);
  size_t i = 0;
  // Align the destination so that streaming stores are legal.
  while (i < n && (reinterpret_cast<uintptr_t>(c + i) & 63) != 0) {
    c[i] = a[i] + kScale * b[i];
    ++i;
  }
  if (nt) {
    for (; i + 32 <= n; i += 32) {
      const __m512 v0 = _mm512_fmadd_ps(s, _mm512_loadu_ps(b + i), _mm512_loadu_ps(a + i));
      const __m512 v1 = _mm512_fmadd_ps(s, _mm512_loadu_ps(b + i + 16), _mm512_loadu_ps(a + i + 16));
      _mm512_stream_ps(c + i, v0);
      _mm512_stream_ps(c + i + 16, v1);
    }
    for (; i + 16 <= n; i += 16)
      _mm512_stream_ps(c + i, _mm512_fmadd_ps(s, _mm512_loadu_ps(b + i), _mm512_loadu_ps(a + i)));
    _mm_sfence();
  } else {
    for (; i + 32 <= n; i += 32) {
      const __m512 v0 = _mm512_fmadd_ps(s, _mm512_loadu_ps(b + i), _mm512_loadu_ps(a + i));
      const __m512 v1 = _mm512_fmadd_ps(s, _mm512_loadu_ps(b + i + 16), _mm512_loadu_ps(a + i + 16));
      _mm512_storeu_ps(c + i, v0);
      _mm512_storeu_ps(c + i + 16, v1);
    }
    for (; i + 16 <= n; i += 16)
      _mm512_storeu_ps(c + i, _mm512_fmadd_ps(s, _mm512_loadu_ps(b + i), _mm512_loadu_ps(a + i)));
  }
  for (; i < n; ++i) c[i] = a[i] + kScale * b[i];
}

__attribute__((target("avx"))) void TriadAvx(const float* a, const float* b, float* c, size_t n, bool nt) {
  const __m256 s = _mm256_set1_ps(kScale);
  size_t i = 0;
  while (i < n && (reinterpret_cast<uintptr_t>(c + i) & 31) != 0) {
    c[i] = a[i] + kScale * b[i];
    ++i;
  }
  if (nt) {
    for (; i + 8 <= n; i += 8)
      _mm256_stream_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_mul_ps(s, _mm256_loadu_ps(b + i))));
    _mm_sfence();
  } else {
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(c + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_mul_ps(s, _mm256_loadu_ps(b + i))));
  }
  for (; i < n; ++i) c[i] = a[i] + kScale * b[i];
}

void TriadSse2(const float* a, const float* b, float* c, size_t n, bool nt) {
  const __m128 s = _mm_set1_ps(kScale);
  size_t i = 0;
  while (i < n && (reinterpret_cast<uintptr_t>(c + i) & 15) != 0) {
    c[i] = a[i] + kScale * b[i];
    ++i;
  }
  if (nt) {
    for (; i + 4 <= n; i += 4)
      _mm_stream_ps(c + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_mul_ps(s, _mm_loadu_ps(b + i))));
    _mm_sfence();
  } else {
    for (; i + 4 <= n; i += 4)
      _mm_storeu_ps(c + i, _mm_add_ps(_mm_loadu_ps(a + i), _mm_mul_ps(s, _mm_loadu_ps(b + i))));
  }
  for (; i < n; ++i) c[i] = a[i] + kScale * b[i];
}
#endif

enum class Isa { kScalar, kSse2, kAvx, kAvx512 };

Isa DetectIsa() {
#ifdef ACTGRAD_BENCH_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  if (__builtin_cpu_supports("avx")) return Isa::kAvx;
  return Isa::kSse2;
#else
  return Isa::kScalar;
#endif
}

Isa TheIsa() {
  static const Isa isa = DetectIsa();
  return isa;
}

void Triad(const float* a, const float* b, float* c, size_t n, bool nt) {
  switch (TheIsa()) {
#ifdef ACTGRAD_BENCH_X86
    case Isa::kAvx512: return TriadAvx512(a, b, c, n, nt);
    case Isa::kAvx: return TriadAvx(a, b, c, n, nt);
    case Isa::kSse2: return TriadSse2(a, b, c, n, nt);
#endif
    default: return TriadScalar(a, b, c, n);  // no streaming stores without x86
  }
}

void RoofPart(Roof r, const float* a, const float* b, float* dst, size_t n) {
  switch (r) {
    case Roof::kMemcpy: std::memcpy(dst, a, n * sizeof(float)); return;
    case Roof::kStreamPlain: Triad(a, b, dst, n, false); return;
    case Roof::kStreamNt: Triad(a, b, dst, n, true); return;
  }
}

}  // namespace

const char* RoofName(Roof r) {
  switch (r) {
    case Roof::kMemcpy: return "memcpy";
    case Roof::kStreamPlain: return "stream_plain";
    case Roof::kStreamNt: return "stream_nt";
  }
  return "?";
}

std::string StreamIsa(bool nt) {
  switch (TheIsa()) {
    case Isa::kAvx512: return nt ? "avx512f _mm512_stream_ps" : "avx512f _mm512_storeu_ps";
    case Isa::kAvx: return nt ? "avx _mm256_stream_ps" : "avx _mm256_storeu_ps";
    case Isa::kSse2: return nt ? "sse2 _mm_stream_ps" : "sse2 _mm_storeu_ps";
    case Isa::kScalar: return nt ? "scalar (no streaming stores)" : "scalar";
  }
  return "?";
}

double RoofBytes(Roof r, size_t n) {
  return (r == Roof::kMemcpy ? 8.0 : 12.0) * static_cast<double>(n);
}

void RunRoof(Roof r, const float* a, const float* b, float* dst, size_t n, int threads) {
  if (threads <= 1) {
    RoofPart(r, a, b, dst, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const size_t t = static_cast<size_t>(omp_get_thread_num());
    const size_t nt = static_cast<size_t>(omp_get_num_threads());
    // Parts of whole 64-byte lines (16 floats).
    const size_t lines = (n + 15) / 16;
    const size_t lo = std::min(n, (lines * t / nt) * 16);
    const size_t hi = std::min(n, (lines * (t + 1) / nt) * 16);
    if (hi > lo) RoofPart(r, a + lo, b + lo, dst + lo, hi - lo);
  }
}

}  // namespace actgrad::bench
