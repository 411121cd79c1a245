// Per-target evaluation of every kernels/math policy (foreach_target).
#include <cmath>
#include <cstring>
#include <limits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "math_eval.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "math/approx_list-inl.h"
#include "math_eval.h"

HWY_BEFORE_NAMESPACE();
namespace actgrad {
namespace HWY_NAMESPACE {
namespace {

template <class Policy, class D>
void RunFactor(D d, const float* x, float* out, size_t n) {
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Policy::Factor(d, hn::LoadU(d, x + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
    std::memcpy(buf, x + i, (n - i) * sizeof(float));
    hn::Store(Policy::Factor(d, hn::Load(d, buf)), d, buf);
    std::memcpy(out + i, buf, (n - i) * sizeof(float));
  }
}

template <class Policy, class D>
void RunDiv(D d, const float* x, const float* y, float* out, size_t n) {
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N)
    hn::StoreU(Policy::Div(d, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float bx[hn::MaxLanes(d)] = {};
    HWY_ALIGN float by[hn::MaxLanes(d)];
    for (auto& v : by) v = 1.0f;
    std::memcpy(bx, x + i, (n - i) * sizeof(float));
    std::memcpy(by, y + i, (n - i) * sizeof(float));
    hn::Store(Policy::Div(d, hn::Load(d, bx), hn::Load(d, by)), d, bx);
    std::memcpy(out + i, bx, (n - i) * sizeof(float));
  }
}

template <class D>
bool EvalMathD(D d, int kind, const char* name, const float* x, const float* y, float* out,
               size_t n, double* claimed) {
#define ACTGRAD_EVAL_FACTOR(P)                                  \
  if (std::strcmp(name, P::kName) == 0) {                       \
    static_assert(P::kAvailable, "listed but not available");   \
    RunFactor<P>(d, x, out, n);                                 \
    *claimed = P::kClaimedMaxErr;                               \
    return true;                                                \
  }
#define ACTGRAD_EVAL_DIV(P)                                     \
  if (std::strcmp(name, P::kName) == 0) {                       \
    static_assert(P::kAvailable, "listed but not available");   \
    RunDiv<P>(d, x, y, out, n);                                 \
    *claimed = P::kClaimedMaxErr;                               \
    return true;                                                \
  }
  if (kind == 0) {
    ACTGRAD_FOR_EACH_GELU_ERF_APPROX(ACTGRAD_EVAL_FACTOR)
  } else if (kind == 1) {
    ACTGRAD_FOR_EACH_GELU_TANH_APPROX(ACTGRAD_EVAL_FACTOR)
  } else if (kind == 2) {
    ACTGRAD_FOR_EACH_DIV_APPROX(ACTGRAD_EVAL_DIV)
  }
#undef ACTGRAD_EVAL_FACTOR
#undef ACTGRAD_EVAL_DIV
  return false;
}

}  // namespace

// cap: 0 = full vectors (ScalableTag), else CappedTag<float, cap> (1, 2, 4, 8
// or 16 lanes at most: partial vectors, e.g. 128/256-bit ones on AVX3).
bool EvalMath(int kind, const char* name, const float* x, const float* y, float* out, size_t n,
              double* claimed, int64_t* ran_on, int cap) {
  *ran_on = HWY_TARGET;
  switch (cap) {
    case 0: return EvalMathD(hn::ScalableTag<float>(), kind, name, x, y, out, n, claimed);
    case 1: return EvalMathD(hn::CappedTag<float, 1>(), kind, name, x, y, out, n, claimed);
    case 2: return EvalMathD(hn::CappedTag<float, 2>(), kind, name, x, y, out, n, claimed);
    case 4: return EvalMathD(hn::CappedTag<float, 4>(), kind, name, x, y, out, n, claimed);
    case 8: return EvalMathD(hn::CappedTag<float, 8>(), kind, name, x, y, out, n, claimed);
    case 16: return EvalMathD(hn::CappedTag<float, 16>(), kind, name, x, y, out, n, claimed);
    default: return false;
  }
}

// Names of the listed policies, '\n'-separated "kind name claimed" records.
void ListMath(std::string* out) {
  char buf[160];
#define ACTGRAD_LIST(K, P)                                                  \
  std::snprintf(buf, sizeof(buf), "%d %s %.17g\n", K, P::kName, P::kClaimedMaxErr); \
  *out += buf;
#define ACTGRAD_LIST0(P) ACTGRAD_LIST(0, P)
#define ACTGRAD_LIST1(P) ACTGRAD_LIST(1, P)
#define ACTGRAD_LIST2(P) ACTGRAD_LIST(2, P)
  ACTGRAD_FOR_EACH_GELU_ERF_APPROX(ACTGRAD_LIST0)
  ACTGRAD_FOR_EACH_GELU_TANH_APPROX(ACTGRAD_LIST1)
  ACTGRAD_FOR_EACH_DIV_APPROX(ACTGRAD_LIST2)
#undef ACTGRAD_LIST
#undef ACTGRAD_LIST0
#undef ACTGRAD_LIST1
#undef ACTGRAD_LIST2
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace actgrad
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <sstream>

namespace actgrad {
HWY_EXPORT(EvalMath);
HWY_EXPORT(ListMath);

namespace math_test {

std::vector<PolicyInfo> ListPolicies() {
  std::string s;
  HWY_DYNAMIC_DISPATCH(ListMath)(&s);
  std::vector<PolicyInfo> v;
  std::istringstream in(s);
  int k;
  std::string name;
  double c;
  while (in >> k >> name >> c) v.push_back({Kind(k), name, c});
  return v;
}

bool Eval(Kind kind, const std::string& name, const float* x, const float* y, float* out,
          size_t n, double* claimed, int64_t* ran_on, int cap) {
  return HWY_DYNAMIC_DISPATCH(EvalMath)(int(kind), name.c_str(), x, y, out, n, claimed, ran_on,
                                        cap);
}

std::vector<int64_t> Targets() {
  hwy::SetSupportedTargetsForTest(0);
  return hwy::SupportedAndGeneratedTargets();
}

void ForceTarget(int64_t target) { hwy::SetSupportedTargetsForTest(target); }

std::string TargetLowerName(int64_t target) {
  std::string s = hwy::TargetName(target);
  for (auto& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

double RefGeluErf(float xf) {
  const long double x = xf;
  if (std::isnan(xf)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(xf)) return xf > 0 ? 1.0 : 0.0;
  const long double kInvSqrt2 = 0.707106781186547524400844362104849039L;
  const long double kInvSqrt2Pi = 0.398942280401432677939946059934381868L;
  return double(0.5L * std::erfc(-x * kInvSqrt2) + x * kInvSqrt2Pi * std::exp(-0.5L * x * x));
}

double RefGeluTanh(float xf) {
  const long double x = xf;
  if (std::isnan(xf)) return std::numeric_limits<double>::quiet_NaN();
  if (std::isinf(xf)) return xf > 0 ? 1.0 : 0.0;
  const long double k = 0.797884560802865355879892119868763737L;
  const long double c = 0.044715L;
  const long double u = k * (x + c * x * x * x);
  const long double t = std::tanh(u);
  // 1 - t^2 = 1/cosh^2 without cancellation
  const long double ch = std::cosh(u);
  const long double omt2 = std::isinf(ch) ? 0.0L : 1.0L / (ch * ch);
  return double(0.5L * (1.0L + t) + 0.5L * x * omt2 * k * (1.0L + 3.0L * c * x * x));
}

double GeluErr(float f, double ref) {
  if (std::isnan(ref) || std::isnan(f)) return (std::isnan(ref) && std::isnan(f)) ? 0.0 : HUGE_VAL;
  if (std::isinf(ref) || std::isinf(f)) return (double(f) == ref) ? 0.0 : HUGE_VAL;
  const double den = std::max({std::fabs(ref), 1.0 / 16, double(std::numeric_limits<float>::min())});
  return std::fabs(double(f) - ref) / den;
}

}  // namespace math_test
}  // namespace actgrad
#endif  // HWY_ONCE
