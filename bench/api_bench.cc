// actgrad-bench: the shipping path, through the public aclnn API exactly as a
// CANN program calls it (acl/acl.h, aclnnop/aclnn_*.h, the shared library).
//   api/<op>.<dtype>.<layout>.<phase>/n:N/thr:T/place:K
//     layout: contig      g, x, out contiguous, shape [n]
//             strided     g and x 4-d non-contiguous views [n/1024, 4, 4, 64]
//                         whose dims 1 and 2 are swapped in storage; out
//                         contiguous
//             bcast       (GELU, Softshrink) g and out [n/64, 64], self
//                         [n/64, 1] broadcast along the inner dimension
//             transposed  g and x [n/1024, 1024] storages viewed as their
//                         transpose [1024, n/1024]; out contiguous
//             (the views: tools/inputs/views.h, shared with the peers and the tuner)
//     phase:  phase1  aclnnXxxGetWorkspaceSize + aclDestroyAclOpExecutor
//                     (reads and writes no tensor data: bytes_per_second = 0,
//                     items_per_second = calls per second)
//             phase2  aclnnXxx + aclrtSynchronizeStream on an executor made
//                     repeatable once (aclSetAclOpExecutorRepeatable)
//             both    phase one, phase two, aclrtSynchronizeStream: one
//                     complete call as a CANN program makes it
//     thr:    omp_set_num_threads(T) before the calls: the library's dispatch
//             uses up to T threads (it may choose fewer for small n)
// plus roof/... and peer/... as in actgrad-bench-variants, and the peers that
// compute on views (PyTorch) on the same views as the API:
//   peer/<peer>.<op>.<dtype>.<layout>/n:N/thr:T/place:K (layout != contig),
// Before timing, the correctness mode (CheckPeers) checks every peer and the
// API against the double reference; --actgrad_check_peers runs only that.
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_hardswish_backward.h"
#include "aclnnop/aclnn_logit_grad.h"
#include "aclnnop/aclnn_selu_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "actgrad/acl_dtype.h"
#include "common/bench_common.h"

// The name of the tiling table the library's dispatch uses, for the context.
// Not part of the aclnn API: declared weak, so that a library that does not
// export it still links (the context then says "unknown").
namespace actgrad {
__attribute__((weak)) std::string ActiveTableName();
__attribute__((weak)) std::string ActiveTableFreshnessSummary();
}  // namespace actgrad

namespace ab = actgrad::bench;
using actgrad::DType;
using actgrad::Op;

namespace {

aclrtStream g_stream = nullptr;

using ab::Layout;
using ab::LayoutName;
enum class Phase { kPhase1, kPhase2, kBoth };
const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kPhase1: return "phase1";
    case Phase::kPhase2: return "phase2";
    case Phase::kBoth: return "both";
  }
  return "?";
}

// Tensors and scalars of one case over the cached operands of (op, dtype, n)
// (the same buffers and views as the variant and peer benchmarks:
// tools/inputs/views.h).
struct Case {
  ab::OpForm form;
  Op op;
  DType dt;
  Layout layout;
  size_t n;
  std::shared_ptr<ab::Operands> ops;
  aclTensor* tg = nullptr;
  aclTensor* tx = nullptr;
  aclTensor* tout = nullptr;
  aclScalar* lambd = nullptr;
  float lambd_value = 0.5f;
  double eps = -1.0;
  Case() = default;
  Case(const Case&) = delete;
  Case& operator=(const Case&) = delete;
  ~Case() {
    if (tg) aclDestroyTensor(tg);
    if (tx) aclDestroyTensor(tx);
    if (tout) aclDestroyTensor(tout);
    if (lambd) aclDestroyScalar(lambd);
  }
};

std::unique_ptr<Case> MakeCase(const ab::OpForm& form, DType dt, Layout layout, size_t n,
                               const actgrad::inputs::Placement& place) {
  const Op op = form.op;
  auto c = std::make_unique<Case>();
  c->form = form;
  c->op = op;
  c->dt = dt;
  c->layout = layout;
  c->n = n;
  c->ops = ab::GetOperands(op, dt, n, place);
  void* g = c->ops->g;
  void* x = c->ops->x;
  void* out = c->ops->out;
  const aclDataType at = ToAclDataType(dt);
  const ab::LayoutViews v = ab::ViewsOf(layout, n);
  auto tensor = [at](const ab::View& w, void* data) {
    return aclCreateTensor(w.dims.data(), w.dims.size(), at, w.strides.data(), 0, ACL_FORMAT_ND,
                           w.storage_dims.data(), w.storage_dims.size(), data);
  };
  c->tg = tensor(v.g, g);
  c->tx = tensor(v.x, x);
  c->tout = tensor(v.out, out);
  c->lambd = aclCreateScalar(&c->lambd_value, ACL_FLOAT);
  return c;
}

