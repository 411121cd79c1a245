// CopyTile (tile_copy.h): memcpy rows, SIMD square transposes, scalar rest.
// "Block" here is only Highway's: a 128-bit lane group of a vector.
#include "variants/tile_copy.h"

#include <cstring>

#include "variants/cache.h"  // kCacheLineBytes

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "variants/tile_copy.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/cache_control.h"  // Prefetch

#ifndef ACTGRAD_TILE_COPY_SCALAR_ONCE
#define ACTGRAD_TILE_COPY_SCALAR_ONCE
namespace actgrad {
namespace tile_copy_detail {

inline uint64_t AbsU(int64_t v) { return v < 0 ? 0 - uint64_t(v) : uint64_t(v); }

// Rows [r0, r1) x cols [c0, c1) of the tile, the inner loop along the smaller
// |stride| of src (dst's rows are ld elements apart).
template <typename T>
inline void CopyRect(T* dst, const T* src, int64_t rs, int64_t cs, int64_t ld, int64_t r0, int64_t r1,
                     int64_t c0, int64_t c1) {
  if (AbsU(rs) < AbsU(cs)) {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t r = r0; r < r1; ++r) dst[r * ld + c] = src[r * rs + c * cs];
  } else {
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t c = c0; c < c1; ++c) dst[r * ld + c] = src[r * rs + c * cs];
  }
}

template <typename T>
inline void CopyTileScalarOf(void* dst, int64_t ld, const void* src, int64_t rs, int64_t cs, int64_t nr,
                             int64_t nc) {
  CopyRect(static_cast<T*>(dst), static_cast<const T*>(src), rs, cs, ld, 0, nr, 0, nc);
}

inline void CopyTileScalarAny(void* dst, int64_t ld, const void* src, int64_t rs, int64_t cs, int64_t nr,
                              int64_t nc, size_t esize) {
  if (esize == 4) CopyTileScalarOf<uint32_t>(dst, ld, src, rs, cs, nr, nc);
  else if (esize == 2) CopyTileScalarOf<uint16_t>(dst, ld, src, rs, cs, nr, nc);
  else CopyTileScalarOf<uint8_t>(dst, ld, src, rs, cs, nr, nc);
}

}  // namespace tile_copy_detail
}  // namespace actgrad
#endif

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR

// One square of the transpose (src rs == 1): the vectors v[j] are src's
// columns c0 + j, lanes along the tile's rows. Each stage interleaves within
// 128-bit blocks only (InterleaveLower/Upper), so a 256-bit vector of 32-bit
// lanes holds two independent 4x4 transposes (rows r0.. and r0 + 4..), whose
// 128-bit halves ConcatLowerLower/ConcatUpperUpper then join into 8x8.

// 32-bit: 4x4 per 128-bit block. In: v0..v3 (columns), out: rows 0..3 of each block.
template <class D, class V>
HWY_INLINE void Transpose4x4Blocks(D d, V& v0, V& v1, V& v2, V& v3) {
  const hn::Repartition<uint64_t, D> d64;
  const V t0 = hn::InterleaveLower(d, v0, v1);  // v0[0] v1[0] v0[1] v1[1]
  const V t1 = hn::InterleaveLower(d, v2, v3);
  const V t2 = hn::InterleaveUpper(d, v0, v1);  // v0[2] v1[2] v0[3] v1[3]
  const V t3 = hn::InterleaveUpper(d, v2, v3);
  v0 = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, t0), hn::BitCast(d64, t1)));
  v1 = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, t0), hn::BitCast(d64, t1)));
  v2 = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, t2), hn::BitCast(d64, t3)));
  v3 = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, t2), hn::BitCast(d64, t3)));
}

