// peer/<peer>.<op>.<dtype>/n:N/thr:T: the peers on the same operands as our
// kernels (GetOperands) at the same placements, with the same counters.
#include <memory>
#include <vector>

#include "common/bench_common.h"
#include "peers/peer.h"
#include "peers/peers_internal.h"

namespace actgrad::bench {
namespace {

std::vector<std::shared_ptr<peers::Peer>>& Peers() {
  static std::vector<std::shared_ptr<peers::Peer>> p = [] {
    std::vector<std::shared_ptr<peers::Peer>> v;
    for (auto& q : peers::AvailablePeers()) v.push_back(std::move(q));
    return v;
  }();
  return p;
}

constexpr Op kOps[] = {Op::kSeluBwd, Op::kHardswishBwd, Op::kGeluBwd, Op::kSoftshrinkBwd, Op::kLogitGrad};
constexpr DType kFloatTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

}  // namespace

std::string PeerNames() { return peers::PeerVersions(); }

void RegisterPeerBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads) {
  for (const auto& peer : Peers()) {
    for (Op op : kOps) {
      for (DType dt : kFloatTypes) {
        const OpParams params = DefaultParams(op);
        if (!peer->Supports(op, dt, params)) continue;
        const std::string subject =
            peer->Name() + "." + std::string(OpName(op)) + "." + std::string(DTypeName(dt));
        for (size_t n : sizes) {
          for (int t : threads) {
            for (const auto& place : SweepPlacements()) {
              benchmark::RegisterBenchmark(
                  BenchName("peer", subject, n, t, place).c_str(),
                  [peer, op, dt, n, t, params, place](benchmark::State& st) {
                    inputs::RunAtStackOffset(place, [&] {
                    auto ops = GetOperands(op, dt, n, place);
                    auto fn = peer->Prepare(op, dt, n, ops->g, ops->x, ops->out, params, t);
                    if (!fn) {
                      st.SkipWithError("peer does not support this case");
                      return;
                    }
                    fn();  // warm-up: caches, thread team, lazy initialisation
                    const double s = TimedLoop(st, fn);
                    const double es = static_cast<double>(DTypeSize(dt));
                    SetCounters(st, s, 3.0 * es * static_cast<double>(n), static_cast<double>(n), n, t);
                    SetPlacement(st, place);
                    });
                  });
            }
          }
        }
      }
    }
  }
}

}  // namespace actgrad::bench
