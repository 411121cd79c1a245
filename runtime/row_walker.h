// The rows of a PlanPath::kRuns plan (dims 0..ndim-2, row-major) one after
// another, as each operand's byte offset from its base, with adds only.
// The lowest dims, up to kBlockRows rows, form a block whose offsets are
// tabulated once per plan, in phase one (RowTable); the dims above it step like an
// odometer once per block (RowWalker). Why: a view's lower dims are often
// short (the benchmarks' strided view wraps every 4 rows), and index
// arithmetic with a carry every few rows cost as much as the kernel itself
// (SELU f32 64K, strided view: 3.9 of 14.4 us building run pointers).
#pragma once
#include <algorithm>
#include <cstdint>

#include "runtime/plan.h"

namespace actgrad::rt {

// The largest divisor of s (> kBlockRows) up to kBlockRows: its power-of-two
// part when that is large enough (the common shapes), else a search.
inline int64_t LargestDivisor(int64_t s) {
  int64_t b = s & -s;
  if (b >= kBlockRows) return kBlockRows;
  if (b >= 32) return b;
  for (int64_t c = kBlockRows; c > b; --c)
    if (s % c == 0) return c;
  return b;
}

// RowTable::Build (phase one: BuildPlan, for PlanPath::kRuns).
// A dim longer than kBlockRows is split in two (its rows as blocks of b,
// b the largest divisor up to kBlockRows) so that the lowest dims always make
// a block of more than one row where they can; the dim above the block gives
// it its power-of-two part as far as it fits. The kernels read the block's
// offsets in place (variant.h Runs), so a tile is one call per block stretch.
inline void RowTable::Build(const Plan& p) {
  block = 1;
  lo = nd = 0;
  const int d = p.ndim - 1;
  const OperandView* ops[3] = {&p.g, &p.x, &p.out};
  const int64_t esize = int64_t(DTypeSize(p.dtype));
  for (int i = 0; i < d; ++i) {
    shape[nd] = p.shape[i];
    for (int k = 0; k < 3; ++k) step[k][nd] = ops[k]->strides[i] * esize;
    ++nd;
  }
  if (nd > 0 && shape[nd - 1] > kBlockRows) {  // split the lowest dim into (S / b, b)
    const int64_t s = shape[nd - 1], b = LargestDivisor(s);
    shape[nd - 1] = s / b;
    shape[nd] = b;
    for (int k = 0; k < 3; ++k) step[k][nd] = step[k][nd - 1], step[k][nd - 1] *= b;
    ++nd;
  }
  lo = nd;
  while (lo > 0 && block * shape[lo - 1] <= kBlockRows) block *= shape[--lo];
  // The next dim's power-of-two part, as much of it as still fits, joins
  // the block (the benchmarks' strided view, row dims (n/1024, 4, 4): a
  // block of 16 rows -> (n/4096 | 4, 4, 4), 64 -> 256 at 64K), so a tile
  // of up to kBlockRows rows is one kernel call on a slice of the table.
  if (lo > 0) {
    int64_t b = shape[lo - 1] & -shape[lo - 1];
    while (b > 1 && block * b > kBlockRows) b >>= 1;
    if (b > 1) {  // dim lo-1 becomes (S / b, b)
      for (int i = nd; i > lo; --i) {
        shape[i] = shape[i - 1];
        for (int k = 0; k < 3; ++k) step[k][i] = step[k][i - 1];
      }
      shape[lo] = b;
      shape[lo - 1] /= b;
      for (int k = 0; k < 3; ++k) step[k][lo] = step[k][lo - 1], step[k][lo - 1] *= b;
      ++nd;
      block *= b;
    }
  }
  // Row j of the block (dims lo..nd-1, row-major) from the innermost dim out:
  // each dim's rows are the rows tabulated so far shifted by its stride, so
  // the table is a few add loops the compiler vectorises. Row by row with an
  // odometer, SELU's phase one on the benchmarks' strided view at 64K took
  // 9.1K instructions; with these loops 6.1K (callgrind, percall probe).
  for (int k = 0; k < 3; ++k) off[k][0] = 0;
  int64_t filled = 1;
  for (int i = nd - 1; i >= lo; --i) {
    for (int k = 0; k < 3; ++k)
      for (int64_t m = 1; m < shape[i]; ++m) {
        const int64_t add = m * step[k][i];
        int64_t* const dst = off[k] + m * filled;
        for (int64_t j = 0; j < filled; ++j) dst[j] = off[k][j] + add;
      }
    filled *= shape[i];
  }
}

class RowWalker {
 public:
  // At row `row` of the plan (0 <= row < numel / cols).
  RowWalker(const RowTable& t, int64_t row) : t_(t) {
    j_ = row % t.block;
    int64_t rest = row / t.block;
    for (int i = t.lo - 1; i >= 0; --i) {
      idx_[i] = rest % t.shape[i];
      rest /= t.shape[i];
      for (int k = 0; k < 3; ++k) outer_[k] += idx_[i] * t.step[k][i];
    }
  }
  // Byte offset of the current row's first element of operand k (0 g, 1 x, 2 out).
  int64_t Offset(int k) const { return outer_[k] + t_.off[k][j_]; }
  // The next nr rows' addresses (base[k] + each row's offset) into p[k][0..nr),
  // walking on past them: a tight loop per stretch of tabulated rows, the
  // stretch's bases in registers.
  void Fill(int64_t nr, const char* const base[3], const void** p0, const void** p1, void** p2) {
    ForStretches(nr, [&](int64_t r, int64_t m) {
      const char* const b0 = base[0] + outer_[0];
      const char* const b1 = base[1] + outer_[1];
      char* const b2 = const_cast<char*>(base[2]) + outer_[2];
      const int64_t* const o0 = t_.off[0] + j_;
      const int64_t* const o1 = t_.off[1] + j_;
      const int64_t* const o2 = t_.off[2] + j_;
      for (int64_t i = 0; i < m; ++i) {
        p0[r + i] = b0 + o0[i];
        p1[r + i] = b1 + o1[i];
        p2[r + i] = b2 + o2[i];
      }
    });
  }
  // The next stretch of at most `want` rows (>= 1) inside one block of the
  // table, walking on past it: returns its row count m; outer[k] is operand
  // k's byte offset of the block, off[k] the table's offsets of the m rows
  // (a row's offset is outer[k] + off[k][i]).
  int64_t Take(int64_t want, int64_t outer[3], const int64_t* off[3]) {
    const int64_t m = std::min(want, t_.block - j_);
    for (int k = 0; k < 3; ++k) {
      outer[k] = outer_[k];
      off[k] = t_.off[k] + j_;
    }
    j_ += m - 1;
    Next();
    return m;
  }
  // The next nr rows (>= 1) as one stretch, walking on past them: the
  // table's own offsets where one block of it holds them all (as Take), else
  // each row's byte offset (outer[k] + the table's) written into
  // scratch[k][0..nr), outer = 0: one kernel call for a tile that spans
  // several short blocks (the benchmarks' strided view with an odd n / 1024
  // has blocks of 16 rows: the dim above has no power-of-two part to give).
  // ExecuteRuns uses it where blocks are short (kWholeTileBelowBlockRows).
  void TakeAll(int64_t nr, int64_t outer[3], const int64_t* off[3], int64_t* const scratch[3]) {
    if (nr <= t_.block - j_) {
      Take(nr, outer, off);
      return;
    }
    ForStretches(nr, [&](int64_t r, int64_t m) {
      for (int k = 0; k < 3; ++k) {
        const int64_t base = outer_[k];
        const int64_t* const o = t_.off[k] + j_;
        int64_t* const dst = scratch[k] + r;
        for (int64_t i = 0; i < m; ++i) dst[i] = base + o[i];
      }
    });
    for (int k = 0; k < 3; ++k) {
      outer[k] = 0;
      off[k] = scratch[k];
    }
  }
  void Next() {
    if (++j_ < t_.block) return;
    j_ = 0;
    for (int i = t_.lo - 1; i >= 0; --i) {
      for (int k = 0; k < 3; ++k) outer_[k] += t_.step[k][i];
      if (++idx_[i] < t_.shape[i]) return;
      for (int k = 0; k < 3; ++k) outer_[k] -= idx_[i] * t_.step[k][i];
      idx_[i] = 0;
    }
  }

 private:
  // The next nr rows as stretches inside one block each: f(r, m) for rows
  // r..r+m of the nr (block rows j_..j_+m, the block at outer_), walking on
  // past them.
  template <class F>
  void ForStretches(int64_t nr, F&& f) {
    for (int64_t r = 0; r < nr;) {
      const int64_t m = std::min(nr - r, t_.block - j_);
      f(r, m);
      r += m;
      j_ += m - 1;
      Next();
    }
  }

  const RowTable& t_;
  int64_t j_ = 0;
  int64_t idx_[kMaxDims + 1] = {};
  int64_t outer_[3] = {};
};

}  // namespace actgrad::rt
