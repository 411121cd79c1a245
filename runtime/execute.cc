// Phase two (Execute, runtime/plan.h): the paths a plan takes (PlanPath):
// the whole range to the variant (kFlat), tiles of runs read in place with
// splats and gathered tiles (kRuns), per-thread buffers (kBuffered).
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "actgrad/half.h"
#include "runtime/plan.h"
#include "runtime/row_walker.h"
#include "variants/thread_pool.h"
#include "variants/tile_copy.h"
#include "variants/variant.h"

namespace actgrad::rt {

namespace {

float LoadAsFloat(const char* p, DType t) {
  switch (t) {
    case DType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, p, 2); return HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, p, 2); return BF16ToFloat(h); }
    default: return 0.0f;
  }
}

void StoreFloat(char* p, DType t, float f) {
  switch (t) {
    case DType::kF32: std::memcpy(p, &f, 4); break;
    case DType::kF16: { const uint16_t h = FloatToHalf(f); std::memcpy(p, &h, 2); break; }
    case DType::kBF16: { const uint16_t h = FloatToBF16(f); std::memcpy(p, &h, 2); break; }
    default: break;
  }
}

template <size_t kSize>
void StridedCopy(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * dst_stride * int64_t(kSize), src + i * src_stride * int64_t(kSize), kSize);
}

// Walks the elements [start, start+len) of the plan's index space in runs
// along the innermost dim, calling fn(element offset of v, run start, run length).
// The running offset only ever points at elements of the view (never one
// stride past a dim's end), so it stays within what CheckTensor validated.
template <class Fn>
void ForEachRun(const int64_t* shape, size_t nd, const int64_t* strides, uint64_t start, uint64_t len, Fn&& fn) {
  const size_t in = nd - 1;
  int64_t idx[kMaxDims + 1];
  uint64_t rest = start;
  int64_t off = 0;
  for (size_t i = nd; i-- > 0;) {
    idx[i] = int64_t(rest % uint64_t(shape[i]));
    rest /= uint64_t(shape[i]);
    off += idx[i] * strides[i];
  }
  uint64_t done = 0;
  while (true) {
    const int64_t run = std::min<int64_t>(shape[in] - idx[in], int64_t(len - done));
    fn(off, done, run);
    done += uint64_t(run);
    if (done == len) return;
    // Only the range's last run ends inside a row: back to this row's start, carry.
    off -= idx[in] * strides[in];
    idx[in] = 0;
    for (size_t i = in; i-- > 0;) {
      if (idx[i] + 1 < shape[i]) {
        ++idx[i];
        off += strides[i];
        break;
      }
      off -= idx[i] * strides[i];
      idx[i] = 0;
    }
  }
}

// Copies operand elements [start, start+len) into dst (compute dtype `to`).
void Gather(const Plan& p, const OperandView& v, uint64_t start, uint64_t len, char* dst) {
  const size_t in_size = DTypeSize(v.dtype), out_size = DTypeSize(p.dtype);
  const int64_t inner = v.strides[p.ndim - 1];
  ForEachRun(p.shape, size_t(p.ndim), v.strides, start, len, [&](int64_t off, uint64_t at, int64_t run) {
    const char* src = v.base + off * int64_t(in_size);
    char* d = dst + at * out_size;
    if (v.dtype == p.dtype) {
      if (inner == 1) std::memcpy(d, src, size_t(run) * in_size);
      else if (in_size == 4) StridedCopy<4>(d, 1, src, inner, run);
      else if (in_size == 2) StridedCopy<2>(d, 1, src, inner, run);
      else StridedCopy<1>(d, 1, src, inner, run);
    } else {  // GELU's dtype promotion
      for (int64_t i = 0; i < run; ++i)
        StoreFloat(d + i * int64_t(out_size), p.dtype, LoadAsFloat(src + i * inner * int64_t(in_size), v.dtype));
    }
  });
}

void Scatter(const Plan& p, const char* src, uint64_t start, uint64_t len) {
  const OperandView& v = p.out;
  const size_t size = DTypeSize(p.dtype);
  const int64_t inner = v.strides[p.ndim - 1];
  ForEachRun(p.shape, size_t(p.ndim), v.strides, start, len, [&](int64_t off, uint64_t at, int64_t run) {
    char* d = v.base + off * int64_t(size);
    const char* s = src + at * size;
    if (inner == 1) std::memcpy(d, s, size_t(run) * size);
    else if (size == 4) StridedCopy<4>(d, inner, s, 1, run);
    else if (size == 2) StridedCopy<2>(d, inner, s, 1, run);
    else StridedCopy<1>(d, inner, s, 1, run);
  });
}

