#include "reference/accuracy_rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "actgrad/half.h"

namespace actgrad {

AccuracyRule RuleFor(DType t) {
  switch (t) {
    case DType::kF32: return {1e-4, 0.9999, 1e-3};
    case DType::kF16: return {1e-3, 0.999, 1e-2};
    case DType::kBF16: return {4e-3, 0.999, 3e-2};
    default: return {0.0, 1.0, 1e-300};  // integers: exact
  }
}

static double SmallestNormal(DType t) {
  switch (t) {
    case DType::kF32: return double(std::numeric_limits<float>::min());
    case DType::kF16: return 6.103515625e-05;
    case DType::kBF16: return double(std::numeric_limits<float>::min());
    default: return 1.0;
  }
}

static int MantissaBits(DType t) {
  switch (t) {
    case DType::kF32: return 23;
    case DType::kF16: return 10;
    case DType::kBF16: return 7;
    default: return 0;
  }
}

double UnitRoundoff(DType t) {
  switch (t) {
    case DType::kF32: return 0x1p-24;
    case DType::kF16: return 0x1p-11;
    case DType::kBF16: return 0x1p-8;
    default: return 0.0;
  }
}

double ClassBound(AccuracyClass c, DType t) {
  if (c == AccuracyClass::kRule) return std::numeric_limits<double>::infinity();
  return IsFloat(t) ? UnitRoundoff(t) + kNearExactF32Error : 0.0;
}

double RoundTo(DType t, double v) {
  switch (t) {
    case DType::kF32: return double(float(v));
    case DType::kF16: return double(HalfToFloat(FloatToHalf(float(v))));
    case DType::kBF16: return double(BF16ToFloat(FloatToBF16(float(v))));
    default: return std::trunc(v);
  }
}

double UlpError(DType t, double out, double ref) {
  if (std::isnan(out) || std::isnan(ref) || std::isinf(out) || std::isinf(ref))
    return (out == ref || (std::isnan(out) && std::isnan(ref))) ? 0.0 : std::numeric_limits<double>::infinity();
  const double mag = std::max(std::fabs(ref), SmallestNormal(t));
  const int e = std::ilogb(mag);
  const double ulp = std::ldexp(1.0, e - MantissaBits(t));
  return std::fabs(out - ref) / ulp;
}

// Special values: the kernel must produce NaN/Inf exactly where the reference
// (rounded to the output dtype) has them.
static bool SpecialsAgree(DType t, double out, double ref) {
  const double r = RoundTo(t, ref);
  if (std::isnan(r) || std::isnan(out)) return std::isnan(r) && std::isnan(out);
  if (std::isinf(r) || std::isinf(out)) return r == out;
  return true;
}

double ElementError(DType t, double out, double ref, double g) {
  if (!SpecialsAgree(t, out, ref)) return std::numeric_limits<double>::infinity();
  const double r = RoundTo(t, ref);
  if (std::isnan(r) || std::isinf(r)) return 0.0;
  if (!IsFloat(t)) return out == r ? 0.0 : std::numeric_limits<double>::infinity();
  const double g_floor = std::isfinite(g) ? std::fabs(g) / 16.0 : 0.0;
  const double denom = std::max({std::fabs(ref), g_floor, SmallestNormal(t)});
  return std::fabs(out - ref) / denom;
}

AccuracyChecker::AccuracyChecker(DType out_dtype) : dtype_(out_dtype), rule_(RuleFor(out_dtype)) {}

void AccuracyChecker::Add(double out, double ref, double g, double x) {
  const double err = ElementError(dtype_, out, ref, g);
  ++r_.count;
  const bool special_bad = std::isinf(err) && !SpecialsAgree(dtype_, out, ref);
  if (special_bad) ++r_.special_mismatch;
  if (err < rule_.threshold || (!IsFloat(dtype_) && err == 0.0)) ++r_.under_threshold;
  if (err >= rule_.hard_bound) ++r_.over_hard_bound;
  if (!special_bad) {
    r_.max_err = std::max(r_.max_err, err);
    if (std::isfinite(ref)) r_.max_ulp = std::max(r_.max_ulp, UlpError(dtype_, out, ref));
  }
  if ((special_bad || err >= rule_.hard_bound) && r_.first_failure.empty()) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "x=%.9g g=%.9g: got %.9g, reference %.9g (err %.3g)", x, g, out, ref, err);
    r_.first_failure = buf;
  }
}

void AccuracyChecker::Merge(const AccuracyChecker& o) {
  r_.count += o.r_.count;
  r_.under_threshold += o.r_.under_threshold;
  r_.over_hard_bound += o.r_.over_hard_bound;
  r_.special_mismatch += o.r_.special_mismatch;
  r_.max_err = std::max(r_.max_err, o.r_.max_err);
  r_.max_ulp = std::max(r_.max_ulp, o.r_.max_ulp);
  if (r_.first_failure.empty()) r_.first_failure = o.r_.first_failure;
}

AccuracyReport AccuracyChecker::Report() const {
  AccuracyReport r = r_;
  r.pass = r.special_mismatch == 0 && r.over_hard_bound == 0 && r.Share() >= rule_.share;
  if (!r.pass && r.first_failure.empty()) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "only %.4f%% of elements under %.g (need %.4f%%)", 100 * r.Share(),
                  rule_.threshold, 100 * rule_.share);
    r.first_failure = buf;
  }
  return r;
}

}  // namespace actgrad
