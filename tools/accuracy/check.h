// Accuracy of one kernel variant against the double reference under the
// spec's rule (kernels/reference/accuracy_rule.h), on the inputs of inputs.h.
#pragma once
#include <cstdint>
#include <string>

#include "tools/accuracy/inputs.h"
#include "variants/variant.h"

namespace actgrad::acc {

struct VariantAccuracy {
  std::string variant;
  Op op = Op::kSeluBwd;
  DType dtype = DType::kF32;
  GeluApprox gelu_mode = GeluApprox::kNone;
  std::string approx;
  std::string target;
  bool run = false;           // false: not supported on this CPU (nothing measured)
  uint64_t count = 0;         // elements checked
  double share = 0;           // fraction of elements under the rule's threshold
  double max_err = 0;         // rule metric, finite elements (special mismatches excluded)
  double max_ulp = 0;         // informational: ULPs of the output dtype at max(|ref|, |g|/16)
  uint64_t special_mismatch = 0;  // NaN/Inf not where the reference has them
  uint64_t over_hard_bound = 0;
  std::string first_failure;  // "" when shippable
  bool pass = false;          // shippable: the spec's rule holds
  double claimed_max_err = 0; // the variant's own claim (0 = exact op)
  double g1_max_err = 0;      // rule metric with g = 1 on the non-special inputs
  std::string g1_worst;       // where g1_max_err is reached: "x=... got ... reference ..."
  double claim_allowance = 0; // what g1_max_err is compared with (claim + output rounding)
  bool meets_claim = false;   // claim > 0: g1_max_err <= claim_allowance; claim == 0: pass
  double seconds = 0;         // wall time of the check
  std::string source;         // "" = this run; else the run it was kept from (--keep): "machine, date"
};

// Runs v (single-threaded, through v.fn) on every input case of its op and
// dtype and checks it. Unsupported variants are not run: run = false,
// pass = false, first_failure = "not run (CPU lacks <target>)".
VariantAccuracy CheckVariant(const Variant& v, const AccuracyOptions& opt = {});

}  // namespace actgrad::acc
