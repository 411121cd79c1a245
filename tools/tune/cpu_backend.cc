#include "tools/tune/cpu_backend.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_hardswish_backward.h"
#include "aclnnop/aclnn_logit_grad.h"
#include "aclnnop/aclnn_selu_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "actgrad/acl_dtype.h"
#include "actgrad/half.h"
#include "runtime/error.h"  // the aclnn ops' messages, without the ACL runtime library
#include "runtime/plan.h"   // kMaxTileElems
#include "tiling/dispatch.h"
#include "tiling/machine.h"
#include "tiling/size_cells.h"
#include "tools/inputs/op_inputs.h"
#include "tools/inputs/placement.h"
#include "tools/inputs/views.h"
#include "tools/tune/topology.h"
#include "variants/cache.h"
#include "variants/thread_pool.h"

namespace actgrad::tune {

namespace {

using Clock = std::chrono::steady_clock;
// Thread counts above 1 are candidates from this size on (below, a call is
// too short to pay for waking the pool; RunVariant is serial below kSerialBelow).
constexpr uint64_t kThreadedCandidatesFrom = 4 * kSerialBelow;

// The workspace of a view executor (the operands are in a PlacedArena),
// aligned as the CPU runtime's aclrtMalloc aligns it (64 bytes:
// runtime/acl_memory.cc), which CANN programs and the benchmarks
// (api_bench.cc Workspace) get; not aclrtMalloc itself, which a build
// with CANN takes from the device runtime. Where the workspace starts moves
// the runtime's packed tiles, and the transposed path's speed with them (by
// half for some tiles): the tuner must time the workspace callers get, or it
// picks tiles that are fast only at its own alignment.
struct WorkspaceBuf {
  void* p = nullptr;
  size_t bytes = 0;
  WorkspaceBuf() = default;
  WorkspaceBuf(const WorkspaceBuf&) = delete;
  WorkspaceBuf& operator=(const WorkspaceBuf&) = delete;
  ~WorkspaceBuf() { std::free(p); }
  void Reserve(size_t b) {
    if (b <= bytes) return;
    std::free(p);
    p = nullptr;
    bytes = 0;
    const size_t rounded = (b + 63) / 64 * 64;
    p = std::aligned_alloc(64, rounded);
    if (!p) throw std::runtime_error("cpu backend: cannot allocate a workspace of " + std::to_string(b) + " bytes");
    bytes = b;
    std::memset(p, 0, b);  // fault the pages in now, not while timing
  }
};

// g, x and out at a placement of the documented set (inputs::PlacementAt),
// movable to another placement in place. One PlacedArena holds their
// page-aligned regions, each a page longer than the largest operand yet
// asked for, and the operands sit at the placement's offsets within them.
// Two costs are avoided: a placement switch moves g's and x's bytes
// (memmove) instead of allocating and filling a new arena, and the arena is
// replaced only to grow, not for every cell (at 64M elements a new arena
// costs a few tenths of a second of page faults; actgrad-tune --quick took
// 1.6x the wall time with a new arena per switch, 1.25x with one per cell).
class PlacedOperands {
 public:
  static constexpr size_t kPage = inputs::kPageBytes;
  // Operands of g and out `bytes` long and x `x_bytes` long at placement k;
  // the caller fills g and x. Every page is faulted in here, not while timing.
  void Reserve(size_t bytes, size_t x_bytes, int k) {
    if (empty() || bytes > cap_ || x_bytes > x_cap_) {
      cap_ = std::max(cap_, bytes), x_cap_ = std::max(x_cap_, x_bytes);
      arena_ = inputs::PlacedArena();  // free the old operands before the new ones take memory
      arena_ = inputs::PlacedArena(cap_ + kPage, x_cap_ + kPage, inputs::PlacementAt(0));
      std::memset(Region(arena_.g()), 0, cap_ + kPage);
      std::memset(Region(arena_.x()), 0, x_cap_ + kPage);
      std::memset(Region(arena_.out()), 0, cap_ + kPage);
    }
    bytes_ = bytes, x_bytes_ = x_bytes;
    at_ = inputs::PlacementAt(k);
  }
  // The values of g and x move along; out's do not matter (the kernels write it).
  void MoveTo(int k) {
    const inputs::Placement p = inputs::PlacementAt(k);
    std::memmove(Region(arena_.g()) + p.g, g(), bytes_);
    std::memmove(Region(arena_.x()) + p.x, x(), x_bytes_);
    at_ = p;
  }
  bool empty() const { return arena_.reserved_bytes() == 0; }
  const inputs::Placement& placement() const { return at_; }
  char* g() const { return Region(arena_.g()) + at_.g; }
  char* x() const { return Region(arena_.x()) + at_.x; }
  char* out() const { return Region(arena_.out()) + at_.out; }

