// peer/<peer>.<op>.<dtype>[.<layout>]/n:N/thr:T: the peers on the same
// operands as our kernels (GetOperands) at the same placements, on the same
// views (layouts.h), with the same counters.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "actgrad/half.h"
#include "common/bench_common.h"
#include "peers/peer.h"
#include "peers/peers_internal.h"
#include "reference/accuracy_rule.h"
#include "reference/reference.h"

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

constexpr DType kFloatTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

peers::OperandViews PeerViews(Layout layout, size_t n) {
  const LayoutViews v = ViewsOf(layout, n);
  return {{v.g.dims, v.g.strides}, {v.x.dims, v.x.strides}, {v.out.dims, v.out.strides}};
}

// Element i of `base` (a float dtype) as a double.
double ElementAt(DType dt, const void* base, int64_t i) {
  const char* p = static_cast<const char*>(base);
  float f = 0;
  uint16_t h = 0;
  switch (dt) {
    case DType::kF32: std::memcpy(&f, p + 4 * i, 4); return f;
    case DType::kBF16: std::memcpy(&h, p + 2 * i, 2); return BF16ToFloat(h);
    case DType::kF16: std::memcpy(&h, p + 2 * i, 2); return HalfToFloat(h);
    default: return NAN;
  }
}

// Storage offset (elements) in `operand` of the element at flat index i of
// the out view (row-major over out's dims; an operand dimension of extent 1
// against a longer one of out is broadcast).
int64_t OffsetOf(const View& out, const View& operand, size_t i) {
  int64_t off = 0;
  for (size_t d = out.dims.size(); d-- > 0;) {
    const size_t extent = static_cast<size_t>(out.dims[d]);
    if (operand.dims[d] == out.dims[d]) off += static_cast<int64_t>(i % extent) * operand.strides[d];
    i /= extent;
  }
  return off;
}


// Inputs where the op has a kink and implementations pick either one-sided
// derivative (PyTorch's Hardswish takes 0 at x = -3 and g at x = 3, Ascend
// the middle branch): a convention, not another formula.
bool AtBranchPoint(const OpForm& form, double x) {
  const OpParams p = ParamsOf(form);
  switch (form.op) {
    case Op::kHardswishBwd: return std::fabs(x) == 3.0;
    case Op::kSoftshrinkBwd: return std::fabs(x) == double(p.lambd);
    case Op::kLogitGrad: {
      const double eps = p.eps < 0 ? 0.0 : double(p.eps);
      return x == 0.0 || x == 1.0 || x == eps || x == double(1.0f - float(eps));
    }
    default: return false;
  }
}

// The out view against the double reference on the g and x each element was
// computed from (the views' offsets). Branch points are left out where
// `skip_branch_points` (the peers).
AccuracyReport CheckResult(const OpForm& form, DType dt, Layout layout, size_t n, const Operands& ops,
                           bool skip_branch_points) {
  const LayoutViews v = ViewsOf(layout, n);
  const OpParams p = ParamsOf(form);
  AccuracyChecker checker(dt);
  for (size_t i = 0; i < n; ++i) {
    const double g = ElementAt(dt, ops.g, OffsetOf(v.out, v.g, i));
    const double x = ElementAt(dt, ops.x, OffsetOf(v.out, v.x, i));
    if (skip_branch_points && AtBranchPoint(form, x)) continue;
    checker.Add(ElementAt(dt, ops.out, OffsetOf(v.out, v.out, i)), ref::Reference(form.op, g, x, p), g, x);
  }
  return checker.Report();
}

// The verdict of one case: "" when it passes. Ours must meet the whole rule;
// a peer the hard bound and the specials (its own rounding is its business:
// PyTorch's bf16 LogitGrad rounds between steps and has 88 % of its elements
// under the threshold), which any other formula or parameter breaks.
std::string Verdict(const AccuracyReport& r, bool whole_rule) {
  if (whole_rule) return r.pass ? "" : (r.first_failure.empty() ? "fails the accuracy rule" : r.first_failure);
  if (r.special_mismatch == 0 && r.over_hard_bound == 0) return "";
  return r.first_failure.empty() ? "over the hard bound" : r.first_failure;
}

// The smallest size of the sweep's kind that this layout takes.
size_t CheckSize(Layout layout) {
  size_t n = 4096;
  while (!LayoutFits(layout, n)) n *= 2;
  return n;
}

}  // namespace

std::string CheckCase(const std::string& who, Held held, const ComputeFn& compute, const OpForm& form, DType dt,
                      Layout layout, std::FILE* out, bool every_case) {
  const size_t n = CheckSize(layout);
  auto ops = GetOperands(form.op, dt, n, inputs::PlacementAt(0));
  std::memset(ops->out, 0x7B, n * DTypeSize(dt));  // ~1.3e36 (f32, bf16), 61280 (f16): no result of these ops
  std::string why;
  const std::string name = who + " " + FormToken(form) + " " + std::string(DTypeName(dt)) + " " + LayoutName(layout);
  if (!compute(*ops, n, &why)) {
    std::fprintf(out, "%-38s could not run: %s\n", name.c_str(), why.c_str());
    return why.empty() ? "could not run" : why;
  }
  const bool whole_rule = held == Held::kWholeRule;
  const AccuracyReport r = CheckResult(form, dt, layout, n, *ops, /*skip_branch_points=*/!whole_rule);
  why = Verdict(r, whole_rule);
  if (every_case || !why.empty())
    std::fprintf(out, "%-38s n=%-6zu share %.5f max_err %.2e  %s\n", name.c_str(), n, r.Share(), r.max_err,
                 why.empty() ? "ok" : why.c_str());
  return why;
}

