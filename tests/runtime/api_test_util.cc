#include "api_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace apitest {

namespace {
int32_t g_device = 0;
aclrtStream g_stream = nullptr;
}  // namespace

void AclEnv::SetUp() {
  ASSERT_EQ(aclInit(nullptr), ACL_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtSetDevice(g_device), ACL_SUCCESS) << ErrMsg();
  ASSERT_EQ(aclrtCreateStream(&g_stream), ACL_SUCCESS) << ErrMsg();
  ASSERT_NE(g_stream, nullptr);
}

void AclEnv::TearDown() {
  EXPECT_EQ(aclrtDestroyStream(g_stream), ACL_SUCCESS);
  EXPECT_EQ(aclrtResetDevice(g_device), ACL_SUCCESS);
  EXPECT_EQ(aclFinalize(), ACL_SUCCESS);
  g_stream = nullptr;
}

aclrtStream AclEnv::stream() { return g_stream; }

std::string ErrMsg() {
  const char* m = aclGetRecentErrMsg();
  return m ? std::string(m) : std::string();
}

std::string SpecName(const OpSpec& s) {
  std::string n = Name(s.op);
  char buf[64];
  switch (s.op) {
    case Op::kGeluBwd:
      n += s.gelu_v2 ? (s.p.gelu_approx == GeluApprox::kTanh ? "(V2 tanh)" : "(V2 none)") : "(V1)";
      break;
    case Op::kSoftshrinkBwd:
      std::snprintf(buf, sizeof buf, "(lambd=%.9g)", double(s.p.lambd));
      n += buf;
      break;
    case Op::kLogitGrad:
      std::snprintf(buf, sizeof buf, "(eps=%.9g)", double(s.p.eps));
      n += buf;
      break;
    default: break;
  }
  return n;
}

aclnnStatus GetWorkspace(const OpSpec& s, const aclTensor* g, const aclTensor* x, aclTensor* out, uint64_t* ws,
                         aclOpExecutor** ex, ScalarPtr* holder, const aclScalar* lambd, bool force_null_lambd) {
  switch (s.op) {
    case Op::kSeluBwd: return aclnnSeluBackwardGetWorkspaceSize(g, x, out, ws, ex);
    case Op::kHardswishBwd: return aclnnHardswishBackwardGetWorkspaceSize(g, x, out, ws, ex);
    case Op::kGeluBwd: {
      if (!s.gelu_v2 && s.p.gelu_approx == GeluApprox::kNone && !s.approximate)
        return aclnnGeluBackwardGetWorkspaceSize(g, x, out, ws, ex);
      static char kNone[] = "none";
      static char kTanh[] = "tanh";
      std::string custom = s.approximate ? s.approximate : "";
      char* approx = s.approximate ? custom.data() : (s.p.gelu_approx == GeluApprox::kTanh ? kTanh : kNone);
      return aclnnGeluBackwardV2GetWorkspaceSize(g, x, approx, out, ws, ex);
    }
    case Op::kSoftshrinkBwd: {
      const aclScalar* l = lambd;
      if (!l && !force_null_lambd) {
        *holder = MakeFloatScalar(s.p.lambd);
        l = holder->get();
      }
      return aclnnSoftshrinkBackwardGetWorkspaceSize(g, x, l, out, ws, ex);
    }
    case Op::kLogitGrad: return aclnnLogitGradGetWorkspaceSize(x, g, double(s.p.eps), out, ws, ex);
  }
  return -1;
}

aclnnStatus Execute(const OpSpec& s, void* workspace, uint64_t ws, aclOpExecutor* ex, aclrtStream stream) {
  switch (s.op) {
    case Op::kSeluBwd: return aclnnSeluBackward(workspace, ws, ex, stream);
    case Op::kHardswishBwd: return aclnnHardswishBackward(workspace, ws, ex, stream);
    case Op::kGeluBwd:
      if (!s.gelu_v2 && s.p.gelu_approx == GeluApprox::kNone && !s.approximate)
        return aclnnGeluBackward(workspace, ws, ex, stream);
      return aclnnGeluBackwardV2(workspace, ws, ex, stream);
    case Op::kSoftshrinkBwd: return aclnnSoftshrinkBackward(workspace, ws, ex, stream);
    case Op::kLogitGrad: return aclnnLogitGrad(workspace, ws, ex, stream);
  }
  return -1;
}

