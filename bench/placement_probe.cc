// actgrad-placement-probe: how the time of one op depends on where its
// operands sit in memory (docs/performance.md, "Placements"). For each offset
// of the swept operand within its 4 KiB page (the others stay at offset 0),
// it times our shipping kernel (the dispatch's choice) and every peer compiled
// in, interleaved, on the very same placed buffers, and prints one line per
// offset: the median microseconds per call of each.
//
//   actgrad-placement-probe --op gelu_bwd --dtype f32 --n 65536 --vary out
//   actgrad-placement-probe --op gelu_bwd --dtype f32 --n 65536 --vary all --step 256
//   actgrad-placement-probe --op gelu_bwd --dtype f32 --n 65536 --vary stack --step 16 --span 256
//
// --vary g|x|out moves one operand; --vary all moves all three together (the
// operands' offsets to each other stay 0, their offset to the page changes);
// --vary stack moves the stack pointer of the timed loop (16-byte steps).
// Not a Google Benchmark program: a sweep of 64 placements x peers would be
// thousands of benchmarks; this prints the table the study needs.
#include <CLI/CLI.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "common/bench_common.h"
#include "peers/peer.h"
#include "tiling/dispatch.h"
#include "variants/variant.h"

namespace {

namespace ab = actgrad::bench;
using actgrad::DType;
using actgrad::Op;
using Clock = std::chrono::steady_clock;

// Median microseconds per call over `reps` samples of >= min_ms each.
double TimeUs(const std::function<void()>& fn, int reps, double min_ms) {
  fn();
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    int calls = 0;
    const auto t0 = Clock::now();
    double ms = 0;
    do {
      fn();
      ++calls;
      ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    } while (ms < min_ms);
    us.push_back(ms * 1e3 / calls);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

struct Subject {
  std::string name;
  actgrad::peers::Peer* peer = nullptr;  // null: ours
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"actgrad-placement-probe: time per call against the operands' offsets within a page"};
  std::string op_name = "gelu_bwd", dtype_name = "f32", vary = "out";
  size_t n = 65536;
  int threads = 1, reps = 5, step = 64, span = 4096;
  double min_ms = 10;
  app.add_option("--op", op_name, "op (selu_bwd, hardswish_bwd, gelu_bwd, softshrink_bwd, logit_grad)");
  app.add_option("--dtype", dtype_name, "f32, f16 or bf16");
  app.add_option("--n", n, "elements")->check(CLI::Range(size_t{1}, size_t{1} << 30));
  app.add_option("--threads", threads, "threads")->check(CLI::Range(1, 1024));
  app.add_option("--vary", vary, "operand moved: g, x, out, or all")
      ->check(CLI::IsMember({"g", "x", "out", "all", "stack"}));
  app.add_option("--step", step, "bytes between offsets (a multiple of 64; of 16 for --vary stack)")
      ->check(CLI::Range(16, 4096));
  app.add_option("--span", span, "offsets swept: 0, step, ... below span")->check(CLI::Range(16, 4096));
  app.add_option("--reps", reps, "samples per offset and subject (median)")->check(CLI::Range(1, 1000));
  app.add_option("--min-ms", min_ms, "milliseconds per sample")->check(CLI::Range(0.1, 10000.0));
  CLI11_PARSE(app, argc, argv);
  if (step % (vary == "stack" ? 16 : 64) != 0) {
    std::fprintf(stderr, "actgrad-placement-probe: --step must be a multiple of 64 (16 for --vary stack)\n");
    return 2;
  }
  Op op;
  DType dt;
  if (!actgrad::ParseOp(op_name, &op) || !actgrad::ParseDType(dtype_name, &dt)) {
    std::fprintf(stderr, "actgrad-placement-probe: unknown op '%s' or dtype '%s'\n", op_name.c_str(),
                 dtype_name.c_str());
    return 2;
  }
  omp_set_num_threads(threads);
  const actgrad::OpParams params = ab::DefaultParams(op);
  auto peers = actgrad::peers::AvailablePeers();
  std::vector<Subject> subjects{{"ours", nullptr}};
  for (auto& p : peers)
    if (p->Supports(op, dt, params)) subjects.push_back({p->Name(), p.get()});
  const actgrad::KernelChoice kc = actgrad::ChooseKernel(op, dt, params.gelu_approx, n, actgrad::tables::Layout::kContig);

  std::printf("# %s %s n=%zu threads=%d vary=%s; ours = %s; median us per call of %d x %.1f ms\n",
              op_name.c_str(), dtype_name.c_str(), n, threads, vary.c_str(), kc.variant->name.c_str(), reps, min_ms);
  std::printf("%-8s", "offset");
  for (const auto& s : subjects) std::printf(" %10s", s.name.c_str());
  std::printf("\n");
  for (int off = 0; off < span; off += step) {
    actgrad::inputs::Placement p;
    p.index = -1;
    if (vary == "g" || vary == "all") p.g = off;
    if (vary == "x" || vary == "all") p.x = off;
    if (vary == "out" || vary == "all") p.out = off;
    if (vary == "stack") p.stack = off;
    auto ops = ab::GetOperands(op, dt, n, p);
    std::printf("%-8d", off);
    for (const auto& s : subjects) {
      std::function<void()> fn;
      if (s.peer) {
        fn = s.peer->Prepare(op, dt, n, ops->g, ops->x, ops->out, params, threads);
      } else {
        actgrad::KernelArgs args{};
        args.g = ops->g;
        args.x = ops->x;
        args.out = ops->out;
        args.n = n;
        args.params = params;
        fn = [kc, args] { actgrad::RunVariant(*kc.variant, args, kc.split); };
      }
      double us = -1;
      if (fn) actgrad::inputs::RunAtStackOffset(p, [&] { us = TimeUs(fn, reps, min_ms); });
      std::printf(" %10.2f", us);
      std::fflush(stdout);
    }
    std::printf("\n");
    ab::CacheClear();
  }
  return 0;
}
