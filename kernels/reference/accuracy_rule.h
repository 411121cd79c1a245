// The spec's accuracy rule ("double thousandth", adapted) as a reusable
// checker: feed it (out, ref, g) per element, read the verdict.
#pragma once
#include <cstdint>
#include <string>

#include "actgrad/types.h"
#include "variants/variant.h"

namespace actgrad {

struct AccuracyRule {
  double threshold;   // err below this counts toward the share
  double share;       // fraction of elements that must be under threshold
  double hard_bound;  // no element may reach this
};

AccuracyRule RuleFor(DType t);

// Unit roundoff of the output dtype (2^-24, 2^-11, 2^-8; 0 for integers):
// the relative error of rounding once to it (half an ulp).
double UnitRoundoff(DType t);

// The largest error (ElementError, over every input of the accuracy run) a
// variant of the class may have: for kRule none beyond the rule itself
// (+Inf); for kNearExact the output's unit roundoff plus 1e-6, the bound of
// an fp32 result within 1e-6 rounded once to the output. The tuner's accuracy gate applies it to the measured
// max_err (docs/tuning.md "Accuracy classes").
inline constexpr double kNearExactF32Error = 1e-6;
double ClassBound(AccuracyClass c, DType t);

struct AccuracyReport {
  uint64_t count = 0;
  uint64_t under_threshold = 0;
  uint64_t over_hard_bound = 0;
  uint64_t special_mismatch = 0;  // NaN/Inf where the reference has none, or the reverse
  double max_err = 0;
  double max_ulp = 0;
  std::string first_failure;  // description of the first failing element, if any
  double Share() const { return count ? double(under_threshold) / double(count) : 1.0; }
  bool pass = true;
};

class AccuracyChecker {
 public:
  explicit AccuracyChecker(DType out_dtype);
  // out: kernel result decoded to double; ref: double reference; g: gradient
  // (for the cancellation floor); x: the input, only for the failure message.
  void Add(double out, double ref, double g, double x = 0.0);
  AccuracyReport Report() const;
  void Merge(const AccuracyChecker& other);

 private:
  DType dtype_;
  AccuracyRule rule_;
  AccuracyReport r_;
};

// Error of one element under the rule (infinite when the specials differ).
double ElementError(DType t, double out, double ref, double g);
// |out - ref| in units in the last place of t at ref's magnitude.
double UlpError(DType t, double out, double ref);
// The value ref takes once rounded to t (so +-Inf when it rounds past max).
double RoundTo(DType t, double v);

}  // namespace actgrad
