// The five aclnn operators: phase one validates and plans, phase two runs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <initializer_list>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_hardswish_backward.h"
#include "aclnnop/aclnn_logit_grad.h"
#include "aclnnop/aclnn_selu_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "runtime/error.h"
#include "runtime/objects.h"
#include "runtime/slot_pool.h"
#include "runtime/stream.h"

namespace actgrad::rt {
namespace {

// Every executor ever made (never freed: runtime/slot_pool.h).
SlotPool<aclOpExecutor>& Executors() {
  static auto* p = new SlotPool<aclOpExecutor>;
  return *p;
}

// e is an executor of ours and was live when state s was read (acquire).
bool LoadLive(const aclOpExecutor* e, uint64_t* s) {
  if (!Executors().Contains(e)) return false;
  *s = e->state.load(std::memory_order_acquire);
  return (*s & kExecLive) != 0;
}

// The launches running now, in state s.
uint64_t InFlight(uint64_t s) { return s / kExecInFlight; }

// An aclnn entry point: its op's dtypes, broadcasting and promotion are the
// op's facts (actgrad/types.h FactsOf).
struct OpSpec {
  const char* name;
  Op op;
  const char* names[3];  // argument names for messages: g, x, out
};

// FLOAT with anything -> FLOAT; FLOAT16 with BFLOAT16 -> FLOAT.
DType Promote(DType a, DType b) { return a == b ? a : DType::kF32; }

aclnnStatus Prepare(const OpSpec& s, const aclTensor* g, const aclTensor* x, const aclTensor* out,
                    const OpParams& params, uint64_t* ws, aclOpExecutor** exec) {
  ClearError();
  const aclTensor* t[3] = {g, x, out};
  for (int i = 0; i < 3; ++i)
    if (!t[i]) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: %s is null", s.name, s.names[i]);
  if (!ws) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspaceSize is null", s.name);
  if (!exec) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is null", s.name);
  DType dt[3];
  for (int i = 0; i < 3; ++i) {  // the dtype first: the view checks need its element size
    if (!FromAclDataType(t[i]->dtype, &dt[i]) || !OpHasDType(s.op, dt[i])) {  // (every DType is an aclDataType)
      if (!IsAclDataType(t[i]->dtype))
        return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has dtype %d, which is no aclDataType", s.name, s.names[i],
                    int(t[i]->dtype));
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has unsupported dtype %d", s.name, s.names[i], int(t[i]->dtype));
    }
    if (t[i]->checked_esize != DTypeSize(dt[i]))  // else it passed at aclCreateTensor (the same check)
      if (const int st = CheckTensor(s.name, s.names[i], t[i], DTypeSize(dt[i]))) return st;
  }
  if (FactsOf(s.op).promotes) {
    const DType p = Promote(dt[0], dt[1]);
    if (dt[2] != p)
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s dtype %s must be the promoted dtype %s of %s and %s", s.name,
                  s.names[2], DTypeName(dt[2]).data(), DTypeName(p).data(), s.names[0], s.names[1]);
  } else if (dt[0] != dt[1] || dt[0] != dt[2]) {
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s, %s and %s must have the same dtype (%s, %s, %s)", s.name, s.names[0],
                s.names[1], s.names[2], DTypeName(dt[0]).data(), DTypeName(dt[1]).data(), DTypeName(dt[2]).data());
  }
  const bool same_dims = SameDims(g, out) && SameDims(x, out);
  if (OpBroadcasts(s.op) && !same_dims) {  // (equal shapes broadcast to themselves)
    int64_t shape[kMaxDims];
    size_t nd = 0;
    if (const int st = BroadcastShapes(s.name, g, x, shape, &nd)) return st;
    if (nd != out->dims.size() || !std::equal(shape, shape + nd, out->dims.begin()))
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be the broadcast shape of %s and %s", s.name, s.names[2],
                  s.names[0], s.names[1]);
  } else if (!OpBroadcasts(s.op) && !same_dims) {
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s, %s and %s must have the same shape", s.name, s.names[0], s.names[1],
                s.names[2]);
  }
  if (!out->no_self_overlap)  // else it passed at aclCreateTensor (the same check)
    if (const int st = CheckNoSelfOverlap(s.name, s.names[2], out)) return st;

  aclOpExecutor* e = Executors().Take();  // busy, not live: no other call touches it
  if (!e) return Fail(ACLNN_ERR_INNER, "%s: out of memory for an executor", s.name);
  // BuildPlan writes every field of the plan that Execute reads (the slot's
  // last plan is overwritten, never merged).
  e->plan.op = s.op;
  e->plan.params = params;
  e->plan.dtype = dt[2];
  const bool uniform = same_dims && dt[0] == dt[2] && dt[1] == dt[2];
  if (const int st = BuildPlan(s.name, s.names, &e->plan, g, x, out, uniform)) {
    SlotPool<aclOpExecutor>::Give(e);
    return st;
  }
  if (!e->plan.kernel.variant) {
    SlotPool<aclOpExecutor>::Give(e);
    return Fail(ACLNN_ERR_INNER, "%s: no kernel variant for dtype %s", s.name, DTypeName(dt[2]).data());
  }
  const uint64_t workspace = e->plan.workspace;
  std::atomic_thread_fence(std::memory_order_release);  // after Take's state change (Launch's seqlock read)
  e->workspace.store(workspace, std::memory_order_relaxed);
  // Live: publishes the plan to whichever thread launches it.
  e->state.store(e->state.load(std::memory_order_relaxed) | kExecLive, std::memory_order_release);
  *ws = workspace;
  *exec = e;
  return ACLNN_SUCCESS;
}