::testing::AssertionResult IsOk(const RunResult& r) {
  if (r.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "phase1=" << r.phase1 << " phase2=" << r.phase2 << " sync=" << r.sync
                                       << " msg='" << ErrMsg() << "'";
}

RunResult RunOp(const OpSpec& s, const Tensor& g, const Tensor& x, Tensor& out, aclrtStream stream) {
  if (!stream) stream = AclEnv::stream();
  RunResult r;
  uint64_t ws = 0;
  aclOpExecutor* ex = nullptr;
  ScalarPtr holder;
  r.phase1 = GetWorkspace(s, g.get(), x.get(), out.get(), &ws, &ex, &holder);
  if (r.phase1 != ACLNN_SUCCESS) return r;
  r.workspace = ws;
  void* w = nullptr;
  if (ws > 0 && aclrtMalloc(&w, ws, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return r;
  r.phase2 = Execute(s, w, ws, ex, stream);
  r.sync = aclrtSynchronizeStream(stream);
  if (w) aclrtFree(w);
  return r;
}

double RefValue(const OpSpec& s, double g, double x) { return actgrad::ref::Reference(s.op, g, x, s.p); }

namespace {

// Offsets of an input for an output multi-index under NumPy broadcasting.
struct BcastMap {
  const Tensor* t;
  size_t lead;  // out rank - input rank
  int64_t Offset(const int64_t* out_idx) const {
    const Dims& d = t->dims();
    const Dims& s = t->strides();
    int64_t o = t->offset();
    for (size_t j = 0; j < d.size(); ++j)
      if (d[j] != 1) o += out_idx[lead + j] * s[j];
    return o;
  }
};

// g = +-Inf times a derivative that is tiny: the double reference gives
// +-Inf, or NaN where the derivative underflows or cancels to 0 in double
// (GELU tanh at x = -10: tanh rounds to -1), while a fp32 kernel whose
// derivative is within the rule's absolute floor (|g|/16 * hard bound) may
// compute it as 0 (NaN) or as a tiny non-zero (+-Inf). The rule cannot tell
// these apart for finite g, so for infinite g both outcomes are accepted when
// |derivative| is under that floor. Not for Hardswish, whose derivative
// x/3 + 0.5 is exactly 0 at the representable x = -1.5 (NaN required there).
bool InfiniteGradAmbiguous(const OpSpec& s, DType ot, double g, double x, double out, double ref) {
  (void)ref;
  if (!std::isinf(g) || std::isnan(x) || std::isinf(x) || s.op == Op::kHardswishBwd) return false;
  const double factor = RefValue(s, 1.0, x);
  if (std::isnan(factor) || std::isinf(factor)) return false;
  if (std::fabs(factor) >= actgrad::RuleFor(ot).hard_bound / 16.0) return false;
  if (factor == 0.0 && (s.op == Op::kSoftshrinkBwd || s.op == Op::kLogitGrad)) return false;  // literal zeros
  return std::isnan(out) || std::isinf(out);
}

// Results at the overflow boundary: a reference just past the largest finite
// value expects Inf, but a kernel within the hard bound may land on either
// side (e.g. g = max finite times a factor of 1 + 6e-7). Accept both when the
// finite side is within the hard bound of the reference.
bool OverflowAmbiguous(DType ot, double out, double ref) {
  if (!std::isinf(out) && !(std::fabs(ref) > 0.5 * MaxFinite(ot))) return false;  // the common case, fast
  if (!actgrad::IsFloat(ot) || std::isnan(ref) || std::isinf(ref) || std::isnan(out)) return false;
  const double hb = actgrad::RuleFor(ot).hard_bound;
  const double rounded = RoundVal(ot, ref);
  if (std::isinf(rounded) && std::isfinite(out)) return std::fabs(out - ref) < hb * std::fabs(ref);
  if (std::isfinite(rounded) && std::isinf(out))
    return (out > 0) == (ref > 0) && std::fabs(ref) >= MaxFinite(ot) * (1.0 - hb);
  return false;
}

template <typename I>
bool SeluIntOk(double g, double y, double out) {
  const I a = actgrad::ref::SeluBwdInt<I>(I(g), I(y));
  const double exact = y > 0 ? g * actgrad::ref::kSeluScale : g * (y + actgrad::ref::kSeluAlpha * actgrad::ref::kSeluScale);
  const I b = SaturateInt<I>(exact);
  return out == double(a) || out == double(b);
}

}  // namespace

actgrad::AccuracyReport Check(const OpSpec& s, const Tensor& g, const Tensor& x, const Tensor& out) {
  const DType ot = out.dtype();
  actgrad::AccuracyChecker checker(actgrad::IsFloat(ot) ? ot : DType::kF32);
  const actgrad::AccuracyRule rule = actgrad::RuleFor(ot);
  std::string failures;
  uint64_t ambiguous = 0;
  actgrad::AccuracyReport int_report;
  const bool is_int = !actgrad::IsFloat(ot);
  const size_t r = out.dims().size();
  if (g.dims().size() > r || x.dims().size() > r) {
    actgrad::AccuracyReport bad;
    bad.pass = false;
    bad.first_failure = "test bug: input rank above output rank";
    return bad;
  }
  BcastMap gm{&g, r - g.dims().size()}, xm{&x, r - x.dims().size()};
  bool list_failures = false;
  auto visit = [&](const int64_t* idx, int64_t) {
    const double gv = g.GetAt(gm.Offset(idx));
    const double xv = x.GetAt(xm.Offset(idx));
    const double ov = out.GetAt(out.OffsetOf(idx));
    if (is_int) {
      ++int_report.count;
      const bool ok = ot == DType::kI32 ? SeluIntOk<int32_t>(gv, xv, ov) : SeluIntOk<int8_t>(gv, xv, ov);
      if (ok) {
        ++int_report.under_threshold;
      } else {
        ++int_report.over_hard_bound;
        if (int_report.first_failure.empty()) {
          char buf[160];
          std::snprintf(buf, sizeof buf, "y=%.0f g=%.0f: got %.0f, reference %d", xv, gv, ov,
                        ot == DType::kI32 ? int(actgrad::ref::SeluBwdInt<int32_t>(int32_t(gv), int32_t(xv)))
                                          : int(actgrad::ref::SeluBwdInt<int8_t>(int8_t(gv), int8_t(xv))));
          int_report.first_failure = buf;
        }
      }
      return;
    }
    const double ref = RefValue(s, gv, xv);
    if (InfiniteGradAmbiguous(s, ot, gv, xv, ov, ref) || OverflowAmbiguous(ot, ov, ref)) {
      ++ambiguous;
      return;
    }
    checker.Add(ov, ref, gv, xv);
    if (list_failures && failures.size() < 1000 && actgrad::ElementError(ot, ov, ref, gv) >= rule.hard_bound) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "\n    x=%.9g g=%.9g: got %.9g, reference %.9g", xv, gv, ov, ref);
      failures += buf;
    }
  };
  ForEachIndex(out.dims(), visit);
  if (is_int) {
    int_report.pass = int_report.over_hard_bound == 0;
    return int_report;
  }
  actgrad::AccuracyReport rep = checker.Report();
  // The rule's share is proven over the spec's accuracy inputs (every fp16
  // and bf16 input; a million fp32 values); a test tensor is a sample of a
  // few hundred or thousand elements, where a shipping variant that keeps
  // 99.999 % under the threshold can still put one element over it (GELU f16
  // erf_pw3 on a 29 x 33 view: 1 of 956, 99.895 % < 99.9 %). One element of
  // slack in the share; the hard bound and the specials stay strict.
  const uint64_t over = rep.count - rep.under_threshold;
  if (!rep.pass && rep.special_mismatch == 0 && rep.over_hard_bound == 0 &&
      double(over) <= std::floor((1.0 - rule.share) * double(rep.count)) + 1.0) {
    rep.pass = true;
    rep.first_failure.clear();
  }
  if (!rep.pass) {  // second pass: list the first failing elements
    list_failures = true;
    checker = actgrad::AccuracyChecker(ot);
    ForEachIndex(out.dims(), visit);
    if (!failures.empty()) rep.first_failure += "; failing elements:" + failures;
  }
  (void)ambiguous;
  return rep;
}

::testing::AssertionResult Passes(const actgrad::AccuracyReport& r) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "count=%llu share=%.6f max_err=%.3g max_ulp=%.3g special_mismatch=%llu over_hard=%llu",
                (unsigned long long)r.count, r.Share(), r.max_err, r.max_ulp,
                (unsigned long long)r.special_mismatch, (unsigned long long)r.over_hard_bound);
  if (r.pass) return ::testing::AssertionSuccess() << buf;
  return ::testing::AssertionFailure() << buf << "; first failure: " << r.first_failure;
}

