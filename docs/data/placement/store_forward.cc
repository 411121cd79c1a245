// Store-to-load forwarding of a 64- or 32-byte vector at offsets within a cache
// line (docs/performance.md, "Placements"): g++ -O2 -mavx512f store_forward.cc
#include <immintrin.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <initializer_list>
alignas(128) static float buf[64];
template <int W>
double Run(int off) {
  char* p = reinterpret_cast<char*>(buf) + off;
  const int iters = 20000000;
  auto t0 = std::chrono::steady_clock::now();
  if constexpr (W == 64) {
    __m512 v = _mm512_set1_ps(1.0f);
    for (int i = 0; i < iters; ++i) {
      _mm512_storeu_ps(reinterpret_cast<float*>(p), v);
      asm volatile("" ::: "memory");
      v = _mm512_add_ps(_mm512_loadu_ps(reinterpret_cast<float*>(p)), v);
    }
    volatile float s = _mm512_reduce_add_ps(v); (void)s;
  } else {
    __m256 v = _mm256_set1_ps(1.0f);
    for (int i = 0; i < iters; ++i) {
      _mm256_storeu_ps(reinterpret_cast<float*>(p), v);
      asm volatile("" ::: "memory");
      v = _mm256_add_ps(_mm256_loadu_ps(reinterpret_cast<float*>(p)), v);
    }
    volatile float s = v[0]; (void)s;
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
}
int main() {
  for (int off : {0, 16, 32, 48}) std::printf("zmm store+reload at line offset %2d: %.2f ns/iter\n", off, Run<64>(off));
  for (int off : {0, 16, 32, 48}) std::printf("ymm store+reload at line offset %2d: %.2f ns/iter\n", off, Run<32>(off));
}