// 32-bit, full squares over rows [r_begin, r_end) x cols [c_begin, c_end).
// 128-bit: 4x4; 256-bit: 8x8 (two 4x4 per vector, then the 128-bit halves joined).
// kRowsFirst: along dst's rows (a band of kN rows across every column
// square, then the next band), else down its columns (a strip of kN columns
// through every row, then the next strip).
template <bool kRowsFirst, class D>
HWY_INLINE void Transpose32(D d, uint32_t* HWY_RESTRICT dst, const uint32_t* HWY_RESTRICT src, int64_t cs,
                            int64_t ld, int64_t r_begin, int64_t r_end, int64_t c_begin, int64_t c_end) {
  constexpr size_t kN = HWY_MAX_BYTES >= 32 && hn::MaxLanes(D()) >= 8 ? 8 : 4;
  using V = hn::Vec<D>;
  const int64_t outer_end = kRowsFirst ? r_end : c_end, inner_begin = kRowsFirst ? c_begin : r_begin;
  const int64_t inner_end = kRowsFirst ? c_end : r_end;
  for (int64_t a = kRowsFirst ? r_begin : c_begin; a < outer_end; a += int64_t(kN)) {
    for (int64_t b = inner_begin; b < inner_end; b += int64_t(kN)) {
      const int64_t r0 = kRowsFirst ? a : b, c0 = kRowsFirst ? b : a;
      const uint32_t* s = src + c0 * cs;
      uint32_t* o = dst + r0 * ld + c0;
      if constexpr (kN == 8) {
        V a0 = hn::LoadU(d, s + 0 * cs + r0), a1 = hn::LoadU(d, s + 1 * cs + r0);
        V a2 = hn::LoadU(d, s + 2 * cs + r0), a3 = hn::LoadU(d, s + 3 * cs + r0);
        V b0 = hn::LoadU(d, s + 4 * cs + r0), b1 = hn::LoadU(d, s + 5 * cs + r0);
        V b2 = hn::LoadU(d, s + 6 * cs + r0), b3 = hn::LoadU(d, s + 7 * cs + r0);
        Transpose4x4Blocks(d, a0, a1, a2, a3);  // a_j: row j (cols 0-3) | row j + 4 (cols 0-3)
        Transpose4x4Blocks(d, b0, b1, b2, b3);  // b_j: the same for cols 4-7
        hn::StoreU(hn::ConcatLowerLower(d, b0, a0), d, o + 0 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, b1, a1), d, o + 1 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, b2, a2), d, o + 2 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, b3, a3), d, o + 3 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, b0, a0), d, o + 4 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, b1, a1), d, o + 5 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, b2, a2), d, o + 6 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, b3, a3), d, o + 7 * ld);
      } else {
        V v0 = hn::LoadU(d, s + 0 * cs + r0), v1 = hn::LoadU(d, s + 1 * cs + r0);
        V v2 = hn::LoadU(d, s + 2 * cs + r0), v3 = hn::LoadU(d, s + 3 * cs + r0);
        Transpose4x4Blocks(d, v0, v1, v2, v3);
        hn::StoreU(v0, d, o + 0 * ld);
        hn::StoreU(v1, d, o + 1 * ld);
        hn::StoreU(v2, d, o + 2 * ld);
        hn::StoreU(v3, d, o + 3 * ld);
      }
    }
  }
}