// Phase two. The launch claims the executor by a compare-exchange on its
// state after the checks (objects.h): a one-shot one stops being live (a
// second launch, a destroy or a SetRepeatable meanwhile sees it spent), a
// repeatable one counts itself in flight (a destroy meanwhile leaves the
// return of the slot to the last launch). The checks read the state they
// claim: a state changed meanwhile (another launch, a destroy, the slot
// reused) fails the exchange and they run again. No lock is taken.
aclnnStatus Launch(const char* name, void* workspace, uint64_t ws_size, aclOpExecutor* e, aclrtStream stream) {
  ClearError();
  if (!e) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is null", name);
  uint64_t s;
  bool live = LoadLive(e, &s);
  if (live && stream && !IsLiveStream(stream)) return Fail(ACLNN_ERR_PARAM_INVALID, "%s: stream is not a live stream", name);
  for (;; live = (s & kExecLive) != 0) {
    if (!live)
      return Fail(ACLNN_ERR_PARAM_INVALID,
                  "%s: executor is not live (already run without aclSetAclOpExecutorRepeatable, or destroyed)", name);
    // The workspace phase one asked for, of the generation of s (a seqlock
    // read: phase one stores it after a release fence, once its Take changed
    // the state).
    const uint64_t need = e->workspace.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (e->state.load(std::memory_order_relaxed) != s) {
      s = e->state.load(std::memory_order_acquire);
      continue;
    }
    if (ws_size < need)
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: workspaceSize %llu is smaller than the %llu bytes phase one asked for",
                  name, (unsigned long long)ws_size, (unsigned long long)need);
    if (need > 0 && !workspace) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspace is null", name);
    const uint64_t claimed = ((s & kExecRepeatable) ? s : s & ~kExecLive) + kExecInFlight;
    if (e->state.compare_exchange_weak(s, claimed, std::memory_order_acq_rel, std::memory_order_acquire)) break;
  }
  Execute(e->plan, workspace);
  if (!(s & kExecRepeatable)) {  // one-shot: no longer live, so no other call changes its state; ours to return
    SlotPool<aclOpExecutor>::Give(e);
    return ACLNN_SUCCESS;
  }
  const uint64_t after = e->state.fetch_sub(kExecInFlight, std::memory_order_acq_rel) - kExecInFlight;
  if (!(after & kExecLive) && InFlight(after) == 0) SlotPool<aclOpExecutor>::Give(e);
  return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace actgrad::rt

using namespace actgrad;
using namespace actgrad::rt;

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* e) {
  if (!e) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclSetAclOpExecutorRepeatable: executor is null");
  uint64_t s;
  for (bool live = LoadLive(e, &s);; live = (s & kExecLive) != 0) {
    if (!live) return Fail(ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable: executor is not live");
    if (e->state.compare_exchange_weak(s, s | kExecRepeatable, std::memory_order_acq_rel, std::memory_order_acquire))
      return ACLNN_SUCCESS;
  }
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* e) {
  if (!e) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclDestroyAclOpExecutor: executor is null");
  uint64_t s;
  for (bool live = LoadLive(e, &s);; live = (s & kExecLive) != 0) {
    if (!live) return Fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor: executor is not live");
    // Launches running: the last of them returns the slot; else it is free now.
    if (e->state.compare_exchange_weak(s, s & ~kExecLive, std::memory_order_acq_rel, std::memory_order_acquire)) {
      if (InFlight(s) == 0) SlotPool<aclOpExecutor>::Give(e);
      return ACLNN_SUCCESS;
    }
  }
}

aclnnStatus aclnnSeluBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* result,
                                              aclTensor* gradInput, uint64_t* ws, aclOpExecutor** ex) {
  static const OpSpec s{"aclnnSeluBackward", Op::kSeluBwd, {"gradOutput", "result", "gradInput"}};
  return Prepare(s, gradOutput, result, gradInput, OpParams{}, ws, ex);
}
aclnnStatus aclnnSeluBackward(void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) {
  return Launch("aclnnSeluBackward", w, n, e, st);
}

