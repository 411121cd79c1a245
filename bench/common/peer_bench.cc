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

peers::OperandViews PeerViews(Layout layout, size_t n) {
  const LayoutViews v = ViewsOf(layout, n);
  return {{v.g.dims, v.g.strides}, {v.x.dims, v.x.strides}, {v.out.dims, v.out.strides}};
}

float ElementAsFloat(DType dt, const void* base, size_t i) {
  uint32_t bits = 0;
  float f = 0;
  switch (dt) {
    case DType::kF32:
      std::memcpy(&f, static_cast<const char*>(base) + 4 * i, 4);
      return f;
    case DType::kBF16: {
      uint16_t h;
      std::memcpy(&h, static_cast<const char*>(base) + 2 * i, 2);
      bits = uint32_t(h) << 16;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    case DType::kF16: {
      uint16_t h;
      std::memcpy(&h, static_cast<const char*>(base) + 2 * i, 2);
      const int e = (h >> 10) & 31, m = h & 1023;
      const float sign = (h & 0x8000) ? -1.0f : 1.0f;
      if (e == 0) return sign * std::ldexp(float(m), -24);
      if (e == 31) return m ? NAN : sign * INFINITY;
      return sign * std::ldexp(float(m | 1024), e - 25);
    }
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

// Compares the out buffers (the out view covers them in view order)
// elementwise: "" when they agree, else what the first mismatch is. An
// element agrees when both are NaN or |a - b| <= tol * max(1, |a|, |b|)
// (loose: a wrong computation is off by far more). Up to n/256 elements may
// differ: the two implementations may take different sides of a branch at
// its boundary (a value rounded to the 16-bit type); a wrong view, a wrong
// broadcast or a wrong formula differs in far more.
std::string Compare(DType dt, Layout layout, size_t n, const Operands& ops, const void* ours) {
  const float tol = dt == DType::kF32 ? 1e-3f : 2e-2f;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < n; ++i) {
    const float a = ElementAsFloat(dt, ours, i), b = ElementAsFloat(dt, ops.out, i);
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;
    if (std::fabs(a - b) <= tol * std::fmax(1.0f, std::fmax(std::fabs(a), std::fabs(b)))) continue;
    if (bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  const LayoutViews v = ViewsOf(layout, n);
  char msg[320];
  std::snprintf(msg, sizeof msg,
                "peer result differs from the API's at %zu of %zu elements (first: out[%zu] = %g, the API's %g; "
                "g = %g, x = %g)",
                bad, n, first, double(ElementAsFloat(dt, ops.out, first)), double(ElementAsFloat(dt, ours, first)),
                double(ElementAsFloat(dt, ops.g, size_t(OffsetOf(v.out, v.g, first)))),
                double(ElementAsFloat(dt, ops.x, size_t(OffsetOf(v.out, v.x, first)))));
  if (bad > n / 256) return msg;
  if (std::getenv("ACTGRAD_BENCH_VERBOSE")) std::fprintf(stderr, "peer check passes with %s\n", msg);
  return "";
}

// The peer against our API on this case, once per (peer, op, dtype, layout,
// n): "" when it agrees, else why not. Leaves the peer's result in out.
std::string CheckOnce(peers::Peer& peer, Op op, DType dt, Layout layout, size_t n, const inputs::Placement& place,
                      Operands& ops, const OpParams& params, int t, const ReferenceFn& reference) {
  static std::mutex mu;
  static std::map<std::string, std::string> done;
  const std::string key = peer.Name() + "." + std::string(OpName(op)) + "." + std::string(DTypeName(dt)) + "." +
                          LayoutName(layout) + "/" + std::to_string(n);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = done.find(key);
    if (it != done.end()) return it->second;
  }
  std::string why;
  const size_t bytes = n * DTypeSize(dt);
  if (reference(op, dt, layout, n, place, &why)) {
    std::vector<unsigned char> ours(static_cast<unsigned char*>(ops.out), static_cast<unsigned char*>(ops.out) + bytes);
    std::memset(ops.out, 0x7B, bytes);  // ~1.3e36 (f32, bf16), 61280 (f16): no result of these ops
    auto fn = peer.PrepareViews(op, dt, PeerViews(layout, n), ops.g, ops.x, ops.out, params, t, /*copy_result=*/true);
    if (!fn) {
      why = "peer does not support this case";
    } else {
      fn();
      why = Compare(dt, layout, n, ops, ours.data());
    }
  } else {
    why = "the API reference failed: " + why;
  }
  std::lock_guard<std::mutex> lock(mu);
  done[key] = why;
  return why;
}

void RunPeer(benchmark::State& st, const std::shared_ptr<peers::Peer>& peer, Op op, DType dt, Layout layout,
             size_t n, int t, const OpParams& params, const inputs::Placement& place, const ReferenceFn& reference) {
  auto ops = GetOperands(op, dt, n, place);
  // oneDNN's SELU peer computes another function (docs: dnnl_peer.cc), so
  // the check is PyTorch's, which computes ours.
  if (reference && peer->Name() == "torch") {
    const std::string why = CheckOnce(*peer, op, dt, layout, n, place, *ops, params, t, reference);
    if (!why.empty()) {
      st.SkipWithError(why.c_str());
      return;
    }
  }
  auto fn = layout == Layout::kContig
                ? peer->Prepare(op, dt, n, ops->g, ops->x, ops->out, params, t)
                : peer->PrepareViews(op, dt, PeerViews(layout, n), ops->g, ops->x, ops->out, params, t, false);
  if (!fn) {
    st.SkipWithError("peer does not support this case");
    return;
  }
  fn();  // warm-up: caches, thread team, lazy initialisation
  const double s = TimedLoop(st, fn);
  SetCounters(st, s, LayoutCallBytes(layout, dt, n), static_cast<double>(n), n, t);
  SetPlacement(st, place);
}

}  // namespace

std::string PeerNames() { return peers::PeerVersions(); }

void RegisterPeerBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads,
                            const ReferenceFn& reference) {
  for (const auto& peer : Peers()) {
    for (Op op : kOps) {
      for (DType dt : kFloatTypes) {
        const OpParams params = DefaultParams(op);
        if (!peer->Supports(op, dt, params)) continue;
        for (Layout layout : kLayouts) {
          if (layout != Layout::kContig && (!reference || !peer->HasViews())) continue;
          if (!LayoutAppliesTo(layout, op)) continue;
          std::string subject = peer->Name() + "." + std::string(OpName(op)) + "." + std::string(DTypeName(dt));
          if (layout != Layout::kContig) subject += std::string(".") + LayoutName(layout);
          for (size_t n : sizes) {
            if (!LayoutFits(layout, n)) continue;
            for (int t : threads) {
              for (const auto& place : SweepPlacements()) {
                benchmark::RegisterBenchmark(
                    BenchName("peer", subject, n, t, place).c_str(),
                    [peer, op, dt, layout, n, t, params, place, reference](benchmark::State& st) {
                      inputs::RunAtStackOffset(place, [&] { RunPeer(st, peer, op, dt, layout, n, t, params, place, reference); });
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