// 16-bit: 8x8 within each 128-bit block. In: v0..v7 (columns 0-7, lanes
// along the rows), out: v_i = row i of each block's 8 rows (columns 0-7).
template <class D, class V>
HWY_INLINE void Transpose8x8Blocks16(D d, V& v0, V& v1, V& v2, V& v3, V& v4, V& v5, V& v6, V& v7) {
  const hn::Repartition<uint32_t, D> d32;
  const hn::Repartition<uint64_t, D> d64;
  // Stage 1 (16-bit): tXY_lo = rows 0-3 of columns X, Y as 32-bit pairs, tXY_hi rows 4-7.
  const auto t01l = hn::BitCast(d32, hn::InterleaveLower(d, v0, v1));
  const auto t01h = hn::BitCast(d32, hn::InterleaveUpper(d, v0, v1));
  const auto t23l = hn::BitCast(d32, hn::InterleaveLower(d, v2, v3));
  const auto t23h = hn::BitCast(d32, hn::InterleaveUpper(d, v2, v3));
  const auto t45l = hn::BitCast(d32, hn::InterleaveLower(d, v4, v5));
  const auto t45h = hn::BitCast(d32, hn::InterleaveUpper(d, v4, v5));
  const auto t67l = hn::BitCast(d32, hn::InterleaveLower(d, v6, v7));
  const auto t67h = hn::BitCast(d32, hn::InterleaveUpper(d, v6, v7));
  // Stage 2 (32-bit): uA_ij = rows i, j as two 4-column halves (64-bit lanes),
  // A = columns 0-3, B = columns 4-7.
  const auto uA01 = hn::BitCast(d64, hn::InterleaveLower(d32, t01l, t23l));
  const auto uA23 = hn::BitCast(d64, hn::InterleaveUpper(d32, t01l, t23l));
  const auto uA45 = hn::BitCast(d64, hn::InterleaveLower(d32, t01h, t23h));
  const auto uA67 = hn::BitCast(d64, hn::InterleaveUpper(d32, t01h, t23h));
  const auto uB01 = hn::BitCast(d64, hn::InterleaveLower(d32, t45l, t67l));
  const auto uB23 = hn::BitCast(d64, hn::InterleaveUpper(d32, t45l, t67l));
  const auto uB45 = hn::BitCast(d64, hn::InterleaveLower(d32, t45h, t67h));
  const auto uB67 = hn::BitCast(d64, hn::InterleaveUpper(d32, t45h, t67h));
  // Stage 3 (64-bit): row i = its columns 0-3 from uA, 4-7 from uB.
  v0 = hn::BitCast(d, hn::InterleaveLower(d64, uA01, uB01));
  v1 = hn::BitCast(d, hn::InterleaveUpper(d64, uA01, uB01));
  v2 = hn::BitCast(d, hn::InterleaveLower(d64, uA23, uB23));
  v3 = hn::BitCast(d, hn::InterleaveUpper(d64, uA23, uB23));
  v4 = hn::BitCast(d, hn::InterleaveLower(d64, uA45, uB45));
  v5 = hn::BitCast(d, hn::InterleaveUpper(d64, uA45, uB45));
  v6 = hn::BitCast(d, hn::InterleaveLower(d64, uA67, uB67));
  v7 = hn::BitCast(d, hn::InterleaveUpper(d64, uA67, uB67));
}

