// Internal to the native kernel files (compiled with AVX-512 flags): the
// streaming loop shared by every native kernel, and scalar helpers.
// Everything here has internal linkage (anonymous namespace) so that no
// AVX-512 code is shared with other files through inline/COMDAT functions.
#pragma once
#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "variants/variant.h"

namespace actgrad::native {
namespace {

// Op bodies and helpers are forced inline into the loops (GCC otherwise keeps
// the larger ones, e.g. GELU, as calls: a call per vector).
#define ACTGRAD_NATIVE_INLINE inline __attribute__((always_inline))

// 32 lanes of 16 bits per 512-bit vector, for fp16 and bf16 alike.
constexpr size_t kLanes = 32;

ACTGRAD_NATIVE_INLINE __mmask32 FirstLanes(size_t m) {  // m < 32
  return _cvtu32_mask32((1u << m) - 1u);
}

// The kernel loop. OpT: constructed once per call from the OpParams (it
// broadcasts its constants), `__m512i operator()(__m512i g, __m512i x) const`
// maps 32 packed 16-bit elements of g and x to 32 of out. Step: one
// iteration of U vectors; NT: streaming stores in the main loop once `out` is 64-byte
// aligned (a masked head gets it there). Tails use masked loads and stores,
// so nothing outside [0, n) is read or written. out may alias g or x exactly:
// every iteration loads all of its inputs before storing.
// xs: x's stride, 1 or 0 (a splat: one vector of copies, SplatCopies).
template <class OpT, int U>
ACTGRAD_NATIVE_INLINE void Step(const OpT& op, const uint16_t* g, const uint16_t* x, uint16_t* out, size_t xs,
                                bool nt) {
  __m512i gv[U], xv[U], r[U];
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) {
    gv[u] = _mm512_loadu_si512(g + u * kLanes);
    xv[u] = _mm512_loadu_si512(x + u * kLanes * xs);
  }
#pragma GCC unroll 4
  for (int u = 0; u < U; ++u) r[u] = op(gv[u], xv[u]);
  if (nt) {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) _mm512_stream_si512(reinterpret_cast<__m512i*>(out + u * kLanes), r[u]);
  } else {
#pragma GCC unroll 4
    for (int u = 0; u < U; ++u) _mm512_storeu_si512(out + u * kLanes, r[u]);
  }
}

// Whole steps from element i while one fits; returns where they stopped. A
// contiguous x (xs = 1) in a run of kStreamPrefetchFrom bytes or more
// (variant.h) has both inputs prefetched kStreamPrefetchAhead bytes ahead, a
// line per vector.
template <class OpT, int U>
ACTGRAD_NATIVE_INLINE size_t Steps(const OpT& op, const uint16_t* g, const uint16_t* x, uint16_t* out, size_t xs,
                                   size_t n, size_t i, bool nt) {
  constexpr size_t kStep = kLanes * U;
  constexpr size_t kAhead = kStreamPrefetchAhead / sizeof(uint16_t);
  if (xs == 1 && n * sizeof(uint16_t) >= kStreamPrefetchFrom) {
    for (; i + kStep + kAhead <= n; i += kStep) {
#pragma GCC unroll 4
      for (int u = 0; u < U; ++u) {
        PrefetchLine(g + i + kAhead + u * kLanes);
        PrefetchLine(x + i + kAhead + u * kLanes);
      }
      Step<OpT, U>(op, g + i, x + i, out + i, 1, nt);
    }
  }
  for (; i + kStep <= n; i += kStep) Step<OpT, U>(op, g + i, x + i * xs, out + i, xs, nt);
  return i;
}

// m < 32 elements; a splat input's masked load reads its vector of copies.
template <class OpT>
ACTGRAD_NATIVE_INLINE void Partial(const OpT& op, const uint16_t* g, const uint16_t* x, uint16_t* out, size_t m) {
  const __mmask32 k = FirstLanes(m);
  const __m512i gv = _mm512_maskz_loadu_epi16(k, g);
  const __m512i xv = _mm512_maskz_loadu_epi16(k, x);
  _mm512_mask_storeu_epi16(out, k, op(gv, xv));
}

// A splat run's one element (variant.h Runs) as a vector of copies at
// `copies` (what Step and Partial read with stride 0).
ACTGRAD_NATIVE_INLINE const uint16_t* SplatCopies(const uint16_t* x, uint16_t* copies) {
  _mm512_store_si512(copies, _mm512_set1_epi16(static_cast<short>(*x)));
  return copies;
}

