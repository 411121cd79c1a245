// Every variant supported on this CPU against the double reference (fp32 with
// 2^16 random values per parameter case plus all specials; fp16/bf16
// exhaustive): it meets its own claimed_max_err, the scalar variants and the
// portable defaults are shippable, and every variant docs/accuracy.json marks
// shippable passes here too.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "reference/accuracy_rule.h"
#include "tools/accuracy/check.h"
#include "variants/thread_pool.h"
#include "tools/accuracy/results.h"
#include "variants/variant.h"
#include "tests/common/variant_groups.h"

namespace actgrad::acc {
namespace {

AccuracyOptions TestOptions() {
  AccuracyOptions o;
  o.fp32_count = size_t{1} << 16;
  return o;
}

const std::string kCommittedPath = std::string(ACTGRAD_SOURCE_DIR) + "/docs/accuracy.json";

// The committed results, or nullptr (with a note, once) when absent/unreadable.
const AccuracyCache* Committed() {
  static const AccuracyCache* cache = [] {
    static AccuracyCache c;
    std::string error;
    if (!TryLoadAccuracyCache(kCommittedPath, &c, &error)) {
      std::printf("[   NOTE   ] no usable committed accuracy results, skipping the comparison with them: %s\n",
                  error.c_str());
      return static_cast<const AccuracyCache*>(nullptr);
    }
    return static_cast<const AccuracyCache*>(&c);
  }();
  return cache;
}

using Group = test::VariantGroup;

class EveryVariant : public ::testing::TestWithParam<Group> {};

TEST_P(EveryVariant, MeetsClaimAndCommittedVerdict) {
  const Group grp = GetParam();
  std::vector<const Variant*> vs;
  for (const Variant& v : Variants())
    if (v.op == grp.op && v.dtype == grp.dtype && v.supported) vs.push_back(&v);
  ASSERT_FALSE(vs.empty()) << "no supported variant (the scalar ones always are)";
  std::vector<VariantAccuracy> rs(vs.size());
  actgrad::ParallelFor(2, int64_t(vs.size()), [&](int64_t first, int64_t last, int) {
    for (int64_t i = first; i < last; ++i) rs[size_t(i)] = CheckVariant(*vs[size_t(i)], TestOptions());
  });
  const AccuracyCache* committed = Committed();
  int compared = 0;
  for (size_t i = 0; i < vs.size(); ++i) {
    const Variant& v = *vs[i];
    const auto& r = rs[i];
    ASSERT_TRUE(r.run) << v.name;
    EXPECT_GT(r.count, 0u) << v.name;
    EXPECT_TRUE(r.meets_claim) << v.name << ": claims max err " << v.claimed_max_err
                               << (v.claimed_max_err > 0 ? "" : " (exact: held to the rule)") << ", measured "
                               << r.g1_max_err << " with g = 1 (allowed " << r.claim_allowance
                               << "); rule: " << (r.pass ? "pass" : r.first_failure);
    // The g-sweep (g = +-Inf, +-max, NaN over the tails
    // of x) holds for every variant, shippable or not.
    EXPECT_EQ(r.special_mismatch, 0u) << v.name << ": NaN/Inf not where the reference has them: " << r.first_failure;
    if (v.target == "scalar") EXPECT_TRUE(r.pass) << v.name << " (scalar) is not shippable: " << r.first_failure;
    if (committed) {
      const auto* c = committed->Find(v.name);
      if (c && c->run && c->pass) {
        ++compared;
        EXPECT_TRUE(r.pass) << v.name << " is shippable in " << kCommittedPath << " (machine "
                            << committed->doc.machine_id << ") but fails here: " << r.first_failure;
      }
    }
  }
  if (committed) std::printf("[   INFO   ] %d variants compared with the committed results\n", compared);
}

INSTANTIATE_TEST_SUITE_P(Group, EveryVariant, ::testing::ValuesIn(test::VariantGroups()), test::VariantGroupName);

// Each class's default (the dispatch's choice where a table of that class
// has no entry) is shippable and within the class's bound.
TEST(DefaultVariants, AreShippableAndInTheirClass) {
  for (AccuracyClass cls : {AccuracyClass::kRule, AccuracyClass::kNearExact})
    for (int op = 0; op < kNumOps; ++op) {
      std::vector<DType> dts = {DType::kF32, DType::kF16, DType::kBF16};
      if (Op(op) == Op::kSeluBwd) dts.push_back(DType::kI32), dts.push_back(DType::kI8);
      std::vector<GeluApprox> modes = {GeluApprox::kNone};
      if (Op(op) == Op::kGeluBwd) modes.push_back(GeluApprox::kTanh);
      for (DType t : dts)
        for (GeluApprox m : modes) {
          const Variant* v = DefaultVariant(Op(op), t, m, cls);
          const std::string what = std::string(OpName(Op(op))) + "." + std::string(DTypeName(t)) +
                                   (m == GeluApprox::kTanh ? " (tanh)" : "") + ", class " +
                                   std::string(AccuracyClassName(cls));
          ASSERT_NE(v, nullptr) << "no default variant for " << what;
          EXPECT_EQ(v->gelu_mode, m) << v->name;
          const auto r = CheckVariant(*v, TestOptions());
          EXPECT_TRUE(r.pass) << "default " << v->name << " for " << what << " is not shippable: " << r.first_failure;
          EXPECT_LE(r.max_err, ClassBound(cls, t)) << "default " << v->name << " for " << what;
        }
    }
}

// The near-exact bound: the output's half-ulp plus 1e-6, so that an fp32
// result within 1e-6 rounded once to a 16-bit output is inside it.
TEST(AccuracyClasses, NearExactBoundIsHalfAnUlpPlusTheF32Allowance) {
  EXPECT_DOUBLE_EQ(ClassBound(AccuracyClass::kNearExact, DType::kF32), 0x1p-24 + 1e-6);
  EXPECT_DOUBLE_EQ(ClassBound(AccuracyClass::kNearExact, DType::kF16), 0x1p-11 + 1e-6);
  EXPECT_DOUBLE_EQ(ClassBound(AccuracyClass::kNearExact, DType::kBF16), 0x1p-8 + 1e-6);
  EXPECT_EQ(ClassBound(AccuracyClass::kNearExact, DType::kI32), 0.0);
  EXPECT_TRUE(std::isinf(ClassBound(AccuracyClass::kRule, DType::kF32)));
  // Below the rule's threshold in every float dtype: the class only narrows.
  for (DType t : {DType::kF32, DType::kF16, DType::kBF16})
    EXPECT_LT(ClassBound(AccuracyClass::kNearExact, t), RuleFor(t).threshold) << DTypeName(t);
}

// A fitted GELU approximation (the rule's tanh default, 2.1e-5) is outside
// the near-exact class in f32, that class's default inside it.
TEST(AccuracyClasses, SeparateTheFittedGeluFromTheNearExactOnes) {
  const Variant* fitted = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kTanh);
  const Variant* near = DefaultVariant(Op::kGeluBwd, DType::kF32, GeluApprox::kNone, AccuracyClass::kNearExact);
  ASSERT_TRUE(fitted && near);
  EXPECT_GT(CheckVariant(*fitted, TestOptions()).max_err, ClassBound(AccuracyClass::kNearExact, DType::kF32));
  EXPECT_LE(CheckVariant(*near, TestOptions()).max_err, ClassBound(AccuracyClass::kNearExact, DType::kF32));
}

TEST(ScalarVariants, ExistForEveryOpAndDType) {
  for (int op = 0; op < kNumOps; ++op)
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      bool found = false;
      for (const Variant& v : Variants()) found = found || (v.op == Op(op) && v.dtype == t && v.target == "scalar");
      EXPECT_TRUE(found) << OpName(Op(op)) << "." << DTypeName(t);
    }
}

TEST(UnsupportedVariant, IsReportedNotRun) {
  Variant v = Variants().front();
  v.supported = false;
  v.target = "avx10_9";
  const auto r = CheckVariant(v, TestOptions());
  EXPECT_FALSE(r.run);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.first_failure, "not run (CPU lacks avx10_9)");
}

}  // namespace
}  // namespace actgrad::acc
