// actgrad-transpose-probe: what bounds a fully transposed view
// (docs/performance.md "Views"). On the benchmarks' transposed geometry (g and
// x are [n/cols_in, cols_in] buffers read as their transpose, out is
// contiguous) it times, on one thread, interleaved, median of --reps:
//
//   read contig        both inputs read once in memory order (a sum): the
//                      read bandwidth of the core
//   kernel contig      the dispatch's contiguous choice on the same buffers
//                      as if they were not transposed (the speed goals' 100 %)
//   copy transposed    the runtime's tile copies of both inputs (CopyTile,
//                      rs = 1), tile by tile down the columns, no kernel
//   copy+kernel trans  the same plus the variant on each packed tile,
//                      writing out's rows: the transposed path without the API
//   kernel+scatter     the variant on the inputs in their own order into a
//                      tile, transposed into out (Split::transpose_result)
//   <peer> copy 1 input  where the benchmarks' peers are built in: oneDNN's
//                      reorder and ATen's copy_ of g's transposed view into
//                      out, one operand only: what a vendor's transpose
//                      costs, beside the transposed path's two copies
//
//   actgrad-transpose-probe --op selu_bwd --dtype f32 --n 16777216 --tile 128x128
//
// The operands sit as in the benchmarks' placement 0 (inputs::PlacedArena).
// Not Google Benchmark: four loops compared in one process, one table.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <vector>

#include "peers/peer.h"
#include "tiling/dispatch.h"
#include "tools/inputs/placement.h"
#include "variants/tile_copy.h"
#include "variants/variant.h"