// 16-bit, full squares over rows [r_begin, r_end) x cols [c_begin, c_end):
// 8x8 with 128-bit vectors; 16x16 with 256-bit ones (8x8 in each 128-bit
// half, for columns 0-7 and 8-15, the halves then joined as in Transpose32).
template <bool kRowsFirst, class D>
HWY_INLINE void Transpose16(D d, uint16_t* HWY_RESTRICT dst, const uint16_t* HWY_RESTRICT src, int64_t cs,
                            int64_t ld, int64_t r_begin, int64_t r_end, int64_t c_begin, int64_t c_end) {
  constexpr int64_t kN = int64_t(hn::MaxLanes(D()));
  static_assert(kN == 8 || kN == 16, "8 or 16 16-bit lanes");
  using V = hn::Vec<D>;
  // Each step reads kN rows x kN elements, so each step prefetches as many
  // lines of the next strip's rows (columns c0 + kN.., the same span),
  // ending as the strip ends. Without it the short streams of a strip (a
  // 1024-row tile of 16-bit rows: 2 KB each) start cold: for SELU f16 at
  // 16M the 8x8 copy alone takes 1.5-1.7x as long without it, and the 16-bit
  // transposed cells through the API 1.3x. The 32-bit copy (4 KB streams)
  // gains nothing from it. Into the L2, not the L1: a 16x16 strip of 2 KB
  // rows is 32 KB, a whole L1 of 32 KB, so lines fetched into the L1 a strip
  // ahead are evicted before use (the copy alone 1.1x slower than into the
  // L2).
  // Along dst's rows (kRowsFirst) the source is a tile in the cache (a
  // result tile): no prefetch.
  constexpr int kLinesPerStep = kRowsFirst ? 0 : int(kN * kN * 2 / kCacheLineBytes);
  const int64_t span = r_end - r_begin;
  const int64_t outer_end = kRowsFirst ? r_end : c_end, inner_begin = kRowsFirst ? c_begin : r_begin;
  const int64_t inner_end = kRowsFirst ? c_end : r_end;
  for (int64_t a = kRowsFirst ? r_begin : c_begin; a < outer_end; a += kN) {
    // Down the columns: the next strip's row being prefetched (along the rows: none).
    const uint16_t* next_row = kRowsFirst ? src : src + (a + kN) * cs + r_begin;
    int64_t next_rows = !kRowsFirst && a + kN < c_end ? kN : 0, next_at = 0;
    for (int64_t b = inner_begin; b < inner_end; b += kN) {
      const int64_t r0 = kRowsFirst ? a : b, c0 = kRowsFirst ? b : a;
      const uint16_t* s = src + c0 * cs;
      for (int line = 0; line < kLinesPerStep && next_rows > 0; ++line) {
        __builtin_prefetch(next_row + next_at, 0, 2);  // to the L2 (x86 prefetcht1, Arm PLDL2KEEP)
        next_at += 64 / int64_t(sizeof(uint16_t));
        if (next_at >= span) next_at = 0, next_row += cs, --next_rows;
      }
      // Named vectors, not arrays: SVE vectors are sizeless types.
      V v0 = hn::LoadU(d, s + 0 * cs + r0), v1 = hn::LoadU(d, s + 1 * cs + r0);
      V v2 = hn::LoadU(d, s + 2 * cs + r0), v3 = hn::LoadU(d, s + 3 * cs + r0);
      V v4 = hn::LoadU(d, s + 4 * cs + r0), v5 = hn::LoadU(d, s + 5 * cs + r0);
      V v6 = hn::LoadU(d, s + 6 * cs + r0), v7 = hn::LoadU(d, s + 7 * cs + r0);
      Transpose8x8Blocks16(d, v0, v1, v2, v3, v4, v5, v6, v7);
      uint16_t* o = dst + r0 * ld + c0;
      if constexpr (kN == 8) {
        hn::StoreU(v0, d, o + 0 * ld);
        hn::StoreU(v1, d, o + 1 * ld);
        hn::StoreU(v2, d, o + 2 * ld);
        hn::StoreU(v3, d, o + 3 * ld);
        hn::StoreU(v4, d, o + 4 * ld);
        hn::StoreU(v5, d, o + 5 * ld);
        hn::StoreU(v6, d, o + 6 * ld);
        hn::StoreU(v7, d, o + 7 * ld);
      } else {
        V w0 = hn::LoadU(d, s + 8 * cs + r0), w1 = hn::LoadU(d, s + 9 * cs + r0);
        V w2 = hn::LoadU(d, s + 10 * cs + r0), w3 = hn::LoadU(d, s + 11 * cs + r0);
        V w4 = hn::LoadU(d, s + 12 * cs + r0), w5 = hn::LoadU(d, s + 13 * cs + r0);
        V w6 = hn::LoadU(d, s + 14 * cs + r0), w7 = hn::LoadU(d, s + 15 * cs + r0);
        Transpose8x8Blocks16(d, w0, w1, w2, w3, w4, w5, w6, w7);
        // v_i: row i (columns 0-7) | row 8 + i (columns 0-7); w_i: the same for columns 8-15.
        hn::StoreU(hn::ConcatLowerLower(d, w0, v0), d, o + 0 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, w1, v1), d, o + 1 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, w2, v2), d, o + 2 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, w3, v3), d, o + 3 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, w4, v4), d, o + 4 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, w5, v5), d, o + 5 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, w6, v6), d, o + 6 * ld);
        hn::StoreU(hn::ConcatLowerLower(d, w7, v7), d, o + 7 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w0, v0), d, o + 8 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w1, v1), d, o + 9 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w2, v2), d, o + 10 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w3, v3), d, o + 11 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w4, v4), d, o + 12 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w5, v5), d, o + 13 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w6, v6), d, o + 14 * ld);
        hn::StoreU(hn::ConcatUpperUpper(d, w7, v7), d, o + 15 * ld);
      }
    }
  }
}