// Prefetches an nr x nc tile at src (strides rs, cs in elements) a cache
// line at a time along its contiguous side; nothing when it has none.
void PrefetchTile(const char* src, int64_t rs, int64_t cs, int64_t nr, int64_t nc, size_t esize) {
  const int64_t e = int64_t(esize);
  if (rs == 1 || rs == -1) {
    for (int64_t c = 0; c < nc; ++c)
      for (int64_t o = 0; o < nr * e; o += 64) PrefetchLine(src + c * cs * e + rs * o);
  } else if (cs == 1 || cs == -1) {
    for (int64_t r = 0; r < nr; ++r)
      for (int64_t o = 0; o < nc * e; o += 64) PrefetchLine(src + r * rs * e + cs * o);
  }
}

// Rows 0..nr-1 at rows[r] follow each other in memory (row_bytes apart).
bool RowsAdjacent(const void* const* rows, int64_t nr, size_t row_bytes) {
  const char* first = static_cast<const char*>(rows[0]);
  for (int64_t r = 1; r < nr; ++r)
    if (static_cast<const char*>(rows[r]) != first + r * int64_t(row_bytes)) return false;
  return true;
}

// Row-table blocks shorter than this make one kernel call per tile
// (RowWalker::TakeAll) instead of one per block stretch. A call costs its
// set-up and, in a streaming-store variant, a store fence: at 16 rows per
// call (the strided view with an odd n / 1024) SELU bf16 at 16.8M ran 0.29
// ns per element against 0.19. Filling a tile's offsets costs too: with
// 256-row blocks (64K, 1024-row tiles) it made the two-thread strided and
// bcast cells 1.18-1.30x slower, so long blocks keep their calls. At odd
// sizes (66,560 and 16,778,240 elements, strided and bcast, every op and
// dtype, three repetitions) whole tiles take 0.90-0.98x the time, 0.75x
// for bcast 64K on two threads, 1.03x for strided 64K on one.
constexpr int64_t kWholeTileBelowBlockRows = 64;

// Plan::transpose_result: one tile of nr out rows x nc out columns. In the
// inputs' order the tile is nc runs of nr elements (g and x step by one
// element along out's rows, by cs[k] from one run to the next): the variant
// computes them, one call, into the scratch tile (rows p.scratch_ld apart),
// and CopyTileTo transposes the scratch into out's nr rows (rs[2] apart).
void TransposedResultTile(const Plan& p, KernelArgs& a, Runs& runs, const char* const col0[3], const RowWalker& rows,
                          int64_t nr, int64_t nc, const int64_t cs[3], const int64_t rs[3], int64_t* const offs[3],
                          char* scratch) {
  const Variant& v = *p.kernel.variant;
  const size_t esize = DTypeSize(p.dtype);
  const int64_t e = int64_t(esize), ld = p.scratch_ld;
  const char* g = col0[0] + rows.Offset(0);
  const char* x = col0[1] + rows.Offset(1);
  char* out = const_cast<char*>(col0[2]) + rows.Offset(2);
  for (int64_t j = 0; j < nc; ++j) {
    offs[0][j] = j * cs[0] * e;
    offs[1][j] = j * cs[1] * e;
    offs[2][j] = j * ld * e;
  }
  runs.count = size_t(nc);
  runs.g = g;
  runs.x = x;
  runs.out = scratch;
  runs.g_off = offs[0];
  runs.x_off = offs[1];
  runs.out_off = offs[2];
  a.n = size_t(nr);
  v.fn(a);
  CopyTileTo(out, rs[2], scratch, 1, ld, nr, nc, esize);
}

// The tile grid of a PlanPath::kRuns plan and what its tiles share.
struct RunsGrid {
  int d;                 // the innermost dim (the runs')
  int64_t cols;          // elements per row
  int64_t seg;           // rows a tile may not cross
  int64_t tr, tc;        // tile rows and columns
  int64_t seg_tiles, col_tiles, tiles;
  size_t esize;
  bool gathered;         // g or x gathered
  bool gath[2];          // g, x gathered
  const OperandView* ops[3];
  int64_t cs[3], rs[3];  // each operand's stride along the columns and along dim ndim-2
};

