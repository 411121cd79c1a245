// A 2-D tile copy for the runtime's gathered (strided or transposed) views:
//   dst[r * nc + c] = src[r * rs + c * cs],  0 <= r < nr, 0 <= c < nc,
// strides rs, cs in elements (any value, negative too), elements of esize
// 4, 2 or 1 bytes (bit copies: f32, f16/bf16, 8-bit). Exactly nr * nc
// elements of dst are written. dst and src must not overlap, and both must be
// aligned to esize (like the scalar loop it replaces).
//
// Paths (Highway dynamic dispatch, kernels/variants/tile_copy.cc):
//   cs == 1 (or nc == 1): one memcpy per row (one in all if rs == nc);
//   rs == 1, esize 4 or 2: SIMD square transposes (32-bit: 8x8 with 256-bit
//     vectors on AVX2/AVX-512, then 4x4 with 128-bit on what is left, 4x4
//     only elsewhere; 16-bit: 16x16 with 256-bit vectors on AVX2/AVX-512,
//     then 8x8 with 128-bit, 8x8 only elsewhere), the edges scalar;
//     esize 1 takes the scalar loop;
//   anything else: the scalar double loop, the inner loop along the smaller
//     |stride|.
#pragma once

#include <cstddef>
#include <cstdint>

namespace actgrad {

void CopyTile(void* dst, const void* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc, size_t esize);
// The same into rows ld elements apart (ld >= nc):
//   dst[r * ld + c] = src[r * rs + c * cs]
// (a transposed result tile written back into out's rows). Only those
// nr x nc elements of dst are written. The SIMD squares go along dst's rows
// (a band of 8 or 16 rows across all nc columns, then the next band), where
// CopyTile goes down its columns (the order that reads a gathered source's
// lines once): out's rows are far apart, and written down the columns a
// line's halves came a whole strip apart, by when the line had left the
// cache (4 KB rows: out's rows fall into a few sets).
void CopyTileTo(void* dst, int64_t ld, const void* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc,
                size_t esize);

// Packs nr rows of nc elements into dst (row r at dst + r * nc * esize):
// copies of the nc elements at rows[r], or (splat) nc copies of the one
// element at rows[r]. For the runtime's packed tiles of short runs
// (runtime/plan.h Plan::packed): full vectors, no call per row.
void PackRows(void* dst, const void* const* rows, int64_t nr, int64_t nc, size_t esize, bool splat);

// The plain scalar definition (the reference for tests and benchmarks).
void CopyTileScalar(void* dst, const void* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc, size_t esize);

}  // namespace actgrad