 private:
  static char* Region(void* p) { return static_cast<char*>(p); }  // page-aligned: placement 0
  inputs::PlacedArena arena_;
  inputs::Placement at_;
  size_t cap_ = 0, x_cap_ = 0;      // region lengths, less the page of slack
  size_t bytes_ = 0, x_bytes_ = 0;  // the operands' lengths
};

int UnrollRank(int u) { return u == 2 ? 0 : u == 4 ? 1 : u == 1 ? 2 : 3 + u; }

// This machine's caches as {"l1d": bytes, "l1i": ..., "l2": ..., "l3": ...}:
// /sys (cpu0, ReadCacheLevels), else sysconf. Provenance and the split
// refinements read it.
nlohmann::json ReadCaches() {
  nlohmann::json caches = nlohmann::json::object();
  for (const CacheLevel& c : ReadCacheLevels()) {
    std::string name = "l";
    name += std::to_string(c.level);  // not "l" + to_string: GCC 12's -Wrestrict misfires on it
    if (c.type == "Data") name += "d";
    else if (c.type == "Instruction") name += "i";
    caches[name] = uint64_t(c.bytes);
  }
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (caches.empty()) {
    if (long v = sysconf(_SC_LEVEL1_DCACHE_SIZE); v > 0) caches["l1d"] = v;
    if (long v = sysconf(_SC_LEVEL2_CACHE_SIZE); v > 0) caches["l2"] = v;
    if (long v = sysconf(_SC_LEVEL3_CACHE_SIZE); v > 0) caches["l3"] = v;
  }
#endif
  return caches;
}

uint64_t CacheBytes(const nlohmann::json& caches, const char* name, uint64_t fallback) {
  const auto it = caches.find(name);
  return it != caches.end() && it->is_number_integer() && it->get<int64_t>() > 0 ? it->get<uint64_t>() : fallback;
}

// Working-set sizes from L1- to L2-sized: L1d, their geometric mean, L2.
std::vector<uint64_t> L1ToL2Bytes(const nlohmann::json& caches) {
  const uint64_t l1 = CacheBytes(caches, "l1d", 32 << 10), l2 = std::max(CacheBytes(caches, "l2", kFallbackL2Bytes), l1);
  return {l1, uint64_t(std::sqrt(double(l1) * double(l2))), l2};
}

}  // namespace

struct CpuBackend::Impl {
  const AccuracyGate* gate;
  CpuBackendOptions opts;
  nlohmann::json caches = ReadCaches();
  Topology topology = ThisTopology();

  // The operands of the current (op, dtype): g, x and out with `data_n`
  // elements each (the views of a layout other than contig lie over them:
  // tools/inputs/views.h, the benchmarks' views).
  int data_op = -1, data_dtype = -1;
  uint64_t data_n = 0, data_x_n = 0;
  int placement = 0;  // asked for by SetPlacement; the operands follow at the next Prepare
  PlacedOperands operands;

  // Per (cell, candidate, point) state: calibration and executors.
  struct PointState {
    bool warmed = false;
    int64_t iters = 1;
    aclTensor* tg = nullptr;
    aclTensor* tx = nullptr;
    aclTensor* to = nullptr;
    aclScalar* lambd = nullptr;
    aclOpExecutor* exec = nullptr;
    WorkspaceBuf ws;
    uint64_t ws_size = 0;
    ~PointState() { Unbind(); }
    // The operands moved (another placement, another arena): the executor
    // points to where they were, and where they are now is cold: warm up again.
    void Unbind() {
      if (exec) aclDestroyAclOpExecutor(exec);
      if (tg) aclDestroyTensor(tg);
      if (tx) aclDestroyTensor(tx);
      if (to) aclDestroyTensor(to);
      if (lambd) aclDestroyScalar(lambd);
      exec = nullptr, tg = tx = to = nullptr, lambd = nullptr;
      warmed = false;
    }
  };
  std::string bucket_key;
  std::map<std::string, std::unique_ptr<PointState>> states;
  std::map<std::string, double> last_call;  // size -> seconds of one call (this cell)
  const PointState* last_run = nullptr;     // whose call ran last (TimeCall's settling call)