// The tags: 256-bit on x86 with AVX2 or AVX-512 (512-bit shuffles measured
// no faster, and 16x16 32-bit squares would need cross-block ops Highway
// 1.0.3 lacks), 128-bit elsewhere (NEON, SVE, SSE4, EMU128). 16-bit 16x16
// squares on 256-bit against 8x8 on 128-bit: in the L1 about 1.3x as fast
// (SELU f16 32K, 1024 x 128 tiles); from memory, with the prefetch into the
// L2 (Transpose16), about 1.15x (SELU bf16 16M, the copy alone).
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
template <typename T>
using WideTag = hn::FixedTag<T, 32 / sizeof(T)>;
#else
template <typename T>
using WideTag = hn::FixedTag<T, 16 / sizeof(T)>;
#endif
template <typename T>
using NarrowTag = hn::FixedTag<T, 16 / sizeof(T)>;

// rs == 1 for T of 4 or 2 bytes: wide squares, then narrow squares on what
// the wide ones left, then scalar edges.
template <bool kRowsFirst, typename T>
HWY_INLINE void TransposeTile(T* HWY_RESTRICT dst, int64_t ld, const T* HWY_RESTRICT src, int64_t cs,
                              int64_t nr, int64_t nc) {
  const WideTag<T> dw;
  const NarrowTag<T> dn;
  constexpr int64_t kWideRows = int64_t(hn::MaxLanes(WideTag<T>()));
  constexpr int64_t kNarrowRows = int64_t(hn::MaxLanes(NarrowTag<T>()));
  // Columns per square: as many as rows (32-bit 8 or 4, 16-bit 16 or 8).
  constexpr int64_t kWideCols = kWideRows;
  constexpr int64_t kNarrowCols = sizeof(T) == 4 ? 4 : 8;
  auto run = [&](auto d, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    if (r0 >= r1 || c0 >= c1) return;
    if constexpr (sizeof(T) == 4) Transpose32<kRowsFirst>(d, dst, src, cs, ld, r0, r1, c0, c1);
    else Transpose16<kRowsFirst>(d, dst, src, cs, ld, r0, r1, c0, c1);
  };
  const int64_t rw = nr / kWideRows * kWideRows, cw = nc / kWideCols * kWideCols;
  run(dw, 0, rw, 0, cw);
  int64_t rn = rw, cn = cw;
  if constexpr (kNarrowRows != kWideRows) {
    rn = nr / kNarrowRows * kNarrowRows;
    cn = nc / kNarrowCols * kNarrowCols;
    run(dn, 0, rw, cw, cn);  // the column strip right of the wide squares
    run(dn, rw, rn, 0, cn);  // the row strip below them
  }
  tile_copy_detail::CopyRect(dst, src, 1, cs, ld, 0, rn, cn, nc);
  tile_copy_detail::CopyRect(dst, src, 1, cs, ld, rn, nr, 0, nc);
}

#endif  // HWY_TARGET != HWY_SCALAR

void CopyTileImpl(void* HWY_RESTRICT dst, int64_t ld, const void* HWY_RESTRICT src, int64_t rs, int64_t cs,
                  int64_t nr, int64_t nc, size_t esize, bool rows_first) {
#if HWY_TARGET != HWY_SCALAR
  if (rs == 1 && nc > 1 && cs != 1) {
    auto go = [&](auto* d, const auto* s) {
      if (rows_first) TransposeTile<true>(d, ld, s, cs, nr, nc);
      else TransposeTile<false>(d, ld, s, cs, nr, nc);
    };
    if (esize == 4) {
      go(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src));
      return;
    }
    if (esize == 2) {
      go(static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src));
      return;
    }
  }
#else
  (void)rows_first;
#endif
  tile_copy_detail::CopyTileScalarAny(dst, ld, src, rs, cs, nr, nc, esize);
}