namespace {

using namespace actgrad;
using Clock = std::chrono::steady_clock;

// 0.5 in the dtype: finite for every op (LogitGrad's x in (0, 1)).
void FillHalf(char* p, size_t n, DType dt) {
  if (dt == DType::kF32) {
    const float v = 0.5f;
    for (size_t i = 0; i < n; ++i) std::memcpy(p + 4 * i, &v, 4);
  } else {
    const uint16_t v = dt == DType::kF16 ? 0x3800 : 0x3F00;
    for (size_t i = 0; i < n; ++i) std::memcpy(p + 2 * i, &v, 2);
  }
}

double MillisOnce(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

struct Options {
  std::string op_name = "selu_bwd", dtype_name = "f32", tile = "128x128";
  uint64_t n = uint64_t(1) << 24;
  int64_t cols_in = 1024;
  int reps = 7;
};

void AddOptions(CLI::App& app, Options& o) {
  app.add_option("--op", o.op_name, "op (selu_bwd, hardswish_bwd, gelu_bwd, softshrink_bwd, logit_grad)");
  // Float dtypes only: FillHalf and the byte counts assume them.
  app.add_option("--dtype", o.dtype_name, "f32, f16 or bf16")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  app.add_option("--n", o.n, "elements per operand")->check(CLI::Range(uint64_t(1024), uint64_t(1) << 30));
  app.add_option("--cols", o.cols_in, "the inputs' row length (the view is their transpose)")
      ->check(CLI::Range(int64_t(8), int64_t(1) << 20));
  app.add_option("--tile", o.tile, "out rows x out columns per tile, e.g. 128x128");
  app.add_option("--reps", o.reps, "rounds (the four loops interleaved); the median is printed")
      ->check(CLI::Range(1, 1000));
}

// The view's geometry: out is [rows, cols] (rows = the inputs' row length,
// cols = their row count), tiles of tr x tc, elements of es bytes.
struct Geometry {
  Op op;
  DType dt;
  size_t es;
  uint64_t n;
  int64_t cols_in, rows, cols, tr, tc;
};

// The geometry of the options, or the exit code after a message on stderr.
int ParseGeometry(const Options& o, Geometry* geo) {
  if (!ParseOp(o.op_name, &geo->op) || !ParseDType(o.dtype_name, &geo->dt)) {
    std::fprintf(stderr, "actgrad-transpose-probe: unknown --op or --dtype\n");
    return 2;
  }
  int64_t tr = 0, tc = 0;
  int used = 0;
  if (std::sscanf(o.tile.c_str(), "%ldx%ld%n", &tr, &tc, &used) != 2 || size_t(used) != o.tile.size() || tr < 1 ||
      tc < 1 || tr > 65536 || tc > 65536) {
    std::fprintf(stderr, "actgrad-transpose-probe: --tile wants ROWSxCOLS, e.g. 128x128\n");
    return 2;
  }
  if (o.n % uint64_t(o.cols_in) != 0) {
    std::fprintf(stderr, "actgrad-transpose-probe: --n must be a multiple of --cols\n");
    return 2;
  }
  geo->es = DTypeSize(geo->dt);
  geo->n = o.n;
  geo->cols_in = o.cols_in;
  geo->rows = o.cols_in;
  geo->cols = int64_t(o.n) / o.cols_in;
  geo->tr = std::min(tr, geo->rows);
  geo->tc = std::min(tc, geo->cols);
  return 0;
}

// The operands, the tiles and the library's loops the probe times (the
// peers' copies aside).
struct Probe {
  Geometry geo;
  char* g;
  char* x;
  char* out;
  OpParams params;
  KernelChoice kc;
  const Variant* v;
  std::vector<char> tg, tx;
  std::vector<const void*> pg, px;
  std::vector<void*> po;
  std::vector<int64_t> og, ox, oo;  // RunRows' offsets
  const Variant* plain;             // Scattered's variant
  int64_t ld;                       // Scattered's scratch row length
  std::vector<char> scratch;
  volatile uint64_t sink = 0;

  Probe(const Geometry& geometry, const inputs::PlacedArena& arena, const OpParams& op_params,
        const KernelChoice& choice)
      : geo(geometry), g(static_cast<char*>(arena.g())), x(static_cast<char*>(arena.x())),
        out(static_cast<char*>(arena.out())), params(op_params), kc(choice), v(choice.variant) {
    const int64_t tr = geo.tr, tc = geo.tc;
    const size_t es = geo.es;
    tg.resize(size_t(tr * tc) * es + 64);
    tx.resize(size_t(tr * tc) * es + 64);
    pg.resize(static_cast<size_t>(std::max(tr, tc)));
    px.resize(static_cast<size_t>(std::max(tr, tc)));
    po.resize(static_cast<size_t>(std::max(tr, tc)));
    og.resize(pg.size());
    ox.resize(px.size());
    oo.resize(po.size());
    // Scattered as the runtime does it (Plan::transpose_result): the
    // variant's plain twin, scratch rows a cache line longer than the tile's nr.
    plain = PlainTwin(*v);
    if (!plain) plain = v;
    ld = tr + 64 / int64_t(es);
    scratch.resize(size_t(ld * tc) * es + 64);
  }

  void ReadContig() {
    const uint64_t* a = reinterpret_cast<const uint64_t*>(g);
    const uint64_t* b = reinterpret_cast<const uint64_t*>(x);
    uint64_t s = 0;
    for (size_t i = 0; i < geo.n * geo.es / 8; ++i) s += a[i] ^ b[i];
    sink = sink + s;
  }

  void KernelContig() {
    KernelArgs a{g, x, out, size_t(geo.n), params, size_t(kc.split.stage_tile)};
    v->fn(a);
  }

  // The variant on `count` runs of n elements at pg/px/po[0..count), as
  // offsets from each operand's first run (as the runtime's packed tiles).
  void RunRows(int64_t count, int64_t n_run, const Variant& with) {
    for (size_t r = 0; r < size_t(count); ++r) {
      og[r] = static_cast<const char*>(pg[r]) - static_cast<const char*>(pg[0]);
      ox[r] = static_cast<const char*>(px[r]) - static_cast<const char*>(px[0]);
      oo[r] = static_cast<char*>(po[r]) - static_cast<char*>(po[0]);
    }
    Runs runs;
    runs.count = size_t(count);
    runs.g = static_cast<const char*>(pg[0]);
    runs.x = static_cast<const char*>(px[0]);
    runs.out = static_cast<char*>(po[0]);
    runs.g_off = og.data();
    runs.x_off = ox.data();
    runs.out_off = oo.data();
    runs.prefetch_runs = 0;
    KernelArgs a{nullptr, nullptr, nullptr, size_t(n_run), params, size_t(kc.split.stage_tile), &runs};
    with.fn(a);
  }

  // Calls tile(c0, nc, r0, nr, at) for every tile, down the columns first as
  // the runtime walks a gathered view; `at` is the byte offset of input
  // element (row c0, column r0).
  template <class Tile>
  void ForEachTile(Tile tile) const {
    const int64_t rows = geo.rows, cols = geo.cols, tr = geo.tr, tc = geo.tc;
    for (int64_t c0 = 0; c0 < cols; c0 += tc) {
      const int64_t nc = std::min(tc, cols - c0);
      for (int64_t r0 = 0; r0 < rows; r0 += tr)
        tile(c0, nc, r0, std::min(tr, rows - r0), (c0 * geo.cols_in + r0) * int64_t(geo.es));
    }
  }

  void Transposed(bool kernel) {
    const int64_t cols = geo.cols, cols_in = geo.cols_in;
    const size_t es = geo.es;
    ForEachTile([&](int64_t c0, int64_t nc, int64_t r0, int64_t nr, int64_t at) {
      CopyTile(tg.data(), g + at, 1, cols_in, nr, nc, es);
      CopyTile(tx.data(), x + at, 1, cols_in, nr, nc, es);
      if (!kernel) return;
      for (int64_t r = 0; r < nr; ++r) {
        pg[size_t(r)] = tg.data() + r * nc * int64_t(es);
        px[size_t(r)] = tx.data() + r * nc * int64_t(es);
        po[size_t(r)] = out + ((r0 + r) * cols + c0) * int64_t(es);
      }
      RunRows(nr, nc, *v);
    });
  }

  // The other way round: the kernel on the inputs in their own order (each
  // tile's nc input rows of nr elements, one call when they are whole rows)
  // into one tile, which CopyTileTo transposes into out's rows.
  void Scattered() {
    const int64_t cols = geo.cols, cols_in = geo.cols_in;
    const size_t es = geo.es;
    ForEachTile([&](int64_t c0, int64_t nc, int64_t r0, int64_t nr, int64_t at) {
      for (int64_t j = 0; j < nc; ++j) {
        pg[size_t(j)] = g + at + j * cols_in * int64_t(es);
        px[size_t(j)] = x + at + j * cols_in * int64_t(es);
        po[size_t(j)] = scratch.data() + j * ld * int64_t(es);
      }
      RunRows(nc, nr, *plain);
      CopyTileTo(out + (r0 * cols + c0) * int64_t(es), cols, scratch.data(), 1, ld, nr, nc, es);
    });
  }
};

// The loops timed, in the table's order, with the bytes each moves.
struct Loops {
  std::vector<std::string> names;
  std::vector<std::function<void()>> fns;
  std::vector<double> bytes;
  size_t first_peer = 0;
  std::vector<std::unique_ptr<peers::Peer>> peer_list;  // what the peers' loops use
};

// The library's five loops, then each built-in peer's copy of g's view
// (out's dims, g's strides) into out.
void AddLoops(Probe& p, Loops& l) {
  const Geometry& geo = p.geo;
  const double in_bytes = 2.0 * double(geo.n * geo.es), all_bytes = 3.0 * double(geo.n * geo.es);
  l.names = {"read contig", "kernel contig", "copy transposed", "copy+kernel trans", "kernel+scatter"};
  l.fns = {[&p] { p.ReadContig(); }, [&p] { p.KernelContig(); }, [&p] { p.Transposed(false); },
           [&p] { p.Transposed(true); }, [&p] { p.Scattered(); }};
  l.bytes = {in_bytes, all_bytes, in_bytes, all_bytes, all_bytes};
  const peers::StridedView g_view{{geo.rows, geo.cols}, {1, geo.cols_in}};
  l.peer_list = peers::AvailablePeers();
  l.first_peer = l.fns.size();
  for (const auto& peer : l.peer_list)
    if (auto f = peer->PrepareViewCopy(geo.dt, g_view, p.g, p.out, 1)) {
      l.names.push_back(peer->Name() + " copy 1 input");
      l.fns.push_back(std::move(f));
      l.bytes.push_back(2.0 * double(geo.n * geo.es));  // one operand read, one written
    }
}

// Each loop's times in ms over `reps` interleaved rounds, after a warm-up
// round (pages, factor tables).
std::vector<std::vector<double>> TimeLoops(const Loops& l, int reps) {
  const size_t kLoops = l.fns.size();
  for (const auto& f : l.fns) f();
  std::vector<std::vector<double>> ms(kLoops);
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < kLoops; ++k) ms[k].push_back(MillisOnce(l.fns[k]));
  return ms;
}

// The table: the set-up, each loop's median (ms[k] sorted here) and the ratios.
void PrintTable(const Options& o, const Probe& p, const Loops& l, std::vector<std::vector<double>>& ms) {
  const Geometry& geo = p.geo;
  const size_t kLoops = l.fns.size();
  std::printf("op %s dtype %s n %llu view [%lld, %lld] of [%lld, %lld] tile %lldx%lld variant %s, 1 thread, "
              "median of %d\n",
              o.op_name.c_str(), o.dtype_name.c_str(), static_cast<unsigned long long>(geo.n),
              static_cast<long long>(geo.rows), static_cast<long long>(geo.cols), static_cast<long long>(geo.cols),
              static_cast<long long>(geo.rows), static_cast<long long>(geo.tr), static_cast<long long>(geo.tc),
              p.v->name.c_str(), o.reps);
  std::vector<double> med(kLoops);
  for (size_t k = 0; k < kLoops; ++k) {
    std::sort(ms[k].begin(), ms[k].end());
    med[k] = ms[k][ms[k].size() / 2];
  }
  for (size_t k = 0; k < kLoops; ++k)
    std::printf("%-21s %9.3f ms  %6.1f GB/s  (min %.3f, max %.3f)\n", l.names[k].c_str(), med[k],
                l.bytes[k] / med[k] / 1e6, ms[k].front(), ms[k].back());
  std::printf("copy transposed / read contig %.2fx; copy+kernel trans / kernel contig %.2fx; "
              "kernel+scatter / kernel contig %.2fx\n",
              med[2] / med[0], med[3] / med[1], med[4] / med[1]);
  for (size_t k = l.first_peer; k < kLoops; ++k)
    std::printf("%s / kernel contig %.2fx\n", l.names[k].c_str(), med[k] / med[1]);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actgrad-transpose-probe: the transposed view's copies against contiguous reads"};
  Options o;
  AddOptions(app, o);
  CLI11_PARSE(app, argc, argv);
  Geometry geo;
  if (const int rc = ParseGeometry(o, &geo); rc != 0) return rc;
  inputs::PlacedArena arena;
  try {
    arena = inputs::PlacedArena(geo.n * geo.es, geo.n * geo.es, inputs::PlacementAt(0));
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "actgrad-transpose-probe: cannot allocate 3 x %llu bytes (--n)\n",
                 static_cast<unsigned long long>(geo.n * geo.es));
    return 1;
  }
  FillHalf(static_cast<char*>(arena.g()), geo.n, geo.dt);
  FillHalf(static_cast<char*>(arena.x()), geo.n, geo.dt);
  OpParams params;
  const KernelChoice kc = ChooseKernel(geo.op, geo.dt, params.gelu_approx, geo.n, tables::Layout::kContig);
  if (!kc.variant) {
    std::fprintf(stderr, "actgrad-transpose-probe: no runnable variant\n");
    return 1;
  }
  PrepareVariant(*kc.variant, params);
  Probe probe(geo, arena, params, kc);
  Loops loops;
  AddLoops(probe, loops);
  std::vector<std::vector<double>> ms = TimeLoops(loops, o.reps);
  PrintTable(o, probe, loops, ms);
  return 0;
}
