// actgrad-bench-variants: every supported variant of the variant list x size
// x threads, plus the roofline loops and the peers on the same operands.
//   variant/<variant name>/n:N/thr:T/place:K
//   roof/<memcpy|stream_plain|stream_nt>/n:N/thr:T/place:K
//   peer/<peer>.<op>.<dtype>/n:N/thr:T/place:K
// (K: the operand placement, tools/inputs/placement.h)
// Own flags (before Google Benchmark's): see bench/common/bench_common.h;
// --actgrad_variant_table prints the variant list instead (VariantTable).
#include <omp.h>

#include <cstdio>
#include <cstring>
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
          ab::RegisterWallClock(ab::BenchName("variant", v.name, n, t, place), [vp, n, split, place](benchmark::State& st) {
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

// One JSON object a line per variant of the list, in its order, with every
// field but the kernel: what scripts/bench selects the variant sweep by (the
// fields, not the names), and a before/after view of the list.
void PrintVariantTable() {
  for (const actgrad::Variant& v : actgrad::Variants()) {
    std::printf(
        "{\"name\": \"%s\", \"op\": \"%s\", \"dtype\": \"%s\", \"upcast\": \"%s\", \"approx\": \"%s\", "
        "\"unroll\": %d, \"target\": \"%s\", \"nt_stores\": %s, \"gelu_mode\": \"%s\", "
        "\"claimed_max_err\": %.17g, \"factor_table\": %s, \"supported\": %s}\n",
        v.name.c_str(), std::string(actgrad::OpName(v.op)).c_str(), std::string(actgrad::DTypeName(v.dtype)).c_str(),
        v.upcast.c_str(), v.approx.c_str(), v.unroll, v.target.c_str(), v.nt_stores ? "true" : "false",
        v.gelu_mode == actgrad::GeluApprox::kTanh ? "tanh" : "none", v.claimed_max_err,
        v.factor_table ? "true" : "false", v.supported ? "true" : "false");
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--actgrad_variant_table") == 0) return PrintVariantTable(), 0;
  ab::ParseOwnFlags(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  const bool only = ab::CheckPeersOnlyFlag();
  if (!ab::CheckPeers({}, only ? stdout : stderr, /*every_case=*/only)) {
    std::fprintf(stderr, "actgrad-bench-variants: the peer check failed (the lines above say where); nothing timed\n");
    return 1;
  }
  if (only) return 0;

  const auto sizes = ab::SweepSizes();
  const auto threads = ab::SweepThreads();
  ab::RegisterRoofBenchmarks(sizes, threads);
  RegisterVariantBenchmarks(sizes, threads);
  ab::RegisterPeerBenchmarks(sizes, threads);

  ab::ContextInfo info;
  info.tiling_table = actgrad::ActiveTableName();
  info.tiling_table_freshness = actgrad::ActiveTableFreshnessSummary();
  info.variant_targets = VariantTargets();
  info.peers = ab::PeerNames();
  info.binary = "actgrad-bench-variants";
  ab::AddContext(info);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