aclnnStatus Phase1(const Case& c, uint64_t* ws, aclOpExecutor** ex) {
  switch (c.op) {
    case Op::kSeluBwd: return aclnnSeluBackwardGetWorkspaceSize(c.tg, c.tx, c.tout, ws, ex);
    case Op::kHardswishBwd: return aclnnHardswishBackwardGetWorkspaceSize(c.tg, c.tx, c.tout, ws, ex);
    case Op::kGeluBwd:
      if (c.form.gelu == actgrad::GeluApprox::kTanh)
        return aclnnGeluBackwardV2GetWorkspaceSize(c.tg, c.tx, const_cast<char*>("tanh"), c.tout, ws, ex);
      return aclnnGeluBackwardGetWorkspaceSize(c.tg, c.tx, c.tout, ws, ex);
    case Op::kSoftshrinkBwd: return aclnnSoftshrinkBackwardGetWorkspaceSize(c.tg, c.tx, c.lambd, c.tout, ws, ex);
    case Op::kLogitGrad: return aclnnLogitGradGetWorkspaceSize(c.tx, c.tg, c.eps, c.tout, ws, ex);  // x first
  }
  return ACLNN_ERR_PARAM_INVALID;
}

aclnnStatus Phase2(const ab::OpForm& form, void* ws, uint64_t size, aclOpExecutor* ex) {
  switch (form.op) {
    case Op::kSeluBwd: return aclnnSeluBackward(ws, size, ex, g_stream);
    case Op::kHardswishBwd: return aclnnHardswishBackward(ws, size, ex, g_stream);
    case Op::kGeluBwd:
      if (form.gelu == actgrad::GeluApprox::kTanh) return aclnnGeluBackwardV2(ws, size, ex, g_stream);
      return aclnnGeluBackward(ws, size, ex, g_stream);
    case Op::kSoftshrinkBwd: return aclnnSoftshrinkBackward(ws, size, ex, g_stream);
    case Op::kLogitGrad: return aclnnLogitGrad(ws, size, ex, g_stream);
  }
  return ACLNN_ERR_PARAM_INVALID;
}

