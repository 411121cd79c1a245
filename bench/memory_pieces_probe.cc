// actgrad-memory-pieces-probe: what a transposed view's memory traffic costs
// on this machine, without the library. A transpose reads or writes one side in pieces: this times
// those pieces alone, one thread, buffers of --mb MB per operand laid out as
// 1024 rows (the benchmarks' transposed geometry: out rows 64 KB apart at
// 64 MB), each loop the median of --reps rounds:
//
//   write pieces   out written piece by piece (each row's piece c, then c+1):
//                  streaming and plain stores, pieces of 64 B .. 4 KB
//   read pieces    the same order of reads (a sum)
//   unaligned rows rows one 16-byte step longer than whole lines, 256-byte
//                  pieces streamed after a peel to a 32-byte boundary (some
//                  lines written partly by streaming stores) or to a 64-byte
//                  one (plain stores up to the first line and from the last)
//   tiles          the runtime's gathered tiles without the transpose: a
//                  tile's input rows (whole or half 4 KB rows) copied into
//                  a tile, then its out pieces streamed (or the reads only)
//
//   actgrad-memory-pieces-probe --mb 64 --reps 5
//
// x86 with AVX2 only (the stores are AVX intrinsics): elsewhere it says so.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kRows = 1024;

double MedianMs(int reps, const std::function<void()>& f) {
  f();  // warm-up: pages
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void Print(const char* what, double ms, double bytes) {
  std::printf("%-52s %8.2f ms  %6.1f GB/s\n", what, ms, bytes / ms / 1e6);
}

#if defined(__x86_64__)
#define PROBE_AVX2 __attribute__((target("avx2")))

// Out (kRows rows of `cols` floats) in pieces of w floats: for each column
// piece, every row's piece. nt: streaming stores.
PROBE_AVX2 void WritePieces(float* out, size_t cols, size_t w, bool nt) {
  const __m256 v = _mm256_set1_ps(2.0f);
  for (size_t c0 = 0; c0 + w <= cols; c0 += w)
    for (size_t r = 0; r < kRows; ++r) {
      float* p = out + r * cols + c0;
      if (nt)
        for (size_t k = 0; k < w; k += 8) _mm256_stream_ps(p + k, v);
      else
        for (size_t k = 0; k < w; k += 8) _mm256_store_ps(p + k, v);
    }
  _mm_sfence();
}

PROBE_AVX2 float ReadPieces(const float* in, size_t cols, size_t w) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  for (size_t c0 = 0; c0 + w <= cols; c0 += w)
    for (size_t r = 0; r < kRows; ++r) {
      const float* p = in + r * cols + c0;
      size_t k = 0;
      for (; k + 16 <= w; k += 16) {
        s0 = _mm256_add_ps(s0, _mm256_load_ps(p + k));
        s1 = _mm256_add_ps(s1, _mm256_load_ps(p + k + 8));
      }
      for (; k < w; k += 8) s0 = _mm256_add_ps(s0, _mm256_load_ps(p + k));
    }
  float f[8];
  _mm256_storeu_ps(f, _mm256_add_ps(s0, s1));
  return f[0];
}

// 256-byte pieces (64 floats) of rows `ld` floats apart (not whole lines):
// plain stores up to a boundary of `align` bytes, streaming stores on whole
// vectors up to the piece's last `align` boundary, plain stores after it.
PROBE_AVX2 void UnalignedPieces(float* out, size_t ld, size_t cols, size_t align) {
  const __m256 v = _mm256_set1_ps(2.0f);
  for (size_t c0 = 0; c0 + 64 <= cols; c0 += 64)
    for (size_t r = 0; r < kRows; ++r) {
      float* p = out + r * ld + c0;
      const size_t mis = reinterpret_cast<uintptr_t>(p) % align;
      const size_t head = std::min<size_t>(64, mis ? (align - mis) / 4 : 0);
      const size_t end = head + (64 - head) * 4 / align * align / 4;
      size_t i = 0;
      for (; i < head; ++i) p[i] = 2.0f;
      for (; i + 8 <= end; i += 8) _mm256_stream_ps(p + i, v);
      for (; i < 64; ++i) p[i] = 2.0f;
    }
  _mm_sfence();
}

