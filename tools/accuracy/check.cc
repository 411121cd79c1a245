#include "tools/accuracy/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "reference/accuracy_rule.h"

namespace actgrad::acc {

namespace {

// |out - ref| in ULPs of the output dtype at the magnitude the rule measures
// against, max(|ref|, |g|/16, smallest normal): where the derivative cancels
// (ref near 0) an ULP of |ref| itself would be meaningless.
double RuleUlps(DType t, double out, double ref, double g) {
  int bits = 23;
  double min_normal = 0x1p-126;
  if (t == DType::kF16) bits = 10, min_normal = 0x1p-14;
  if (t == DType::kBF16) bits = 7;
  const double g_floor = std::isfinite(g) ? std::fabs(g) / 16.0 : 0.0;
  const double mag = std::max({std::fabs(ref), g_floor, min_normal});
  return std::fabs(out - ref) / std::ldexp(1.0, std::ilogb(mag) - bits);
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
}  // namespace

VariantAccuracy CheckVariant(const Variant& v, const AccuracyOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  VariantAccuracy r;
  r.variant = v.name;
  r.op = v.op;
  r.dtype = v.dtype;
  r.gelu_mode = v.gelu_mode;
  r.approx = v.approx;
  r.target = v.target;
  r.claimed_max_err = v.claimed_max_err;
  if (!v.supported || v.fn == nullptr) {
    r.run = false;
    r.first_failure = "not run (CPU lacks " + v.target + ")";
    return r;
  }
  r.run = true;
  const auto inputs = GetInputs(v.op, v.dtype, v.gelu_mode, opt);
  const size_t es = DTypeSize(v.dtype);
  size_t max_n = 1;
  for (const auto& c : inputs->cases) max_n = std::max(max_n, c.n);
  // 64-byte aligned output, as a framework allocation would be.
  const size_t bytes = (max_n * es + 63) / 64 * 64;
  std::unique_ptr<uint8_t, FreeDeleter> out(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));

  // `sweep`: the g-sweep cases, whose verdict is NaN/Inf placement and the
  // hard bound only; they do not enter the share under the threshold.
  AccuracyChecker all(v.dtype), g1(v.dtype), sweep(v.dtype);
  std::string first_failure;
  double worst = -1;
  double max_ulp = 0;
  for (const InputCase& c : inputs->cases) {
    OpParams p = c.params;
    p.gelu_approx = v.gelu_mode;
    std::fill_n(out.get(), c.n * es, uint8_t(0xCD));
    const KernelArgs a{c.g.data(), c.x.data(), out.get(), c.n, p, 0};
    v.fn(a);
    AccuracyChecker one(v.dtype);
    for (size_t i = 0; i < c.n; ++i) {
      const double o = DecodeElement(v.dtype, out.get(), i);
      const double g = DecodeElement(v.dtype, c.g.data(), i);
      const double x = DecodeElement(v.dtype, c.x.data(), i);
      one.Add(o, c.ref[i], g, x);
      // ULPs where the reference is finite in the output dtype (the checker's
      // own figure is +Inf once a reference rounds past the largest finite
      // value, even when the output is that Inf, as it must be).
      if (IsFloat(v.dtype) && std::isfinite(o) && std::isfinite(RoundTo(v.dtype, c.ref[i]))) {
        const double u = RuleUlps(v.dtype, o, c.ref[i], g);
        if (u > max_ulp) max_ulp = u;
      }
      if ((c.flags[i] & (kFlagG1 | kFlagSpecial)) == kFlagG1) {
        g1.Add(o, c.ref[i], g, x);
        const double e = ElementError(v.dtype, o, c.ref[i], g);
        if (std::isfinite(e) && e > worst) {
          worst = e;
          char buf[200];
          std::snprintf(buf, sizeof buf, "%s%sx=%.9g: got %.9g, reference %.9g", c.label.c_str(),
                        c.label.empty() ? "" : ": ", x, o, c.ref[i]);
          r.g1_worst = buf;
        }
      }
    }
    const AccuracyReport rep = one.Report();
    if (first_failure.empty() && (rep.special_mismatch || rep.over_hard_bound) && !rep.first_failure.empty())
      first_failure = (c.label.empty() ? "" : c.label + ": ") + rep.first_failure;
    (c.sweep ? sweep : all).Merge(one);
  }
  const AccuracyReport rep = all.Report();
  const AccuracyReport sweep_rep = sweep.Report();
  r.count = rep.count + sweep_rep.count;
  r.share = rep.Share();
  r.max_err = std::max(rep.max_err, sweep_rep.max_err);
  r.max_ulp = IsFloat(v.dtype) ? max_ulp : 0.0;  // integers: exact or failing
  r.special_mismatch = rep.special_mismatch + sweep_rep.special_mismatch;
  r.over_hard_bound = rep.over_hard_bound + sweep_rep.over_hard_bound;
  r.pass = rep.pass && sweep_rep.special_mismatch == 0 && sweep_rep.over_hard_bound == 0;
  if (!rep.pass) r.first_failure = first_failure.empty() ? rep.first_failure : first_failure;
  const AccuracyReport g1_rep = g1.Report();
  r.g1_max_err = g1_rep.max_err;
  if (v.claimed_max_err > 0) {
    // NaN/Inf misplaced on an ordinary input breaks any claim.
    r.claim_allowance = v.claimed_max_err + actgrad::UnitRoundoff(v.dtype) * (1.0 + v.claimed_max_err);
    r.meets_claim = g1_rep.special_mismatch == 0 && r.g1_max_err <= r.claim_allowance;
    if (g1_rep.special_mismatch) r.g1_worst = g1_rep.first_failure;
  } else {
    r.claim_allowance = 0;
    r.meets_claim = r.pass;
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace actgrad::acc