RunsGrid MakeRunsGrid(const Plan& p) {
  RunsGrid g;
  g.d = p.ndim - 1;
  g.cols = p.shape[g.d];
  const int64_t total_rows = int64_t(p.numel / uint64_t(g.cols));
  g.gathered = p.g.gathered || p.x.gathered;
  g.seg = g.gathered && g.d >= 1 ? p.shape[g.d - 1] : total_rows;
  g.tr = p.tile_rows;
  g.tc = p.tile_cols;
  g.seg_tiles = (g.seg + g.tr - 1) / g.tr;
  g.col_tiles = (g.cols + g.tc - 1) / g.tc;
  g.tiles = total_rows / g.seg * g.seg_tiles * g.col_tiles;  // <= numel
  g.esize = DTypeSize(p.dtype);
  g.ops[0] = &p.g;
  g.ops[1] = &p.x;
  g.ops[2] = &p.out;
  for (int k = 0; k < 3; ++k) {
    g.cs[k] = g.ops[k]->strides[g.d];
    g.rs[k] = g.d >= 1 ? g.ops[k]->strides[g.d - 1] : 0;
  }
  g.gath[0] = p.g.gathered;
  g.gath[1] = p.x.gathered;
  return g;
}

// One thread's workspace, carved as SizeTile sized it. A packed tile uses
// its row pointers (what PackRows reads), the kernel's row offsets and the
// inputs' tiles; an unpacked tile needs none of it: its offsets are slices
// of the row table.
struct TileWorkspace {
  const void** ptr[2];  // g's and x's row pointers
  void** outp;          // out's row pointers
  int64_t* offs[3];     // the kernel's row offsets per operand
  char* tile[2];        // packed: the input's tile
  char* scratch;        // Plan::transpose_result: the tile's result in the inputs' order
};

TileWorkspace CarveWorkspace(const Plan& p, const RunsGrid& g, void* workspace, int thread) {
  TileWorkspace w;
  char* ws = static_cast<char*>(workspace) + size_t(thread) * p.thread_bytes;
  // Room for a tile's runs: its rows, or its columns where the result is transposed.
  const int64_t nruns = p.transpose_result ? std::max(g.tr, g.tc) : g.tr;
  w.ptr[0] = reinterpret_cast<const void**>(ws);
  w.ptr[1] = reinterpret_cast<const void**>(ws) + nruns;
  w.outp = reinterpret_cast<void**>(ws) + 2 * nruns;
  int64_t* const off0 = reinterpret_cast<int64_t*>(ws + Align64(3 * uint64_t(nruns) * sizeof(void*)));
  w.offs[0] = off0;
  w.offs[1] = off0 + nruns;
  w.offs[2] = off0 + 2 * nruns;
  char* next = reinterpret_cast<char*>(off0) + Align64(3 * uint64_t(nruns) * sizeof(int64_t));
  w.tile[0] = w.tile[1] = nullptr;
  for (int k = 0; k < 2; ++k)
    if (p.packed && !p.transpose_result) w.tile[k] = next, next += Align64(uint64_t(g.tr * g.tc) * g.esize);
  w.scratch = next;
  return w;
}

// Where tile t lies: its stretch, first row and column, rows and columns.
struct TilePos {
  int64_t o, r0, c0, nr, nc;
};

TilePos TileAt(const RunsGrid& g, int64_t t) {
  // Tile order: with a gathered input, down the columns first (its
  // contiguous side: the next tile continues the same cache lines and
  // pages), else along the rows first (out's contiguous side).
  int64_t ct, rt, o;  // column tile, row tile within the stretch, stretch
  if (g.gathered) {
    rt = t % g.seg_tiles;
    ct = t / g.seg_tiles % g.col_tiles;
    o = t / g.seg_tiles / g.col_tiles;
  } else {
    ct = t % g.col_tiles;
    rt = t / g.col_tiles % g.seg_tiles;
    o = t / g.col_tiles / g.seg_tiles;
  }
  const int64_t c0 = ct * g.tc, r0 = o * g.seg + rt * g.tr;
  return TilePos{o, r0, c0, std::min(g.tr, g.seg - rt * g.tr), std::min(g.tc, g.cols - c0)};
}

// A tile with its inputs in place (or x a splat: its rows are its
// elements): the kernel reads the row table's offsets directly, one call
// per stretch of the tile inside one block of the table; where the table's
// blocks are short, one call per tile on the tile's offsets written into the
// workspace (RowWalker::TakeAll).
void InPlaceTile(const Plan& p, KernelArgs& a, Runs& runs, RowWalker& rows, const char* const col0[3], int64_t nr,
                 int64_t* const offs[3]) {
  const Variant& v = *p.kernel.variant;
  const bool whole = p.rows.block < kWholeTileBelowBlockRows;
  for (int64_t done = 0; done < nr;) {
    int64_t outer[3];
    const int64_t* off[3];
    int64_t m = nr - done;  // TakeAll takes them all, Take a stretch
    if (whole) rows.TakeAll(m, outer, off, offs);
    else m = rows.Take(m, outer, off);
    runs.count = size_t(m);
    runs.g = col0[0] + outer[0];
    runs.x = col0[1] + outer[1];
    runs.out = const_cast<char*>(col0[2]) + outer[2];
    runs.g_off = off[0];
    runs.x_off = off[1];
    runs.out_off = off[2];
    v.fn(a);
    done += m;
  }
}

