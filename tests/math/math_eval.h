// Test/measurement harness of kernels/math: evaluates any approximation
// policy on any compiled Highway target, plus the high-precision references.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace actgrad::math_test {

enum class Kind : int { kGeluErf = 0, kGeluTanh = 1, kDiv = 2 };

struct PolicyInfo {
  Kind kind;
  std::string name;    // kName
  double claimed;      // kClaimedMaxErr
};

// Every policy compiled in for the current (dispatched) target, in list order.
std::vector<PolicyInfo> ListPolicies();

// Evaluates policy `name` of `kind` on the current dispatched target:
// out[i] = Factor(x[i]) (GELU) or Div(x[i], y[i]) (division). Returns false if
// the policy is not available on that target. *ran_on: the HWY_TARGET used.
// cap: 0 = full vectors; 1, 2, 4, 8, 16 = CappedTag<float, cap> (partial
// vectors on wide targets).
bool Eval(Kind kind, const std::string& name, const float* x, const float* y, float* out,
          size_t n, double* claimed, int64_t* ran_on, int cap = 0);

// Runs fn once per target that is compiled and supported by this CPU, with
// that target forced for dynamic dispatch; restores the default afterwards.
template <class Fn>
void ForEachTarget(const Fn& fn);

std::vector<int64_t> Targets();       // compiled and supported targets
void ForceTarget(int64_t target);     // 0 = back to normal dispatch
std::string TargetLowerName(int64_t target);

template <class Fn>
void ForEachTarget(const Fn& fn) {
  for (int64_t t : Targets()) {
    ForceTarget(t);
    fn(t);
  }
  ForceTarget(0);
}

// References, in long double, from the same float input.
double RefGeluErf(float x);   // 0.5*erfc(-x/sqrt2) + x*phi(x)
double RefGeluTanh(float x);
// Error metric of the spec with g = 1: |f - ref| / max(|ref|, 1/16, FLT_MIN);
// +inf when NaN/Inf do not match.
double GeluErr(float f, double ref);

}  // namespace actgrad::math_test