// PackRows: full vectors of bytes, then the rest through a vector-sized
// buffer (no libc call per row: the rows are short).
HWY_INLINE void CopyBytes(uint8_t* HWY_RESTRICT d, const uint8_t* HWY_RESTRICT s, size_t bytes) {
  const hn::ScalableTag<uint8_t> du8;
  const size_t N = hn::Lanes(du8);
  size_t i = 0;
  for (; i + N <= bytes; i += N) hn::StoreU(hn::LoadU(du8, s + i), du8, d + i);
  for (; i < bytes; ++i) d[i] = s[i];
}

// Rows of n copies of *rows[r], one after another from d: whole vectors of
// one Set each, the rest element by element. (The plain loop the compiler
// vectorized cost ~57 instructions per 64-element row in its prologue and
// epilogue, more than the kernel's work on the row: runtime/plan.h
// Plan::packed, a splat g.)
template <typename T>
HWY_INLINE void FillRows(T* HWY_RESTRICT d, const void* const* rows, int64_t nr, size_t n) {
  const hn::ScalableTag<T> dt;
  const size_t N = hn::Lanes(dt);
  for (int64_t r = 0; r < nr; ++r, d += n) {
    T v;
    std::memcpy(&v, rows[r], sizeof(T));
    const auto splat = hn::Set(dt, v);
    size_t i = 0;
    for (; i + N <= n; i += N) hn::StoreU(splat, dt, d + i);
    for (; i < n; ++i) d[i] = v;
  }
}

void PackRowsImpl(void* HWY_RESTRICT dst, const void* const* rows, int64_t nr, int64_t nc, size_t esize, bool splat) {
  uint8_t* d = static_cast<uint8_t*>(dst);
  const size_t row = size_t(nc) * esize;
  if (splat) {
    if (esize == 4) FillRows(reinterpret_cast<uint32_t*>(d), rows, nr, size_t(nc));
    else if (esize == 2) FillRows(reinterpret_cast<uint16_t*>(d), rows, nr, size_t(nc));
    else FillRows(d, rows, nr, size_t(nc));
    return;
  }
  for (int64_t r = 0; r < nr; ++r, d += row) CopyBytes(d, static_cast<const uint8_t*>(rows[r]), row);
}

}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace actgrad {
HWY_EXPORT(CopyTileImpl);
HWY_EXPORT(PackRowsImpl);

void PackRows(void* dst, const void* const* rows, int64_t nr, int64_t nc, size_t esize, bool splat) {
  if (nr <= 0 || nc <= 0) return;
  HWY_DYNAMIC_DISPATCH(PackRowsImpl)(dst, rows, nr, nc, esize, splat);
}

void CopyTileScalar(void* dst, const void* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc, size_t esize) {
  tile_copy_detail::CopyTileScalarAny(dst, nc, src, rs, cs, nr, nc, esize);
}

namespace {
void CopyTileOrdered(void* dst, int64_t ld, const void* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc,
                     size_t esize, bool rows_first) {
  if (nr <= 0 || nc <= 0) return;
  if (nc == 1) cs = 1;   // one column: its stride is never used
  if (nr == 1) rs = nc, ld = nc;  // one row: likewise
  if (cs == 1) {         // rows contiguous in src
    const size_t row = size_t(nc) * esize;
    if (rs == nc && ld == nc) {
      std::memcpy(dst, src, size_t(nr) * row);
      return;
    }
    char* d = static_cast<char*>(dst);
    const char* s = static_cast<const char*>(src);
    const int64_t step = rs * int64_t(esize), dstep = ld * int64_t(esize);
    for (int64_t r = 0; r < nr; ++r) std::memcpy(d + r * dstep, s + r * step, row);
    return;
  }
  HWY_DYNAMIC_DISPATCH(CopyTileImpl)(dst, ld, src, rs, cs, nr, nc, esize, rows_first);
}
}  // namespace

void CopyTileTo(void* dst, int64_t ld, const void* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc,
                size_t esize) {
  CopyTileOrdered(dst, ld, src, rs, cs, nr, nc, esize, /*rows_first=*/true);
}

void CopyTile(void* dst, const void* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc, size_t esize) {
  CopyTileOrdered(dst, nc, src, rs, cs, nr, nc, esize, /*rows_first=*/false);
}
}  // namespace actgrad
#endif