// A packed tile's gathered inputs copied into their tiles (their rows step
// by rs[k]); with more_tiles, the next tile down the columns (the next in
// this thread's order) is fetched while this one is copied.
void CopyGatheredInputs(const RunsGrid& g, const TileWorkspace& w, const RowWalker& rows, const char* const col0[3],
                        const TilePos& tp, bool more_tiles) {
  for (int k = 0; k < 2; ++k) {
    if (!g.gath[k]) continue;
    const char* first = col0[k] + rows.Offset(k);
    const int64_t seg_end = tp.o * g.seg + g.seg;
    if (tp.r0 + tp.nr < seg_end && more_tiles)
      PrefetchTile(first + tp.nr * g.rs[k] * int64_t(g.esize), g.rs[k], g.cs[k],
                   std::min(g.tr, seg_end - tp.r0 - tp.nr), tp.nc, g.esize);
    CopyTile(w.tile[k], first, g.rs[k], g.cs[k], tp.nr, tp.nc, g.esize);
  }
}

// The inputs' row pointers at their tiles: a gathered input's (packed by
// CopyTile), and every input packed here unless gathered already, or its
// rows in the tile adjacent already (a flat input's whole rows: read in
// place).
void PackInputs(const RunsGrid& g, const TileWorkspace& w, int64_t nr, int64_t nc, size_t row_bytes) {
  for (int k = 0; k < 2; ++k) {
    if (g.gath[k]) {
      for (int64_t r = 0; r < nr; ++r) w.ptr[k][r] = w.tile[k] + r * int64_t(row_bytes);
    }  // else in place, or the source rows PackRows reads below
  }
  for (int k = 0; k < 2; ++k) {
    if (g.gath[k] || (g.cs[k] != 0 && RowsAdjacent(w.ptr[k], nr, row_bytes))) continue;
    PackRows(w.tile[k], w.ptr[k], nr, nc, g.esize, g.cs[k] == 0);
    for (int64_t r = 0; r < nr; ++r) w.ptr[k][r] = w.tile[k] + r * int64_t(row_bytes);
  }
}

// The kernel call on a packed tile's rows: one contiguous call where out's
// rows are adjacent, else runs at each operand's rows as offsets from its
// first row.
void CallOnRows(const Plan& p, const TileWorkspace& w, KernelArgs& a, Runs& runs, int64_t nr, int64_t nc,
                size_t row_bytes) {
  if (RowsAdjacent(w.outp, nr, row_bytes)) {
    a = KernelArgs{w.ptr[0][0], w.ptr[1][0], w.outp[0], size_t(nr * nc), p.params, size_t(p.kernel.split.stage_tile)};
  } else {
    auto from_first = [nr](const void* const* rowp, int64_t* off) {
      const char* first = static_cast<const char*>(rowp[0]);
      for (int64_t r = 0; r < nr; ++r) off[r] = static_cast<const char*>(rowp[r]) - first;
    };
    from_first(w.ptr[0], w.offs[0]);
    from_first(w.ptr[1], w.offs[1]);
    from_first(w.outp, w.offs[2]);
    runs.count = size_t(nr);
    runs.g = static_cast<const char*>(w.ptr[0][0]);
    runs.x = static_cast<const char*>(w.ptr[1][0]);
    runs.out = static_cast<char*>(w.outp[0]);
    runs.g_off = w.offs[0];
    runs.x_off = w.offs[1];
    runs.out_off = w.offs[2];
  }
  p.kernel.variant->fn(a);
}

// A packed tile (Plan::packed): the gathered inputs copied, every row's
// address in one tight walk (no per-operand branches: they cost more than
// the walk), the other inputs packed where their rows are not adjacent,
// one kernel call.
void PackedTile(const Plan& p, const RunsGrid& g, const TileWorkspace& w, KernelArgs& a, Runs& runs, RowWalker& rows,
                const char* const col0[3], const TilePos& tp, bool more_tiles) {
  CopyGatheredInputs(g, w, rows, col0, tp, more_tiles);
  const size_t row_bytes = size_t(tp.nc) * g.esize;
  rows.Fill(tp.nr, col0, w.ptr[0], w.ptr[1], w.outp);
  PackInputs(g, w, tp.nr, tp.nc, row_bytes);
  CallOnRows(p, w, a, runs, tp.nr, tp.nc, row_bytes);
}

