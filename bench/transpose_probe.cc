// actgrad-transpose-probe: what bounds a fully transposed view (issue 21,
// docs/performance.md "Views"). On the benchmarks' transposed geometry (g and
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actgrad-transpose-probe: the transposed view's copies against contiguous reads"};
  std::string op_name = "selu_bwd", dtype_name = "f32", tile = "128x128";
  uint64_t n = uint64_t(1) << 24;
  int64_t cols_in = 1024;
  int reps = 7;
  app.add_option("--op", op_name, "op (selu_bwd, hardswish_bwd, gelu_bwd, softshrink_bwd, logit_grad)");
  // Float dtypes only: FillHalf and the byte counts assume them.
  app.add_option("--dtype", dtype_name, "f32, f16 or bf16")->check(CLI::IsMember({"f32", "f16", "bf16"}));
  app.add_option("--n", n, "elements per operand")->check(CLI::Range(uint64_t(1024), uint64_t(1) << 30));
  app.add_option("--cols", cols_in, "the inputs' row length (the view is their transpose)")
      ->check(CLI::Range(int64_t(8), int64_t(1) << 20));
  app.add_option("--tile", tile, "out rows x out columns per tile, e.g. 128x128");
  app.add_option("--reps", reps, "rounds (the four loops interleaved); the median is printed")
      ->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);

  Op op;
  DType dt;
  if (!ParseOp(op_name, &op) || !ParseDType(dtype_name, &dt)) {
    std::fprintf(stderr, "actgrad-transpose-probe: unknown --op or --dtype\n");
    return 2;
  }
  int64_t tr = 0, tc = 0;
  int used = 0;
  if (std::sscanf(tile.c_str(), "%ldx%ld%n", &tr, &tc, &used) != 2 || size_t(used) != tile.size() || tr < 1 ||
      tc < 1 || tr > 65536 || tc > 65536) {
    std::fprintf(stderr, "actgrad-transpose-probe: --tile wants ROWSxCOLS, e.g. 128x128\n");
    return 2;
  }
  if (n % uint64_t(cols_in) != 0) {
    std::fprintf(stderr, "actgrad-transpose-probe: --n must be a multiple of --cols\n");
    return 2;
  }
  const size_t es = DTypeSize(dt);
  // Out is [rows, cols]: rows = the inputs' row length, cols = their row count.
  const int64_t rows = cols_in, cols = int64_t(n) / cols_in;
  tr = std::min(tr, rows);
  tc = std::min(tc, cols);
  inputs::PlacedArena arena;
  try {
    arena = inputs::PlacedArena(n * es, n * es, inputs::PlacementAt(0));
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "actgrad-transpose-probe: cannot allocate 3 x %llu bytes (--n)\n",
                 static_cast<unsigned long long>(n * es));
    return 1;
  }
  char* const g = static_cast<char*>(arena.g());
  char* const x = static_cast<char*>(arena.x());
  char* const out = static_cast<char*>(arena.out());
  FillHalf(g, n, dt);
  FillHalf(x, n, dt);
  OpParams params;
  const KernelChoice kc = ChooseKernel(op, dt, params.gelu_approx, n, tables::Layout::kContig);
  if (!kc.variant) {
    std::fprintf(stderr, "actgrad-transpose-probe: no runnable variant\n");
    return 1;
  }
  const Variant& v = *kc.variant;
  PrepareVariant(v, params);
  std::vector<char> tg(size_t(tr * tc) * es + 64), tx(size_t(tr * tc) * es + 64);
  std::vector<const void*> pg(static_cast<size_t>(std::max(tr, tc))), px(static_cast<size_t>(std::max(tr, tc)));
  std::vector<void*> po(static_cast<size_t>(std::max(tr, tc)));

  volatile uint64_t sink = 0;
  auto read_contig = [&] {
    const uint64_t* a = reinterpret_cast<const uint64_t*>(g);
    const uint64_t* b = reinterpret_cast<const uint64_t*>(x);
    uint64_t s = 0;
    for (size_t i = 0; i < n * es / 8; ++i) s += a[i] ^ b[i];
    sink = sink + s;
  };
  auto kernel_contig = [&] {
    KernelArgs a{g, x, out, size_t(n), params, size_t(kc.split.stage_tile)};
    v.fn(a);
  };
  // The variant on `count` runs of n elements at pg/px/po[0..count), as
  // offsets from each operand's first run (as the runtime's packed tiles).
  std::vector<int64_t> og(pg.size()), ox(px.size()), oo(po.size());
  auto run_rows = [&](int64_t count, int64_t n_run, const Variant& with) {
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
  };
  // Tiles down the columns first, as the runtime walks a gathered view.
  auto transposed = [&](bool kernel) {
    for (int64_t c0 = 0; c0 < cols; c0 += tc) {
      const int64_t nc = std::min(tc, cols - c0);
      for (int64_t r0 = 0; r0 < rows; r0 += tr) {
        const int64_t nr = std::min(tr, rows - r0);
        const int64_t at = (c0 * cols_in + r0) * int64_t(es);  // input element (row c0, column r0)
        CopyTile(tg.data(), g + at, 1, cols_in, nr, nc, es);
        CopyTile(tx.data(), x + at, 1, cols_in, nr, nc, es);
        if (!kernel) continue;
        for (int64_t r = 0; r < nr; ++r) {
          pg[size_t(r)] = tg.data() + r * nc * int64_t(es);
          px[size_t(r)] = tx.data() + r * nc * int64_t(es);
          po[size_t(r)] = out + ((r0 + r) * cols + c0) * int64_t(es);
        }
        run_rows(nr, nc, v);
      }
    }
  };
  // The other way round: the kernel on the inputs in their own order (each
  // tile's nc input rows of nr elements, one call when they are whole rows)
  // into one tile, which CopyTileTo transposes into out's rows.
  // As the runtime does it (Plan::transpose_result): the variant's plain
  // twin, scratch rows a cache line longer than the tile's nr.
  const Variant* plain = PlainTwin(v);
  if (!plain) plain = &v;
  const int64_t ld = tr + 64 / int64_t(es);
  std::vector<char> scratch(size_t(ld * tc) * es + 64);
  auto scattered = [&] {
    for (int64_t c0 = 0; c0 < cols; c0 += tc) {
      const int64_t nc = std::min(tc, cols - c0);
      for (int64_t r0 = 0; r0 < rows; r0 += tr) {
        const int64_t nr = std::min(tr, rows - r0);
        const int64_t at = (c0 * cols_in + r0) * int64_t(es);
        for (int64_t j = 0; j < nc; ++j) {
          pg[size_t(j)] = g + at + j * cols_in * int64_t(es);
          px[size_t(j)] = x + at + j * cols_in * int64_t(es);
          po[size_t(j)] = scratch.data() + j * ld * int64_t(es);
        }
        run_rows(nc, nr, *plain);
        CopyTileTo(out + (r0 * cols + c0) * int64_t(es), cols, scratch.data(), 1, ld, nr, nc, es);
      }
    }
  };
  const double in_bytes = 2.0 * double(n * es), all_bytes = 3.0 * double(n * es);
  std::vector<std::string> names = {"read contig", "kernel contig", "copy transposed", "copy+kernel trans",
                                    "kernel+scatter"};
  std::vector<std::function<void()>> loops = {read_contig, kernel_contig, [&] { transposed(false); },
                                              [&] { transposed(true); }, scattered};
  std::vector<double> bytes = {in_bytes, all_bytes, in_bytes, all_bytes, all_bytes};
  // The peers' copies of g's view (out's dims, g's strides) into out.
  const peers::StridedView g_view{{rows, cols}, {1, cols_in}};
  std::vector<std::unique_ptr<peers::Peer>> peer_list = peers::AvailablePeers();
  const size_t first_peer = loops.size();
  for (const auto& peer : peer_list)
    if (auto f = peer->PrepareViewCopy(dt, g_view, g, out, 1)) {
      names.push_back(peer->Name() + " copy 1 input");
      loops.push_back(std::move(f));
      bytes.push_back(2.0 * double(n * es));  // one operand read, one written
    }
  const size_t kLoops = loops.size();
  for (const auto& f : loops) f();  // warm-up: pages, factor tables
  std::vector<std::vector<double>> ms(kLoops);
  for (int r = 0; r < reps; ++r)
    for (size_t k = 0; k < kLoops; ++k) ms[k].push_back(MillisOnce(loops[k]));
  std::printf("op %s dtype %s n %llu view [%lld, %lld] of [%lld, %lld] tile %lldx%lld variant %s, 1 thread, "
              "median of %d\n",
              op_name.c_str(), dtype_name.c_str(), static_cast<unsigned long long>(n), static_cast<long long>(rows),
              static_cast<long long>(cols), static_cast<long long>(cols), static_cast<long long>(rows),
              static_cast<long long>(tr), static_cast<long long>(tc), v.name.c_str(), reps);
  std::vector<double> med(kLoops);
  for (size_t k = 0; k < kLoops; ++k) {
    std::sort(ms[k].begin(), ms[k].end());
    med[k] = ms[k][ms[k].size() / 2];
  }
  for (size_t k = 0; k < kLoops; ++k)
    std::printf("%-21s %9.3f ms  %6.1f GB/s  (min %.3f, max %.3f)\n", names[k].c_str(), med[k],
                bytes[k] / med[k] / 1e6, ms[k].front(), ms[k].back());
  std::printf("copy transposed / read contig %.2fx; copy+kernel trans / kernel contig %.2fx; "
              "kernel+scatter / kernel contig %.2fx\n",
              med[2] / med[0], med[3] / med[1], med[4] / med[1]);
  for (size_t k = first_peer; k < kLoops; ++k)
    std::printf("%s / kernel contig %.2fx\n", names[k].c_str(), med[k] / med[1]);
  return 0;
}
