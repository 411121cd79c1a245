// actgrad-pool-probe: how the thread pool's two-thread time behaves on this
// machine, block by block (docs/tuning.md, "Results"). Not a Google
// Benchmark program: it reports the distribution over many short blocks,
// because on a shared machine the two-thread time drifts between states that a
// median over one run hides.
//
//   actgrad-pool-probe --variant hardswish_bwd.f32.none.exact.u1.avx3 --n 23168 --blocks 2000
//
// Each block (>= 1.5 ms of back-to-back calls) runs, in turn:
//   thr1     RunVariant on one thread
//   ranges   RunVariant on two threads (the pool: each thread its own range first)
//   shared   two threads claiming every piece from one shared counter (the
//            pool's former schedule, rebuilt on ParallelFor for comparison)
//   start    ns from publishing a job of two half-size pieces to the worker
//            starting its piece (the wake-up/hand-off latency)
// and prints one line per block, then percentiles of each column.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "variants/thread_pool.h"
#include "variants/variant.h"

namespace {

using actgrad::KernelArgs;
using actgrad::Variant;
using Clock = std::chrono::steady_clock;

double NowNs() { return std::chrono::duration<double, std::nano>(Clock::now().time_since_epoch()).count(); }

// Mean ns per call of `run` over >= 1.5 ms, after one warm-up call.
double TimeBlock(const std::function<void()>& run) {
  run();
  int calls = 0;
  const double start = NowNs();
  double now = start;
  do {
    run();
    ++calls;
    now = NowNs();
  } while (now - start < 1.5e6);
  return (now - start) / calls;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[size_t(p * double(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Block-by-block one- vs two-thread times of one variant through the library's pool"};
  std::string name = "hardswish_bwd.f32.none.exact.u1.avx3";
  uint64_t n = 23168;
  int blocks = 2000;
  bool quiet = false;
  app.add_option("--variant", name, "Variant name (the variant list)");
  app.add_option("--n", n, "Elements per call")->check(CLI::Range(uint64_t(4096), uint64_t(1) << 28));
  app.add_option("--blocks", blocks, "Blocks of >= 1.5 ms per column")->check(CLI::Range(1, 1000000));
  app.add_flag("--quiet", quiet, "Percentiles only, no line per block");
  CLI11_PARSE(app, argc, argv);

  const Variant* v = actgrad::FindVariant(name);
  if (!v || !v->supported) {
    std::fprintf(stderr, "actgrad-pool-probe: %s variant %s\n", v ? "this CPU cannot run" : "unknown", name.c_str());
    return 2;
  }
  const size_t esize = actgrad::DTypeSize(v->dtype);
  std::vector<char> g(n * esize), x(n * esize), out(n * esize);
  for (size_t i = 0; i < g.size(); ++i) g[i] = x[i] = char(0x3e);  // 0x3e3e...: a finite positive value in every dtype
  const KernelArgs args{g.data(), x.data(), out.data(), n, actgrad::OpParams{}, 0};
  auto piece = [&](size_t first, size_t count) {
    KernelArgs a = args;
    a.n = count;
    a.g = g.data() + first * esize;
    a.x = x.data() + first * esize;
    a.out = out.data() + first * esize;
    v->fn(a);
  };
  // RunVariant's default chunk for two threads.
  const size_t chunk = actgrad::DefaultChunk(n, 2);
  const int64_t pieces = int64_t((n + chunk - 1) / chunk);

  std::vector<double> cols[4];
  if (!quiet) std::printf("%6s %10s %10s %10s %10s\n", "block", "thr1_ns", "ranges_ns", "shared_ns", "start_ns");
  for (int b = 0; b < blocks; ++b) {
    const double t1 = TimeBlock([&] { actgrad::RunVariant(*v, args, actgrad::Split{1, 0, 0}); });
    const double t2 = TimeBlock([&] { actgrad::RunVariant(*v, args, actgrad::Split{2, 0, 0}); });
    const double ts = TimeBlock([&] {
      std::atomic<int64_t> next{0};
      actgrad::ParallelFor(2, pieces, [&](int64_t, int64_t, int) {
        const int64_t p = next.fetch_add(1);
        if (p < pieces) piece(size_t(p) * chunk, std::min<size_t>(chunk, n - size_t(p) * chunk));
      });
    });
    double start_sum = 0;
    int starts = 0;
    TimeBlock([&] {
      std::atomic<double> worker_start{0};
      const double t0 = NowNs();
      actgrad::ParallelFor(2, 2, [&](int64_t p, int64_t, int t) {
        if (t == 1) worker_start = NowNs() - t0;
        piece(size_t(p) * (n / 2), p == 0 ? n / 2 : n - n / 2);
      });
      if (worker_start > 0) start_sum += worker_start, ++starts;
    });
    const double ts_ns = starts ? start_sum / starts : 0;
    const double row[4] = {t1, t2, ts, ts_ns};
    for (int c = 0; c < 4; ++c) cols[c].push_back(row[c]);
    if (!quiet) std::printf("%6d %10.0f %10.0f %10.0f %10.0f\n", b, t1, t2, ts, ts_ns);
  }
  std::printf("# %s, n=%llu, %d blocks: p10 / p50 / p90 ns per call\n", name.c_str(), (unsigned long long)n, blocks);
  const char* names[4] = {"thr1", "ranges (2 thr)", "shared (2 thr)", "worker start"};
  for (int c = 0; c < 4; ++c)
    std::printf("# %-15s %10.0f %10.0f %10.0f\n", names[c], Percentile(cols[c], 0.1), Percentile(cols[c], 0.5),
                Percentile(cols[c], 0.9));
  std::vector<double> ratio(cols[0].size());
  for (size_t i = 0; i < ratio.size(); ++i) ratio[i] = cols[1][i] / cols[0][i];
  std::printf("# ranges/thr1     %10.2f %10.2f %10.2f\n", Percentile(ratio, 0.1), Percentile(ratio, 0.5),
              Percentile(ratio, 0.9));
  return 0;
}