namespace {

// The layouts a peer is timed on (RegisterPeerBenchmarks): contiguous, and the views where it computes on them.
bool TimedOn(const peers::Peer& peer, Layout layout, Op op, bool with_api) {
  if (!LayoutAppliesTo(layout, op)) return false;
  return layout == Layout::kContig || (with_api && peer.HasViews());
}

void RunPeer(benchmark::State& st, const std::shared_ptr<peers::Peer>& peer, const OpForm& form, DType dt,
             Layout layout, size_t n, int t, const inputs::Placement& place) {
  auto ops = GetOperands(form.op, dt, n, place);
  const OpParams params = ParamsOf(form);
  auto fn = layout == Layout::kContig
                ? peer->Prepare(form.op, dt, n, ops->g, ops->x, ops->out, params, t)
                : peer->PrepareViews(form.op, dt, PeerViews(layout, n), ops->g, ops->x, ops->out, params, t, false);
  if (!fn) {
    st.SkipWithError("peer does not support this case");
    return;
  }
  fn();  // warm-up: caches, thread team, lazy initialisation
  const double s = TimedLoop(st, fn);
  SetCounters(st, s, LayoutCallBytes(layout, dt, n), static_cast<double>(n), n, t);
  SetPlacement(st, place);
}

// Says which of the thread counts asked for this process cannot run the peer.
void NoteThreadsNotRun(const peers::Peer& peer, const std::vector<int>& threads) {
  for (int t : threads) {
    if (!peer.RunsWithThreads(t))
      std::fprintf(stderr, "actgrad bench: no %s rows at thr:%d: that peer takes its thread count from the "
                   "process's CPU affinity (run thr:%d in a process on %d CPUs; scripts/bench does)\n",
                   peer.Name().c_str(), t, t, t);
  }
}

}  // namespace

std::string PeerNames() { return peers::PeerVersions(); }

ComputeFn PeerCompute(peers::Peer& peer, const OpForm& form, DType dt, Layout layout) {
  return [&peer, form, dt, layout](Operands& ops, size_t n, std::string* why) {
    const OpParams p = ParamsOf(form);
    auto fn = peer.PrepareViews(form.op, dt, PeerViews(layout, n), ops.g, ops.x, ops.out, p, 1, /*copy_result=*/true);
    if (!fn && layout == Layout::kContig) fn = peer.Prepare(form.op, dt, n, ops.g, ops.x, ops.out, p, 1);
    if (!fn) return *why = "the peer cannot compute this case", false;
    fn();
    return true;
  };
}

bool CheckPeers(const ApiFn& api, std::FILE* out, bool every_case) {
  int failed = 0, cases = 0;
  for (const OpForm& form : OpForms()) {
    for (DType dt : kFloatTypes) {
      for (Layout layout : kLayouts) {
        if (api && LayoutAppliesTo(layout, form.op)) {
          ++cases;
          failed += CheckCase("ours", Held::kWholeRule, [&](Operands&, size_t n, std::string* why) {
            return api(form, dt, layout, n, inputs::PlacementAt(0), why);
          }, form, dt, layout, out, every_case).empty() ? 0 : 1;
        }
        for (const auto& peer : Peers()) {
          if (!peer->Supports(form.op, dt, ParamsOf(form)) || !TimedOn(*peer, layout, form.op, bool(api))) continue;
          ++cases;
          failed += CheckCase(peer->Name(), Held::kHardBound, PeerCompute(*peer, form, dt, layout), form, dt,
                              layout, out, every_case).empty() ? 0 : 1;
        }
      }
    }
  }
  std::fprintf(out,
               "peer check (%s): %d of %d cases agree with the double reference (ours: the accuracy rule; the "
               "peers: its hard bound and specials, branch points aside)\n",
               peers::PeerVersions().c_str(), cases - failed, cases);
  return failed == 0;
}

void RegisterPeerBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads, const ApiFn& api) {
  for (const auto& peer : Peers()) {
    NoteThreadsNotRun(*peer, threads);
    for (const OpForm& form : OpForms()) {
      for (DType dt : kFloatTypes) {
        if (!peer->Supports(form.op, dt, ParamsOf(form))) continue;
        for (Layout layout : kLayouts) {
          if (!TimedOn(*peer, layout, form.op, bool(api))) continue;
          std::string subject = peer->Name() + "." + FormToken(form) + "." + std::string(DTypeName(dt));
          if (layout != Layout::kContig) subject += std::string(".") + LayoutName(layout);
          for (size_t n : sizes) {
            if (!LayoutFits(layout, n)) continue;
            for (int t : threads) {
              if (!peer->RunsWithThreads(t)) continue;
              for (const auto& place : SweepPlacements()) {
                RegisterWallClock(BenchName("peer", subject, n, t, place),
                    [peer, form, dt, layout, n, t, place](benchmark::State& st) {
                      inputs::RunAtStackOffset(place, [&] { RunPeer(st, peer, form, dt, layout, n, t, place); });
                    });
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace actgrad::bench