// The runs of rs, n elements each (a whole number of vectors), x with the
// element stride XS (1, or 0: a splat, its one element made a vector of copies).
// NT: streaming stores into each run whose out is 64-byte aligned (a view's
// runs usually are), plain ones into the others.
template <class OpT, int U, bool NT, size_t XS>
ACTGRAD_NATIVE_INLINE void WholeVectorRuns(const OpT& op, const Runs& rs, size_t n) {
  alignas(64) uint16_t copies[kLanes];
  for (size_t ri = 0; ri < rs.count; ++ri) {
    const uint16_t* g = reinterpret_cast<const uint16_t*>(rs.g + rs.g_off[ri]);
    const uint16_t* x = reinterpret_cast<const uint16_t*>(rs.x + rs.x_off[ri]);
    if (XS == 0) x = SplatCopies(x, copies);
    uint16_t* out = reinterpret_cast<uint16_t*>(rs.out + rs.out_off[ri]);
    const bool nt = NT && (reinterpret_cast<uintptr_t>(out) & 63u) == 0;
    size_t i = 0;
    for (; i + kLanes * U <= n; i += kLanes * U) Step<OpT, U>(op, g + i, x + i * XS, out + i, XS, nt);
    for (; i < n; i += kLanes) Step<OpT, 1>(op, g + i, x + i * XS, out + i, XS, nt);
  }
  if (NT) _mm_sfence();
}

// Every run of the call (variant.h RunAt).
template <class OpT, int U, bool NT>
void Kernel(const KernelArgs& a) {
  const size_t n = a.n;
  if (n == 0) return;
  const OpT op(a.params);
  constexpr size_t kStep = kLanes * U;
  bool streamed = false;
  const size_t runs = RunCount(a);
  // A view's runs of whole vectors, read in place or as splats and not
  // prefetched (the common inner-run and row-broadcast views): strides
  // known here, no peel or tail per run.
  const Runs* rs = a.runs;
  if (rs && !rs->prefetch_runs && n % kLanes == 0) {
    if (rs->splat_x) WholeVectorRuns<OpT, U, NT, 0>(op, *rs, n);
    else WholeVectorRuns<OpT, U, NT, 1>(op, *rs, n);
    return;
  }
  for (size_t ri = 0; ri < runs; ++ri) {
    const RunPtrs<uint16_t> run = RunAt<uint16_t>(a, ri);
    PrefetchRuns(a, ri, n * 2);
    const uint16_t* g = run.g;
    alignas(64) uint16_t copies[kLanes];
    const uint16_t* x = run.xs == 0 ? SplatCopies(run.x, copies) : run.x;
    uint16_t* out = run.out;
    const size_t xs = run.xs;
    size_t i = 0;
    if constexpr (NT) {
      const uintptr_t addr = reinterpret_cast<uintptr_t>(out);
      if ((addr & 1u) == 0 && n >= 2 * kStep) {
        const size_t head = ((64u - (addr & 63u)) & 63u) / 2u;  // elements, < 32
        if (head != 0) Partial(op, g, x, out, head);
        i = head;
        i = Steps<OpT, U>(op, g, x, out, xs, n, i, true);
        streamed = true;
      }
    }
    i = Steps<OpT, U>(op, g, x, out, xs, n, i, false);
    if constexpr (U > 1) {
      for (; i + kLanes <= n; i += kLanes) Step<OpT, 1>(op, g + i, x + i * xs, out + i, xs, false);
    }
    if (i < n) Partial(op, g + i, x + i * xs, out + i, n - i);
  }
  if (streamed) _mm_sfence();
}

// The entries of one row of native_families.inc: u1, u2, u4 with plain
// stores, u4 with streaming stores, each Kernel<KOP, unroll, streaming>. KOP
// is last and variadic: a template-id with commas in it passes whole.
#define ACTGRAD_NATIVE_ENTRIES(OP, DT, UPCAST, APPROX, MODE, CLAIM, ...)                           \
  KernelEntry{OP, DT, UPCAST, APPROX, 1, false, MODE, &Kernel<__VA_ARGS__, 1, false>, CLAIM},     \
      KernelEntry{OP, DT, UPCAST, APPROX, 2, false, MODE, &Kernel<__VA_ARGS__, 2, false>, CLAIM}, \
      KernelEntry{OP, DT, UPCAST, APPROX, 4, false, MODE, &Kernel<__VA_ARGS__, 4, false>, CLAIM}, \
      KernelEntry{OP, DT, UPCAST, APPROX, 4, true, MODE, &Kernel<__VA_ARGS__, 4, true>, CLAIM},