  // Makes the operands those of cell b (`need` elements) at `placement`:
  // moved there when only the placement changed, else filled anew with this
  // cell's length (a move after a 64M cell must not copy 512 MB for a 1K one).
  void Prepare(const Cell& cell, uint64_t need) {
    const uint64_t need_x = need;
    const bool same = !operands.empty() && data_op == int(cell.op) && data_dtype == int(cell.dtype) &&
                      data_n == need && data_x_n == need_x;
    if (same && operands.placement().index == placement) return;
    for (auto& [key, st] : states) st->Unbind();
    if (same) {
      operands.MoveTo(placement);
      return;
    }
    const size_t es = DTypeSize(cell.dtype);
    operands.Reserve(size_t(need * es), size_t(need_x * es), placement);
    // The benchmarks' operands (tools/inputs: a 1M-element pattern, tiled):
    // the tuner measures on what the benchmarks time.
    inputs::FillOperand(cell.op, cell.dtype, inputs::Role::kG, operands.g(), size_t(need));
    inputs::FillOperand(cell.op, cell.dtype, inputs::Role::kX, operands.x(), size_t(need_x));
    data_op = int(cell.op);
    data_dtype = int(cell.dtype);
    data_n = need;
    data_x_n = need_x;
  }

  OpParams Params(const Cell& cell) const {
    OpParams p;
    p.gelu_approx = cell.mode;
    p.lambd = 0.5f;
    p.eps = -1.0f;
    return p;
  }

  // Builds the repeatable executor of a view measurement (every layout but
  // contig: the API on the layout's views, tools/inputs/views.h) with the
  // forced choice.
  void MakeExecutor(const Cell& cell, const Variant& v, const Choice& c, uint64_t n, PointState* st) {
    inputs::ViewLayout l;
    if (!inputs::ParseViewLayout(cell.layout, &l) || !inputs::LayoutAppliesTo(l, cell.op) || !inputs::LayoutFits(l, size_t(n)))
      throw std::runtime_error("layout " + cell.layout + " does not apply to " + std::string(OpName(cell.op)) + " at n " +
                               std::to_string(n));
    const inputs::LayoutViews views = inputs::ViewsOf(l, size_t(n));
    const aclDataType t = ToAclDataType(cell.dtype);
    auto make = [&](const inputs::View& w, void* data) {
      return aclCreateTensor(w.dims.data(), w.dims.size(), t, w.strides.data(), 0, ACL_FORMAT_ND, w.storage_dims.data(),
                             w.storage_dims.size(), data);
    };
    st->tg = make(views.g, operands.g());
    st->tx = make(views.x, operands.x());
    st->to = make(views.out, operands.out());
    if (!st->tg || !st->tx || !st->to) throw std::runtime_error(std::string("aclCreateTensor: ") + actgrad::rt::RecentError());
    KernelChoice forced = Resolve(c);
    forced.variant = &v;
    ScopedKernelOverride scope(forced);
    aclnnStatus s = ACLNN_ERR_PARAM_INVALID;
    switch (cell.op) {
      case Op::kSeluBwd:
        s = aclnnSeluBackwardGetWorkspaceSize(st->tg, st->tx, st->to, &st->ws_size, &st->exec);
        break;
      case Op::kHardswishBwd:
        s = aclnnHardswishBackwardGetWorkspaceSize(st->tg, st->tx, st->to, &st->ws_size, &st->exec);
        break;
      case Op::kGeluBwd: {
        char approx[8];
        std::strcpy(approx, cell.mode == GeluApprox::kTanh ? "tanh" : "none");
        s = aclnnGeluBackwardV2GetWorkspaceSize(st->tg, st->tx, approx, st->to, &st->ws_size, &st->exec);
        break;
      }
      case Op::kSoftshrinkBwd: {
        float lambd = Params(cell).lambd;
        st->lambd = aclCreateScalar(&lambd, ACL_FLOAT);
        s = aclnnSoftshrinkBackwardGetWorkspaceSize(st->tg, st->tx, st->lambd, st->to, &st->ws_size, &st->exec);
        break;
      }
      case Op::kLogitGrad:  // x first, as the API takes it
        s = aclnnLogitGradGetWorkspaceSize(st->tx, st->tg, double(Params(cell).eps), st->to, &st->ws_size, &st->exec);
        break;
    }
    if (s != ACLNN_SUCCESS) throw std::runtime_error(std::string("aclnn phase one: ") + actgrad::rt::RecentError());
    if (aclSetAclOpExecutorRepeatable(st->exec) != ACLNN_SUCCESS)
      throw std::runtime_error(std::string("aclSetAclOpExecutorRepeatable: ") + actgrad::rt::RecentError());
    st->ws.Reserve(std::max<uint64_t>(st->ws_size, 64));
  }