// PlanPath::kRuns: the rows (runs along dim ndim-1, counted over all outer
// dims) as tiles of up to tile_rows rows x tile_cols elements, one kernel
// call per tile, the tiles shared among the threads. With a gathered input a
// tile's rows stay within one stretch of dim ndim-2, so that they step by
// one stride there and the copy is a 2-D tile.
void ExecuteRuns(const Plan& p, void* workspace) {
  const RunsGrid g = MakeRunsGrid(p);
  // Bytes each thread streams (a splat input's are few): from beyond the L2
  // the kernels prefetch runs ahead when an input's runs jump about (within
  // it the prefetches only cost). Inputs walked in their memory order
  // (Plan::inputs_in_order) are left to the hardware: SELU f32 on the
  // strided view at 16M, one thread, 5.6 ms without, 8.6 with.
  const uint64_t streamed = p.numel * g.esize * uint64_t(1 + (g.cs[0] != 0) + (g.cs[1] != 0));
  const int threads = int(std::min<int64_t>(std::max(1, p.kernel.split.threads), g.tiles));
  ParallelFor(threads, g.tiles, [&](int64_t first, int64_t last, int thread) {
    const TileWorkspace w = CarveWorkspace(p, g, workspace, thread);
    Runs runs;
    runs.splat_x = !p.packed && g.cs[1] == 0;  // a splat g is packed (Plan::packed)
    runs.prefetch_runs = !p.inputs_in_order && streamed / uint64_t(threads) > L2CacheBytes() ? uint32_t(kPrefetchRuns) : 0;
    for (int64_t t = first; t < last; ++t) {
      const TilePos tp = TileAt(g, t);
      // Each operand's byte address at the tile's first row and column.
      RowWalker rows(p.rows, tp.r0);
      const char* col0[3];
      for (int k = 0; k < 3; ++k) col0[k] = g.ops[k]->base + tp.c0 * g.cs[k] * int64_t(g.esize);
      KernelArgs a{nullptr, nullptr, nullptr, size_t(tp.nc), p.params, size_t(p.kernel.split.stage_tile), &runs};
      if (!p.packed) InPlaceTile(p, a, runs, rows, col0, tp.nr, w.offs);
      else if (p.transpose_result)
        TransposedResultTile(p, a, runs, col0, rows, tp.nr, tp.nc, g.cs, g.rs, w.offs, w.scratch);
      else PackedTile(p, g, w, a, runs, rows, col0, tp, t + 1 < last);
    }
  });
}

}  // namespace

void Execute(const Plan& p, void* workspace) {
  if (p.numel == 0) return;
  const Variant& v = *p.kernel.variant;
  const Split& split = p.kernel.split;
  KernelArgs args{p.g.base, p.x.base, p.out.base, size_t(p.numel), p.params, size_t(split.stage_tile)};
  if (p.path == PlanPath::kFlat) {
    RunVariant(v, args, split);
    return;
  }
  if (p.path == PlanPath::kRuns) {
    ExecuteRuns(p, workspace);
    return;
  }
  const size_t esize = DTypeSize(p.dtype);
  const int64_t buffers = int64_t((p.numel + kBufferElems - 1) / kBufferElems);
  // Buffers of kBufferElems, not split.chunk: a buffer is what one gather fills.
  const int threads = int(std::min<int64_t>(std::max(1, split.threads), buffers));
  ParallelFor(threads, buffers, [&](int64_t first, int64_t last, int thread) {
    char* buf = static_cast<char*>(workspace) + size_t(thread) * 3 * kBufferElems * esize;
    for (int64_t b = first; b < last; ++b) {
      const uint64_t start = uint64_t(b) * kBufferElems;
      const uint64_t len = std::min<uint64_t>(kBufferElems, p.numel - start);
      KernelArgs a = args;
      a.n = size_t(len);
      char* gb = buf;
      char* xb = buf + kBufferElems * esize;
      char* ob = buf + 2 * kBufferElems * esize;
      if (p.g.flat) a.g = p.g.base + start * esize;
      else Gather(p, p.g, start, len, gb), a.g = gb;
      if (p.x.flat) a.x = p.x.base + start * esize;
      else Gather(p, p.x, start, len, xb), a.x = xb;
      a.out = p.out.flat ? p.out.base + start * esize : ob;
      v.fn(a);
      if (!p.out.flat) Scatter(p, ob, start, len);
    }
  });
}

}  // namespace actgrad::rt