// fp32 lanes rounded to bf16 to nearest even on the bit patterns (exact for
// subnormals, which vcvtne2ps2bf16 flushes); NaN becomes a quiet NaN. The
// bf16 is in the high 16 bits of each 32-bit lane.
ACTGRAD_NATIVE_INLINE __m512i RoundToBF16Bits(__m512 r) {
  const __m512i u = _mm512_castps_si512(r);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF)), lsb);
  const __mmask16 nan = _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(rounded, nan, u, _mm512_set1_epi32(0x00400000));
}

// ---- scalar IEEE binary16 helpers (own copies: see the note at the top) ----
inline uint32_t F32Bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float BitsF32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline float HalfBitsToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  if (exp == 0) {
    const float v = float(man) * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  if (exp == 31) return BitsF32(sign | 0x7F800000u | (man << 13));
  return BitsF32(sign | ((exp + 112) << 23) | (man << 13));
}

// Round to nearest even (the scalar twin of vcvtps2ph).
inline uint16_t FloatToHalfBits(float f) {
  const uint32_t u = F32Bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs >= 0x7F800000u) return sign | 0x7C00u | (abs > 0x7F800000u ? 0x200u | ((abs >> 13) & 0x3FFu) : 0u);
  if (abs >= 0x477FF000u) return sign | 0x7C00u;
  if (abs < 0x38800000u) {
    const float v = BitsF32(abs) + 0.5f;
    return sign | uint16_t(F32Bits(v) - 0x3F000000u);
  }
  const uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
  return sign | uint16_t((rounded - 0x38000000u) >> 13);
}

// A double rounded once to bf16, to nearest even (NaN: the quiet NaN).
inline uint16_t DoubleToBF16Bits(double d) {
  if (d != d) return 0x7FC0u;
  const uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
  const double a = std::fabs(d);
  if (a >= 0x1.ffp127) return sign | 0x7F80u;  // past the midpoint above the largest finite
  // Truncated to a bf16 (toward zero) and the one above it; the nearer wins.
  const uint16_t down = uint16_t(F32Bits(float(a)) >> 16);
  uint16_t lo = down;
  if (double(BitsF32(uint32_t(lo) << 16)) > a) --lo;  // float(a) rounded up past a
  const double vlo = double(BitsF32(uint32_t(lo) << 16)), vhi = double(BitsF32(uint32_t(lo + 1u) << 16));
  const bool up = a - vlo > vhi - a || (a - vlo == vhi - a && (lo & 1u));
  return sign | uint16_t(up ? lo + 1u : lo);
}

// The next binary16 value toward -Inf / +Inf (h not NaN).
inline uint16_t HalfNextDown(uint16_t h) {
  if (h == 0x0000u) return 0x8001u;
  return (h & 0x8000u) ? uint16_t(h + 1u) : uint16_t(h - 1u);
}
inline uint16_t HalfNextUp(uint16_t h) {
  if (h == 0x8000u) return 0x0001u;
  return (h & 0x8000u) ? uint16_t(h - 1u) : uint16_t(h + 1u);
}

// The largest binary16 <= f (for an fp16 x: x <= f  <=>  x <= FloorToHalf(f)).
inline uint16_t FloorToHalfBits(float f) {
  uint16_t h = FloatToHalfBits(f);
  if (f != f) return h;
  if (HalfBitsToFloat(h) > f) h = HalfNextDown(h);
  return h;
}
// The smallest binary16 >= f (for an fp16 x: x < f  <=>  x < CeilToHalf(f)).
inline uint16_t CeilToHalfBits(float f) {
  uint16_t h = FloatToHalfBits(f);
  if (f != f) return h;
  if (HalfBitsToFloat(h) < f) h = HalfNextUp(h);
  return h;
}

// LogitGrad's eps rules depend only on eps: resolved once per call.
enum LogitMode : int { kLogitAllNaN, kLogitZero, kLogitDivZero, kLogitNeg, kLogitNonNeg };
inline int LogitModeOf(float eps) {
  if (eps != eps) return kLogitAllNaN;
  if (eps > 1.0f) return eps == __builtin_inff() ? kLogitZero : kLogitAllNaN;
  if (eps == 1.0f) return kLogitDivZero;
  return eps < 0.0f ? kLogitNeg : kLogitNonNeg;
}

}  // namespace
}  // namespace actgrad::native