  void RunOnce(const Cell& cell, const Variant& v, const Choice& c, uint64_t n, PointState* st) {
    if (st->exec) {
      aclnnStatus s = ACLNN_ERR_PARAM_INVALID;
      switch (cell.op) {
        case Op::kSeluBwd: s = aclnnSeluBackward(st->ws.p, st->ws_size, st->exec, nullptr); break;
        case Op::kHardswishBwd: s = aclnnHardswishBackward(st->ws.p, st->ws_size, st->exec, nullptr); break;
        case Op::kGeluBwd: s = aclnnGeluBackwardV2(st->ws.p, st->ws_size, st->exec, nullptr); break;
        case Op::kSoftshrinkBwd: s = aclnnSoftshrinkBackward(st->ws.p, st->ws_size, st->exec, nullptr); break;
        case Op::kLogitGrad: s = aclnnLogitGrad(st->ws.p, st->ws_size, st->exec, nullptr); break;
      }
      if (s != ACLNN_SUCCESS) throw std::runtime_error(std::string("aclnn phase two: ") + actgrad::rt::RecentError());
      return;
    }
    KernelArgs a{operands.g(), operands.x(), operands.out(), size_t(n), Params(cell), 0};
    RunVariant(v, a, c.split);
  }

  // One sample of candidate c at size n: the seconds of one call, looped
  // for at least `per_point` seconds.
  double TimeCall(const Cell& cell, const Variant& v, const Choice& c, uint64_t n, double per_point) {
    const std::string pkey = std::to_string(n);
    auto& st = states[c.Key() + "@" + pkey];
    if (!st) st.reset(new PointState);
    if (cell.layout != "contig" && !st->exec) MakeExecutor(cell, v, c, n, st.get());
    if (!st->warmed) {
      // Warm-up once per candidate, size and placement, and calibrate the
      // loop. When one call at this size is known to take far longer than a
      // sample (DRAM-sized data: nothing to warm), go straight to one call per block.
      const auto known = last_call.find(pkey);
      if (known != last_call.end() && known->second > 2 * per_point) {
        st->iters = 1;
      } else {
        auto t0 = Clock::now();
        RunOnce(cell, v, c, n, st.get());
        double t1 = std::chrono::duration<double>(Clock::now() - t0).count();
        if (t1 < per_point / 4) {  // second estimate, caches and threads now warm
          t0 = Clock::now();
          RunOnce(cell, v, c, n, st.get());
          t1 = std::chrono::duration<double>(Clock::now() - t0).count();
        }
        st->iters = std::clamp<int64_t>(int64_t(std::ceil(per_point / std::max(t1, 1e-9))), 1, 100000000);
      }
      st->warmed = true;
    }
    // A sample of a few calls (DRAM-sized data) right after another
    // candidate's would inherit that call's wake: the dirty lines its plain
    // stores left in the caches, written back during this one, or none when
    // it streamed. Interleaved samples then favour plain stores over the
    // steady state the benchmarks measure (back-to-back calls of one
    // kernel). One untimed call first settles it.
    if (last_run != st.get() && st->iters <= 4) RunOnce(cell, v, c, n, st.get());
    last_run = st.get();
    // The sample: up to 5 blocks of calls, the median block. A preemption
    // (other processes share the cores) spoils one block, not the sample.
    // A block that stalls badly ends the sample early.
    const int64_t blocks = std::min<int64_t>(5, st->iters);
    const int64_t per_block = (st->iters + blocks - 1) / blocks;
    std::vector<double> block_times;
    const auto start = Clock::now();
    for (int64_t k = 0; k < blocks; ++k) {
      const auto t0 = Clock::now();
      for (int64_t i = 0; i < per_block; ++i) RunOnce(cell, v, c, n, st.get());
      const auto t1 = Clock::now();
      block_times.push_back(std::chrono::duration<double>(t1 - t0).count() / double(per_block));
      if (std::chrono::duration<double>(t1 - start).count() > 4 * per_point) break;
    }
    std::nth_element(block_times.begin(), block_times.begin() + long(block_times.size() / 2), block_times.end());
    const double call = block_times[block_times.size() / 2];
    last_call[pkey] = call;
    return call;
  }
};

CpuBackend::CpuBackend(const AccuracyGate* gate, CpuBackendOptions opts) : impl_(new Impl) {
  impl_->gate = gate;
  impl_->opts = opts;
}
CpuBackend::~CpuBackend() = default;

int CpuBackend::ThreadCap() const {
  return impl_->opts.max_threads > 0 ? impl_->opts.max_threads : actgrad::MaxThreads();
}

std::vector<uint64_t> CpuBackend::Points(const Cell& cell) const {
  const uint64_t lo = OctaveLo(cell.octave), hi = OctaveHi(cell.octave) - 1;
  auto fix = [&](double v) {
    uint64_t n = uint64_t(std::llround(v));
    n = std::clamp<uint64_t>(n, lo, hi);
    n = std::min(n, std::max<uint64_t>(impl_->opts.max_n, 1));
    inputs::ViewLayout l;
    if (inputs::ParseViewLayout(cell.layout, &l)) n = std::max<uint64_t>(inputs::FitDown(l, size_t(n)), 1);
    return n;
  };
  std::vector<uint64_t> p;
  if (impl_->opts.two_points) {
    p.push_back(fix(double(cell.n) / std::sqrt(2.0)));
    const uint64_t p2 = fix(double(cell.n) * std::sqrt(2.0));
    if (p2 != p[0]) p.push_back(p2);
  } else {
    p.push_back(fix(double(cell.n)));
  }
  return p;
}

AccuracyClass CpuBackend::Class() const {
  return impl_->gate ? impl_->gate->accuracy_class() : AccuracyClass::kRule;
}

std::vector<Choice> CpuBackend::Candidates(const Cell& cell) {
  std::vector<const Variant*> vs;
  const Variant* def = DefaultVariant(cell.op, cell.dtype, cell.mode, Class());
  for (const Variant& v : Variants()) {
    if (v.op != cell.op || v.dtype != cell.dtype || !v.supported) continue;
    if (cell.op == Op::kGeluBwd && v.gelu_mode != cell.mode) continue;
    if (&v != def && impl_->gate && !impl_->gate->Allowed(v)) continue;
    vs.push_back(&v);
  }
  // Prior order: the default first, then widest target, register upcast,
  // plain stores, unroll 2/4/1/8.
  std::stable_sort(vs.begin(), vs.end(), [&](const Variant* a, const Variant* c) {
    auto key = [&](const Variant* v) {
      return std::make_tuple(v != def, TargetRank(v->target), v->nt_stores, UnrollRank(v->unroll),
                             v->upcast == "staged");
    };
    return key(a) < key(c);
  });
  // Threads pay off only above ~8K elements (RunVariant runs anything under
  // kSerialBelow serially). Chunks and stage tiles: SplitRefinements.
  // The thread counts: 1, 2, 4, ... and every core. Counts beyond one
  // socket only where the operands overflow the socket's last-level caches
  // (then a second socket adds memory bandwidth; below, it adds only
  // cross-socket traffic).
  const int maxt = ThreadCap();
  const Topology& topo = impl_->topology;
  const uint64_t socket_llc = CacheBytes(impl_->caches, "l3", uint64_t(32) << 20) *
                              uint64_t(std::max(1, topo.cpus_per_socket / std::max(1, topo.cpus_per_llc)));
  const bool beyond_socket = topo.sockets > 1 && 3 * cell.n * DTypeSize(cell.dtype) > socket_llc;
  std::vector<int> threads = {1};
  if (maxt > 1 && cell.n >= kThreadedCandidatesFrom) {
    const int local = beyond_socket ? maxt : std::clamp(topo.cpus_per_socket, 1, maxt);
    for (int t = 2; t < local; t *= 2) threads.push_back(t);
    threads.push_back(local);
  }
  std::vector<Choice> out;
  for (const Variant* v : vs)
    for (int t : threads) out.push_back(Choice{v->name, Split{t, 0, 0}});
  return out;
}

std::vector<Choice> CpuBackend::SplitRefinements(const Cell& cell, const Choice& best) {
  std::vector<Choice> out;
  const Variant* v = FindVariant(best.variant);
  if (!v) return out;
  auto add = [&](Split s) {
    const Choice c{best.variant, s};
    if (c != best && std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
  };
  const int threads = best.split.threads;
  if (cell.layout == "transposed") {
    // The gathered tile (runtime/plan.h SizeTile) in bytes: 1024 or 512 out
    // rows by 256 B to 1 KB of each out row, and 256 rows by 1 KB. With 1024
    // rows an f32 input's tile is whole 4 KB rows, one contiguous block,
    // read about a third faster than half rows (actgrad-memory-pieces-probe
    // measures it); streaming stores of out pieces of 256 bytes or more 64 KB
    // apart write at the contiguous speed, 64-byte ones at a third of it. The tuner
    // weighs the rest (16-bit rows, the L2 at two threads). The runtime's
    // default tile is not offered again for a candidate that has it already
    // (no tile in its split: the same tile, measured twice).
    // Each geometry with the variant and a streaming-store twin: its own, or
    // where there is none (Highway u1 and u8, native u1 and u2), the u2 or u4 one.
    const int64_t es = int64_t(DTypeSize(cell.dtype));
    std::vector<std::string> names{best.variant};
    if (const Variant* nt = StreamingTwin(*v); nt && nt != v) names.push_back(nt->name);
    for (const std::string& name : names)
      for (auto [r, bytes] : {std::pair<int64_t, int64_t>{1024, 256}, {1024, 512}, {1024, 1024}, {512, 256},
                              {512, 512}, {256, 1024}}) {
        if (r * (bytes / es) > rt::kMaxTileElems) continue;  // the runtime would cut it to a smaller one
        if (name == best.variant && best.split.tile_rows == 0 && best.split.tile_cols == 0 &&
            r == rt::kGatheredTileRows && bytes == rt::kGatheredTileOutBytes)
          continue;
        const Choice ch{name, Split{threads, best.split.chunk, best.split.stage_tile, r, bytes / es}};
        if (ch != best && std::find(out.begin(), out.end(), ch) == out.end()) out.push_back(ch);
      }
    // The result transposed instead of the inputs (Split::transpose_result):
    // the variant writes a scratch tile, so plain stores (a streaming
    // variant's plain twin). Within the L2 the tile that holds whole input
    // rows wins (SELU and Hardswish at 64K, actgrad-transpose-probe: 1024 x
    // 64 f32 0.018-0.019 ms, 64 x 64 0.024); the smaller ones are for the
    // larger sizes and for two threads, where 1024 rows make few tiles.
    if (const Variant* plain = PlainTwin(*v))
      for (auto [r, bytes] : {std::pair<int64_t, int64_t>{1024, 256}, {512, 256}, {256, 256}}) {
        Split s{threads, best.split.chunk, best.split.stage_tile, r, bytes / es};
        s.transpose_result = true;
        const Choice ch{plain->name, s};
        if (ch != best && std::find(out.begin(), out.end(), ch) == out.end()) out.push_back(ch);
      }
    return out;
  }
  // contig, strided, bcast: the chunk (for views: the elements of one tile of runs).
  const size_t esize = DTypeSize(cell.dtype);
  for (uint64_t bytes : L1ToL2Bytes(impl_->caches)) {
    // A chunk whose three operands fill the cache, whole cache lines, at
    // least two pieces per thread.
    const int64_t chunk = int64_t(std::max<uint64_t>(64, bytes / (3 * esize) / 64 * 64));
    if (threads > 1 && uint64_t(chunk) * 2 * uint64_t(threads) <= cell.n &&
        size_t(chunk) != DefaultChunk(size_t(cell.n), threads))
      add(Split{threads, chunk, best.split.stage_tile, 0, 0});
    // A stage tile whose two fp32 scratch arrays fill the cache (a power of two).
    const uint64_t stage = std::bit_floor(std::max<uint64_t>(bytes / 8, 256));
    if (v->upcast == "staged" && stage <= kMaxStageTile && stage != kDefaultStageTile && stage <= cell.n)
      add(Split{threads, best.split.chunk, int64_t(stage), 0, 0});
  }
  return out;
}

std::vector<std::string> CpuBackend::Traits(const Choice& c) const {
  const Variant* v = FindVariant(c.variant);
  return {"threads=" + std::to_string(c.split.threads), std::string("stores=") + (v && v->nt_stores ? "nt" : "plain")};
}

Choice CpuBackend::Default(const Cell& cell) {
  Choice c = DefaultChoice(cell.op, cell.dtype, cell.mode, cell.n, Class());
  if (c.variant.empty()) throw std::runtime_error("no default variant for " + std::string(OpName(cell.op)) + " " +
                                                  std::string(DTypeName(cell.dtype)));
  c.split.threads = std::min(c.split.threads, ThreadCap());
  return c;
}

void CpuBackend::SetPlacement(int k) {
  if (k < 0) throw std::invalid_argument("cpu backend: placement " + std::to_string(k) + " (0, 1, ...)");
  impl_->placement = k;
}

CpuBackend::OperandView CpuBackend::Operands() const {
  const PlacedOperands& o = impl_->operands;
  return {o.g(), o.x(), o.out(), o.placement()};
}

void CpuBackend::Prepare(const Cell& cell) {
  const std::vector<uint64_t> pts = Points(cell);
  impl_->Prepare(cell, *std::max_element(pts.begin(), pts.end()));
}

std::vector<double> CpuBackend::Measure(const Cell& cell, const Choice& c, int reps, double min_seconds) {
  const Variant* v = FindVariant(c.variant);
  if (!v || !v->supported || v->op != cell.op || v->dtype != cell.dtype)
    throw std::runtime_error("cpu backend: variant " + c.variant + " cannot run this cell");
  const std::vector<uint64_t> pts = Points(cell);
  Impl& m = *impl_;
  m.Prepare(cell, *std::max_element(pts.begin(), pts.end()));
  const std::string bkey = std::string(OpName(cell.op)) + "/" + std::string(DTypeName(cell.dtype)) + "/" +
                           std::to_string(int(cell.mode)) + "/" + cell.layout + "/" + std::to_string(cell.octave) + "/" +
                           std::to_string(cell.n);
  if (bkey != m.bucket_key) {
    m.states.clear();
    m.last_call.clear();
    m.last_run = nullptr;
    m.bucket_key = bkey;
  }
  const double per_point = min_seconds / double(pts.size());
  std::vector<double> samples;
  // The calling thread's stack at the placement's offset too, as the
  // benchmarks time our kernels (inputs::RunAtStackOffset).
  inputs::RunAtStackOffset(m.operands.placement(), [&] {
    for (int r = 0; r < std::max(1, reps); ++r) {
      double per_elem = 0;
      for (uint64_t n : pts) per_elem += m.TimeCall(cell, *v, c, n, per_point) * 1e9 / double(n);
      samples.push_back(per_elem / double(pts.size()) * double(cell.n));
    }
  });
  return samples;
}

nlohmann::json CpuBackend::Provenance() {
  nlohmann::json p;
  p["cpu_model"] = CpuModelName();
  p["cpu_flags"] = CpuFlags();
  p["cores"] = long(sysconf(_SC_NPROCESSORS_ONLN));
  // What the thread rules were measured with (docs/tuning.md): the CPUs the
  // tuner could use and their sockets and cache domains.
  p["topology"] = impl_->topology.ToJson();
  p["omp_max_threads"] = ThreadCap();
  // How long idle pool threads spin (ACTGRAD_SPIN_US) changes what threads
  // cost on a shared machine; see variants/thread_pool.h.
  p["spin_us"] = SpinMicroseconds();
  p["caches"] = impl_->caches;
#if defined(__clang__)
  p["compiler"] = std::string("Clang ") + __clang_version__;
#elif defined(__GNUC__)
  p["compiler"] = std::string("GNU ") + __VERSION__;
#else
  p["compiler"] = "unknown";
#endif
  p["isa_family"] = IsaFamily();
  std::set<std::string> targets;
  for (const Variant& v : Variants())
    if (v.supported) targets.insert(v.target);
  p["variant_targets"] = std::vector<std::string>(targets.begin(), targets.end());
  p["measure_points"] = impl_->opts.two_points ? "n/sqrt2 and n*sqrt2 (clamped to the octave and max_n)" : "n";
  p["max_n"] = impl_->opts.max_n;
  return p;
}

std::string CpuBackend::MachineId() { return actgrad::MachineId(); }

}  // namespace actgrad::tune