// The gathered tiles' traffic: a tile of tr out rows x tc out columns reads
// tc input rows' segments of tr floats (whole rows when tr is the input's
// row length) into two tile buffers, then streams tr pieces of tc floats
// (their sum) into out's rows. write = false: the reads only.
PROBE_AVX2 void Tiles(const float* a, const float* b, float* out, float* ta, float* tb, size_t in_cols,
                      size_t out_cols, size_t tr, size_t tc, bool write) {
  for (size_t c0 = 0; c0 + tc <= out_cols; c0 += tc)
    for (size_t r0 = 0; r0 + tr <= in_cols; r0 += tr) {
      for (size_t j = 0; j < tc; ++j) {
        const float* sa = a + (c0 + j) * in_cols + r0;
        const float* sb = b + (c0 + j) * in_cols + r0;
        for (size_t k = 0; k < tr; k += 8) {
          _mm256_store_ps(ta + j * tr + k, _mm256_load_ps(sa + k));
          _mm256_store_ps(tb + j * tr + k, _mm256_load_ps(sb + k));
        }
      }
      if (!write) continue;
      for (size_t r = 0; r < tr; ++r) {
        float* d = out + (r0 + r) * out_cols + c0;
        for (size_t k = 0; k < tc; k += 8)
          _mm256_stream_ps(d + k, _mm256_add_ps(_mm256_load_ps(ta + r * tc + k), _mm256_load_ps(tb + r * tc + k)));
      }
    }
  _mm_sfence();
}
#endif

float* Alloc(size_t bytes) {
  void* p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p) {
    std::fprintf(stderr, "actgrad-memory-pieces-probe: cannot allocate %zu bytes (--mb)\n", bytes);
    std::exit(1);
  }
  std::memset(p, 0, bytes);  // touches every page before the first round
  return static_cast<float*>(p);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actgrad-memory-pieces-probe: the cost of a transpose's memory pieces on this machine"};
  size_t mb = 64;
  int reps = 5;
  app.add_option("--mb", mb, "MB per operand (a multiple of 4)")->check(CLI::Range(size_t(4), size_t(4096)));
  app.add_option("--reps", reps, "rounds per loop; the median is printed")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  if (mb % 4 != 0) {
    std::fprintf(stderr, "actgrad-memory-pieces-probe: --mb must be a multiple of 4\n");
    return 2;
  }
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2")) {
    std::printf("actgrad-memory-pieces-probe: this CPU has no AVX2; nothing measured\n");
    return 0;
  }
  const size_t bytes = mb << 20, n = bytes / 4, cols = n / kRows;  // out: kRows x cols
  float* out = Alloc(bytes + kRows * 64);
  float* a = Alloc(bytes);
  float* b = Alloc(bytes);
  const double nb = double(bytes);
  std::printf("%zu MB per operand, out %zu rows x %zu floats (rows %zu KB apart), 1 thread, median of %d\n", mb, kRows,
              cols, cols * 4 / 1024, reps);
  volatile float sink = 0;
  for (size_t w : {16, 32, 64, 128, 256, 1024}) {
    const std::string piece = std::to_string(w * 4) + " B pieces";
    Print(("write " + piece + ", streaming").c_str(), MedianMs(reps, [&] { WritePieces(out, cols, w, true); }), nb);
    Print(("write " + piece + ", plain").c_str(), MedianMs(reps, [&] { WritePieces(out, cols, w, false); }), nb);
    Print(("read " + piece).c_str(), MedianMs(reps, [&] { sink = sink + ReadPieces(a, cols, w); }), nb);
  }
  Print("read contiguous", MedianMs(reps, [&] { sink = sink + ReadPieces(a, cols, cols); }), nb);
  // Rows 16 bytes longer than whole lines: every row starts 16 bytes later in its line.
  const size_t ld = cols + 4;
  Print("rows not whole lines, 256 B pieces, peel to 32 B",
        MedianMs(reps, [&] { UnalignedPieces(out, ld, cols, 32); }), nb);
  Print("rows not whole lines, 256 B pieces, peel to 64 B",
        MedianMs(reps, [&] { UnalignedPieces(out, ld, cols, 64); }), nb);
  // Tiles: the inputs are [cols, 1024] storages read as their transpose (out [1024, cols]).
  const size_t in_cols = kRows, out_cols = cols;
  std::vector<float*> tiles;
  for (auto [tr, tc, write] : {std::tuple<size_t, size_t, bool>{1024, 64, false}, {512, 64, false}, {1024, 16, true},
                               {1024, 32, true}, {1024, 64, true}, {1024, 128, true}, {512, 64, true},
                               {256, 64, true}, {256, 256, true}}) {
    float* ta = Alloc(tr * tc * 4);
    float* tb = Alloc(tr * tc * 4);
    tiles.push_back(ta);
    tiles.push_back(tb);
    const std::string what = "tiles " + std::to_string(tr) + "x" + std::to_string(tc) +
                             (write ? ": reads + streamed out pieces" : ": reads only");
    Print(what.c_str(), MedianMs(reps, [&] { Tiles(a, b, out, ta, tb, in_cols, out_cols, tr, tc, write); }),
          (write ? 3.0 : 2.0) * nb);
  }
  for (float* p : tiles) std::free(p);
  std::free(out);
  std::free(a);
  std::free(b);
  return 0;
#else
  (void)mb;
  (void)reps;
  std::printf("actgrad-memory-pieces-probe: x86 with AVX2 only; nothing measured on this CPU\n");
  return 0;
#endif
}
