// The five aclnn operators: phase one validates and plans, phase two runs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <unordered_set>

#include "acl/acl.h"
#include "aclnnop/aclnn_gelu_backward.h"
#include "aclnnop/aclnn_hardswish_backward.h"
#include "aclnnop/aclnn_logit_grad.h"
#include "aclnnop/aclnn_selu_backward.h"
#include "aclnnop/aclnn_softshrink_backward.h"
#include "runtime/error.h"
#include "runtime/objects.h"
#include "runtime/stream.h"

namespace actgrad::rt {
namespace {

std::mutex g_exec_mu;
std::unordered_set<aclOpExecutor*>& LiveExecutors() {
  static auto* s = new std::unordered_set<aclOpExecutor*>;
  return *s;
}

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
    if (!IsAclDataType(t[i]->dtype))
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has dtype %d, which is no aclDataType", s.name, s.names[i],
                  int(t[i]->dtype));
    bool ok = FromAclDataType(t[i]->dtype, &dt[i]);
    ok = ok && OpHasDType(s.op, dt[i]);
    if (!ok) return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s has unsupported dtype %d", s.name, s.names[i], int(t[i]->dtype));
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
  if (OpBroadcasts(s.op)) {
    std::vector<int64_t> shape;
    if (const int st = BroadcastShapes(s.name, g, x, &shape)) return st;
    if (shape != out->dims)
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s shape must be the broadcast shape of %s and %s", s.name, s.names[2],
                  s.names[0], s.names[1]);
  } else if (g->dims != x->dims || g->dims != out->dims) {
    return Fail(ACLNN_ERR_PARAM_INVALID, "%s: %s, %s and %s must have the same shape", s.name, s.names[0], s.names[1],
                s.names[2]);
  }
  if (const int st = CheckNoSelfOverlap(s.name, s.names[2], out)) return st;

  auto* e = new aclOpExecutor;
  e->plan.op = s.op;
  e->plan.params = params;
  e->plan.dtype = dt[2];
  if (const int st = BuildPlan(s.name, s.names, &e->plan, g, x, out)) {
    delete e;
    return st;
  }
  if (!e->plan.kernel.variant) {
    delete e;
    return Fail(ACLNN_ERR_INNER, "%s: no kernel variant for dtype %s", s.name, DTypeName(dt[2]).data());
  }
  {
    std::lock_guard<std::mutex> lock(g_exec_mu);
    LiveExecutors().insert(e);
  }
  *ws = e->plan.workspace;
  *exec = e;
  return ACLNN_SUCCESS;
}

// Phase two. The executor is claimed under g_exec_mu before it runs: a
// one-shot one leaves the live set (a second launch, a destroy or a
// SetRepeatable meanwhile sees it spent), a repeatable one counts itself in
// flight (a destroy meanwhile leaves the delete to the last launch). No lock
// is held while the plan runs.
aclnnStatus Launch(const char* name, void* workspace, uint64_t ws_size, aclOpExecutor* e, aclrtStream stream) {
  ClearError();
  if (!e) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: executor is null", name);
  bool one_shot;
  {
    std::lock_guard<std::mutex> lock(g_exec_mu);
    if (!LiveExecutors().count(e))
      return Fail(ACLNN_ERR_PARAM_INVALID,
                  "%s: executor is not live (already run without aclSetAclOpExecutorRepeatable, or destroyed)", name);
    if (stream && !IsLiveStream(stream)) return Fail(ACLNN_ERR_PARAM_INVALID, "%s: stream is not a live stream", name);
    if (ws_size < e->plan.workspace)
      return Fail(ACLNN_ERR_PARAM_INVALID, "%s: workspaceSize %llu is smaller than the %llu bytes phase one asked for",
                  name, (unsigned long long)ws_size, (unsigned long long)e->plan.workspace);
    if (e->plan.workspace > 0 && !workspace) return Fail(ACLNN_ERR_PARAM_NULLPTR, "%s: workspace is null", name);
    one_shot = !e->repeatable;
    if (one_shot) LiveExecutors().erase(e);
    else ++e->in_flight;
  }
  Execute(e->plan, workspace);
  bool last = one_shot;
  if (!one_shot) {
    std::lock_guard<std::mutex> lock(g_exec_mu);
    last = --e->in_flight == 0 && e->destroy_pending;
  }
  if (last) delete e;
  return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace actgrad::rt

using namespace actgrad;
using namespace actgrad::rt;

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* e) {
  if (!e) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclSetAclOpExecutorRepeatable: executor is null");
  std::lock_guard<std::mutex> lock(g_exec_mu);
  if (!LiveExecutors().count(e)) return Fail(ACLNN_ERR_PARAM_INVALID, "aclSetAclOpExecutorRepeatable: executor is not live");
  e->repeatable = true;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* e) {
  if (!e) return Fail(ACLNN_ERR_PARAM_NULLPTR, "aclDestroyAclOpExecutor: executor is null");
  std::lock_guard<std::mutex> lock(g_exec_mu);
  if (!LiveExecutors().erase(e)) return Fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyAclOpExecutor: executor is not live");
  if (e->in_flight > 0) e->destroy_pending = true;  // the last running launch deletes it
  else delete e;
  return ACLNN_SUCCESS;
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
