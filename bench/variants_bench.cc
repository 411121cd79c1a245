// actgrad-bench-variants: every supported variant of the variant list x size
// x threads, plus the roofline loops and the peers on the same operands.
//   variant/<variant name>/n:N/thr:T/place:K
//   roof/<memcpy|stream_plain|stream_nt>/n:N/thr:T/place:K
//   peer/<peer>.<op>.<dtype>/n:N/thr:T/place:K
// (K: the operand placement, tools/inputs/placement.h)
// Own flags (before Google Benchmark's): see bench/common/bench_common.h.
#include <omp.h>

#include <set>
#include <string>

#include "common/bench_common.h"
#include "tiling/dispatch.h"
#include "variants/variant.h"

namespace ab = actgrad::bench;

namespace {

void RegisterVariantBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads) {
  const size_t chunk = ab::ChunkFlag();
  for (const actgrad::Variant& v : actgrad::Variants()) {
    if (!v.supported) continue;
    const actgrad::Variant* vp = &v;
    for (size_t n : sizes) {
      for (int t : threads) {
        const actgrad::Split split{t, int64_t(chunk), 0};
        for (const auto& place : ab::SweepPlacements()) {
          benchmark::RegisterBenchmark(
              ab::BenchName("variant", v.name, n, t, place).c_str(), [vp, n, split, place](benchmark::State& st) {
                actgrad::inputs::RunAtStackOffset(place, [&] {
                auto ops = ab::GetOperands(vp->op, vp->dtype, n, place);
                actgrad::KernelArgs args{};
                args.g = ops->g;
                args.x = ops->x;
                args.out = ops->out;
                args.n = n;
                args.params = ab::DefaultParams(vp->op);
                args.params.gelu_approx = vp->gelu_mode;
                actgrad::RunVariant(*vp, args, split);  // warm-up
                const double s = ab::TimedLoop(st, [&] { actgrad::RunVariant(*vp, args, split); });
                const double es = static_cast<double>(actgrad::DTypeSize(vp->dtype));
                ab::SetCounters(st, s, 3.0 * es * static_cast<double>(n), static_cast<double>(n), n, split.threads);
                ab::SetPlacement(st, place);
                });
              });
        }
      }
    }
  }
}

std::string VariantTargets() {
  std::set<std::string> targets;
  for (const actgrad::Variant& v : actgrad::Variants())
    if (v.supported) targets.insert(v.target);
  std::string s;
  for (const auto& t : targets) s += (s.empty() ? "" : ",") + t;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  ab::ParseOwnFlags(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const auto sizes = ab::SweepSizes();
  const auto threads = ab::SweepThreads();
  ab::RegisterRoofBenchmarks(sizes, threads);
  RegisterVariantBenchmarks(sizes, threads);
  ab::RegisterPeerBenchmarks(sizes, threads);

  ab::ContextInfo info;
  info.tiling_table = actgrad::ActiveTableName();
  info.variant_targets = VariantTargets();
  info.peers = ab::PeerNames();
  info.binary = "actgrad-bench-variants";
  ab::AddContext(info);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