::testing::AssertionResult RunAndCheck(const OpSpec& s, const Tensor& g, const Tensor& x, Tensor& out) {
  const auto snap = out.Snapshot();
  const RunResult rr = RunOp(s, g, x, out);
  if (!rr.ok()) return ::testing::AssertionFailure() << SpecName(s) << ": " << IsOk(rr).message();
  auto rep = Check(s, g, x, out);
  auto p = Passes(rep);
  if (!p) return ::testing::AssertionFailure() << SpecName(s) << ": " << p.message();
  auto w = out.OnlyViewChanged(snap);
  if (!w) return ::testing::AssertionFailure() << SpecName(s) << ": " << w.message();
  return ::testing::AssertionSuccess();
}

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// Random input values in the op's range, a few specials mixed in.
double RandomInput(const OpSpec& s, bool is_g, DType t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (!actgrad::IsFloat(t)) return std::floor(-100.0 + 200.0 * u(rng));
  if (rng() % 97 == 0) {
    static const double sp[] = {kNaN, kInf, -kInf, 0.0, -0.0, 1e-40, -1e-40};
    return sp[rng() % 7];
  }
  if (is_g) return -2.0 + 4.0 * u(rng);
  switch (s.op) {
    case Op::kSeluBwd: return -1.7 + 6.0 * u(rng);
    case Op::kHardswishBwd: return (rng() % 11 == 0) ? ((rng() & 1) ? 3.0 : -3.0) : -5.0 + 10.0 * u(rng);
    case Op::kGeluBwd: return -6.0 + 12.0 * u(rng);
    case Op::kSoftshrinkBwd: return (rng() % 11 == 0) ? ((rng() & 1) ? s.p.lambd : -s.p.lambd) : -2.0 + 4.0 * u(rng);
    case Op::kLogitGrad: return -0.1 + 1.2 * u(rng);
  }
  return 0;
}

void FillInputs(const OpSpec& s, Tensor& g, Tensor& x, uint64_t seed) {
  std::mt19937_64 rng(seed);
  g.FillFn([&](int64_t) { return RandomInput(s, true, g.dtype(), rng); });
  x.FillFn([&](int64_t) { return RandomInput(s, false, x.dtype(), rng); });
}

void PrintTo(const OpType& c, std::ostream* os) { *os << c.name; }

std::vector<OpType> OpTypes() {
  std::vector<OpType> v;
  const std::vector<std::pair<std::string, OpSpec>> specs = {
      {"selu", Spec(Op::kSeluBwd)},          {"hardswish", Spec(Op::kHardswishBwd)},
      {"gelu", Spec(Op::kGeluBwd)},          {"gelu_tanh", GeluTanh()},
      {"softshrink", Softshrink(0.5f)},      {"logit_m1", Logit(-1.0f)},
      {"logit_0_25", Logit(0.25f)},
  };
  for (const auto& [n, s] : specs) {
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) v.push_back({n + "_" + Name(t), s, t});
    if (s.op == Op::kSeluBwd)
      for (DType t : {DType::kI32, DType::kI8}) v.push_back({n + "_" + Name(t), s, t});
  }
  return v;
}

}  // namespace apitest