// Device (here: host) workspace, grown on demand and kept for the whole run.
void* Workspace(uint64_t bytes) {
  static void* ws = nullptr;
  static uint64_t cap = 0;
  if (bytes > cap) {
    if (ws) aclrtFree(ws);
    ws = nullptr;
    if (aclrtMalloc(&ws, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
    cap = bytes;
  }
  return ws;
}

std::string Failure(const char* what, aclnnStatus st) {
  return std::string(what) + " failed: " + std::to_string(st) + " " + aclGetRecentErrMsg();
}

// Runs one complete call; true when every step succeeded.
bool CallOnce(const Case& c, std::string* why) {
  uint64_t size = 0;
  aclOpExecutor* ex = nullptr;
  aclnnStatus st = Phase1(c, &size, &ex);
  if (st != ACLNN_SUCCESS) return *why = Failure("GetWorkspaceSize", st), false;
  void* ws = size ? Workspace(size) : nullptr;
  st = Phase2(c.form, ws, size, ex);
  if (st != ACLNN_SUCCESS) return *why = Failure("phase two", st), false;
  st = aclrtSynchronizeStream(g_stream);
  if (st != ACL_SUCCESS) return *why = Failure("aclrtSynchronizeStream", st), false;
  return true;
}

void RunApiBenchmark(benchmark::State& state, const ab::OpForm& form, DType dt, Layout layout, Phase phase, size_t n,
                     int t, const actgrad::inputs::Placement& place) {
  auto c = MakeCase(form, dt, layout, n, place);
  omp_set_num_threads(t);
  std::string why;
  if (!CallOnce(*c, &why) || !CallOnce(*c, &why)) {  // warm-up (and a check)
    state.SkipWithError(why.c_str());
    return;
  }
  double seconds = 0;
  bool ok = true;
  switch (phase) {
    case Phase::kPhase1: {
      seconds = ab::TimedLoop(state, [&] {
        uint64_t size = 0;
        aclOpExecutor* ex = nullptr;
        ok &= Phase1(*c, &size, &ex) == ACLNN_SUCCESS;
        aclDestroyAclOpExecutor(ex);
      });
      break;
    }
    case Phase::kPhase2: {
      uint64_t size = 0;
      aclOpExecutor* ex = nullptr;
      aclnnStatus st = Phase1(*c, &size, &ex);
      if (st == ACLNN_SUCCESS) st = aclSetAclOpExecutorRepeatable(ex);
      if (st != ACLNN_SUCCESS) {
        aclDestroyAclOpExecutor(ex);
        state.SkipWithError(Failure("repeatable executor", st).c_str());
        return;
      }
      void* ws = size ? Workspace(size) : nullptr;
      seconds = ab::TimedLoop(state, [&] {
        ok &= Phase2(form, ws, size, ex) == ACLNN_SUCCESS;
        ok &= aclrtSynchronizeStream(g_stream) == ACL_SUCCESS;
      });
      aclDestroyAclOpExecutor(ex);
      break;
    }
    case Phase::kBoth: {
      seconds = ab::TimedLoop(state, [&] {
        uint64_t size = 0;
        aclOpExecutor* ex = nullptr;
        ok &= Phase1(*c, &size, &ex) == ACLNN_SUCCESS;
        ok &= Phase2(form, size ? Workspace(size) : nullptr, size, ex) == ACLNN_SUCCESS;
        ok &= aclrtSynchronizeStream(g_stream) == ACL_SUCCESS;
      });
      break;
    }
  }
  if (!ok) {
    state.SkipWithError((std::string("a call failed: ") + aclGetRecentErrMsg()).c_str());
    return;
  }
  if (phase == Phase::kPhase1)
    ab::SetCounters(state, seconds, 0.0, 1.0, n, t);
  else
    ab::SetCounters(state, seconds, ab::LayoutCallBytes(layout, dt, n), static_cast<double>(n), n, t);
  ab::SetPlacement(state, place);
}

// Phase one on a small case of this kind succeeds (the op takes this dtype
// and layout).
bool Accepted(const ab::OpForm& form, DType dt, Layout layout) {
  size_t n = 1024;
  while (!ab::LayoutFits(layout, n)) n *= 2;
  auto c = MakeCase(form, dt, layout, n, actgrad::inputs::PlacementAt(0));
  if (!c->tg || !c->tx || !c->tout) return false;
  uint64_t size = 0;
  aclOpExecutor* ex = nullptr;
  const aclnnStatus st = Phase1(*c, &size, &ex);
  if (st == ACLNN_SUCCESS) aclDestroyAclOpExecutor(ex);
  return st == ACLNN_SUCCESS;
}

// One complete API call on the case's views, which writes the out buffer of
// GetOperands(op, dt, n, place): the API's row of the correctness mode.
bool ApiResult(const ab::OpForm& form, DType dt, Layout layout, size_t n, const actgrad::inputs::Placement& place,
               std::string* why) {
  auto c = MakeCase(form, dt, layout, n, place);
  if (!c->tg || !c->tx || !c->tout) return *why = "aclCreateTensor failed", false;
  return CallOnce(*c, why);
}

void RegisterApiBenchmarks(const std::vector<size_t>& sizes, const std::vector<int>& threads) {
  constexpr DType kTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI8};
  for (const ab::OpForm& form : ab::OpForms()) {
    for (DType dt : kTypes) {
      for (Layout layout : ab::kLayouts) {
        if (!ab::LayoutAppliesTo(layout, form.op)) continue;
        if (!Accepted(form, dt, layout)) continue;
        for (Phase phase : {Phase::kPhase1, Phase::kPhase2, Phase::kBoth}) {
          const std::string subject = ab::FormToken(form) + "." +
                                      std::string(actgrad::DTypeName(dt)) + "." + LayoutName(layout) + "." +
                                      PhaseName(phase);
          for (size_t n : sizes) {
            if (!ab::LayoutFits(layout, n)) continue;
            for (int t : threads) {
              for (const auto& place : ab::SweepPlacements()) {
                ab::RegisterWallClock(ab::BenchName("api", subject, n, t, place),
                    [=](benchmark::State& st) {
                      actgrad::inputs::RunAtStackOffset(place, [&] { RunApiBenchmark(st, form, dt, layout, phase, n, t, place); });
                    });
              }
            }
          }
        }
      }
    }
  }
}

// Checks, registers and runs; the exit status of the program.
int CheckAndRun() {
  // The correctness mode runs before any timing: a peer (or the API) that
  // computes another formula or other parameters fails the run here.
  const bool only = ab::CheckPeersOnlyFlag();
  if (!ab::CheckPeers(ApiResult, only ? stdout : stderr, /*every_case=*/only)) {
    std::fprintf(stderr, "actgrad-bench: the peer check failed (the lines above say where); nothing timed\n");
    return 1;
  }
  if (only) return 0;

  const auto sizes = ab::SweepSizes();
  const auto threads = ab::SweepThreads();
  ab::RegisterRoofBenchmarks(sizes, threads);
  RegisterApiBenchmarks(sizes, threads);
  ab::RegisterPeerBenchmarks(sizes, threads, ApiResult);

  ab::ContextInfo info;
  info.tiling_table = &actgrad::ActiveTableName != nullptr ? actgrad::ActiveTableName() : "unknown";
  if (&actgrad::ActiveTableFreshnessSummary != nullptr) info.tiling_table_freshness = actgrad::ActiveTableFreshnessSummary();
  info.variant_targets = "";
  info.peers = ab::PeerNames();
  info.binary = "actgrad-bench";
  ab::AddContext(info);

  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ab::ParseOwnFlags(&argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS ||
      aclrtCreateStream(&g_stream) != ACL_SUCCESS) {
    std::fprintf(stderr, "actgrad-bench: acl runtime start-up failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  const int status = CheckAndRun();
  ab::CacheClear();  // free the cases before the runtime goes
  aclrtDestroyStream(g_stream);
  aclrtResetDevice(0);
  aclFinalize();
  return status;
}