aclnnStatus aclnnHardswishBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self, aclTensor* out,
                                                   uint64_t* ws, aclOpExecutor** ex) {
  static const OpSpec s{"aclnnHardswishBackward", Op::kHardswishBwd, {"gradOutput", "self", "out"}};
  return Prepare(s, gradOutput, self, out, OpParams{}, ws, ex);
}
aclnnStatus aclnnHardswishBackward(void* w, uint64_t n, aclOpExecutor* e, const aclrtStream st) {
  return Launch("aclnnHardswishBackward", w, n, e, st);
}

static aclnnStatus GeluPrepare(const char* name, const aclTensor* g, const aclTensor* x, const aclTensor* out,
                               GeluApprox mode, uint64_t* ws, aclOpExecutor** ex) {
  const OpSpec s{name, Op::kGeluBwd, {"gradOutput", "self", "gradInput"}};
  OpParams p;
  p.gelu_approx = mode;
  return Prepare(s, g, x, out, p, ws, ex);
}

aclnnStatus aclnnGeluBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,
                                              const aclTensor* gradInput, uint64_t* ws, aclOpExecutor** ex) {
  return GeluPrepare("aclnnGeluBackward", gradOutput, self, gradInput, GeluApprox::kNone, ws, ex);
}
aclnnStatus aclnnGeluBackward(void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) {
  return Launch("aclnnGeluBackward", w, n, e, st);
}

aclnnStatus aclnnGeluBackwardV2GetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self, char* approximate,
                                                aclTensor* gradInput, uint64_t* ws, aclOpExecutor** ex) {
  ClearError();
  if (!approximate) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclnnGeluBackwardV2: approximate is null");
  GeluApprox mode;
  if (std::strcmp(approximate, "none") == 0) mode = GeluApprox::kNone;
  else if (std::strcmp(approximate, "tanh") == 0) mode = GeluApprox::kTanh;
  else return Fail(ACLNN_ERR_PARAM_INVALID, "aclnnGeluBackwardV2: approximate must be \"none\" or \"tanh\", got \"%.32s\"", approximate);
  return GeluPrepare("aclnnGeluBackwardV2", gradOutput, self, gradInput, mode, ws, ex);
}
aclnnStatus aclnnGeluBackwardV2(void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) {
  return Launch("aclnnGeluBackwardV2", w, n, e, st);
}

aclnnStatus aclnnSoftshrinkBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,
                                                    const aclScalar* lambd, aclTensor* gradInput, uint64_t* ws,
                                                    aclOpExecutor** ex) {
  static const OpSpec s{"aclnnSoftshrinkBackward", Op::kSoftshrinkBwd, {"gradOutput", "self", "gradInput"}};
  ClearError();
  if (!lambd) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclnnSoftshrinkBackward: lambd is null");
  if (!(lambd->value >= 0.0))
    return Fail(ACLNN_ERR_PARAM_INVALID, "aclnnSoftshrinkBackward: lambd must be >= 0, got %g", lambd->value);
  OpParams p;
  p.lambd = float(lambd->value);
  return Prepare(s, gradOutput, self, gradInput, p, ws, ex);
}
aclnnStatus aclnnSoftshrinkBackward(void* w, uint64_t n, aclOpExecutor* e, const aclrtStream st) {
  return Launch("aclnnSoftshrinkBackward", w, n, e, st);
}

// eps arrives as a double; the kernels compare in fp32. Keep eps's rule class
// (NaN, >1, ==1, <0) intact when rounding it to fp32.
static float EpsToFloat(double eps) {
  float f = float(eps);
  if (eps > 1.0 && f <= 1.0f) f = std::nextafter(1.0f, 2.0f);
  if (eps < 1.0 && f >= 1.0f) f = std::nextafter(1.0f, 0.0f);
  if (eps < 0.0 && f == 0.0f) f = -std::numeric_limits<float>::denorm_min();
  return f;
}

aclnnStatus aclnnLogitGradGetWorkspaceSize(const aclTensor* x, const aclTensor* dy, double eps, const aclTensor* out,
                                           uint64_t* ws, aclOpExecutor** ex) {
  static const OpSpec s{"aclnnLogitGrad", Op::kLogitGrad, {"dy", "x", "out"}};
  OpParams p;
  p.eps = EpsToFloat(eps);
  return Prepare(s, dy, x, out, p, ws, ex);
}
aclnnStatus aclnnLogitGrad(void* w, uint64_t n, aclOpExecutor* e, aclrtStream st) {
  return Launch("aclnnLogitGrad", w, n, e, st);
}

}  // extern "C"
