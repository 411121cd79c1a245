// The spec's accuracy rule as implemented by AccuracyChecker, on known inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "actgrad/half.h"
#include "reference/accuracy_rule.h"

namespace actgrad {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// n - bad elements exact (ref 1, out 1), `bad` elements with out = 1 * (1 + rel).
AccuracyReport RunChecker(DType t, int n, int bad, double rel) {
  AccuracyChecker c(t);
  for (int i = 0; i < n - bad; ++i) c.Add(1.0, 1.0, 1.0);
  for (int i = 0; i < bad; ++i) c.Add(double(float(1.0 + rel)), 1.0, 1.0, 0.25);
  return c.Report();
}

TEST(Checker, Fp32OffBy2e4IsUnderHardBoundButOverThreshold) {
  // 2e-4 is above the threshold (1e-4) and below the hard bound (1e-3):
  // one such element in 10,000 leaves exactly 99.99 % under the threshold.
  const AccuracyReport one = RunChecker(DType::kF32, 10000, 1, 2e-4);
  EXPECT_EQ(one.under_threshold, 9999u);
  EXPECT_EQ(one.over_hard_bound, 0u);
  EXPECT_NEAR(one.max_err, 2e-4, 1e-7);
  EXPECT_TRUE(one.pass) << one.first_failure;
  // Two of them: 99.98 % < 99.99 % -> fails on the share, not the hard bound.
  const AccuracyReport two = RunChecker(DType::kF32, 10000, 2, 2e-4);
  EXPECT_FALSE(two.pass);
  EXPECT_EQ(two.over_hard_bound, 0u);
  EXPECT_NE(two.first_failure.find("under"), std::string::npos) << two.first_failure;
}

TEST(Checker, Fp32OverHardBoundFails) {
  const AccuracyReport r = RunChecker(DType::kF32, 100000, 1, 2e-3);
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.over_hard_bound, 1u);
  EXPECT_NE(r.first_failure.find("x=0.25"), std::string::npos) << r.first_failure;
}

TEST(Checker, SharesOfFp16AndBf16) {
  // fp16: threshold 1e-3, share 99.9 %, hard bound 1e-2.
  EXPECT_TRUE(RunChecker(DType::kF16, 1000, 1, 5e-3).pass);
  EXPECT_FALSE(RunChecker(DType::kF16, 1000, 2, 5e-3).pass);
  EXPECT_FALSE(RunChecker(DType::kF16, 100000, 1, 1.5e-2).pass);
  // bf16: threshold 4e-3 (3e-3 counts as under), hard bound 3e-2.
  EXPECT_EQ(RunChecker(DType::kBF16, 100, 100, 3e-3).under_threshold, 100u);
  EXPECT_TRUE(RunChecker(DType::kBF16, 100, 100, 3e-3).pass);
  EXPECT_TRUE(RunChecker(DType::kBF16, 1000, 1, 2e-2).pass);
  EXPECT_FALSE(RunChecker(DType::kBF16, 100000, 1, 3.5e-2).pass);
}

TEST(Checker, NaNWhereReferenceIsFiniteFails) {
  AccuracyChecker c(DType::kF32);
  for (int i = 0; i < 100; ++i) c.Add(2.0, 2.0, 1.0);
  c.Add(kNaN, 2.0, 1.0, 3.0);
  const AccuracyReport r = c.Report();
  EXPECT_FALSE(r.pass);
  EXPECT_EQ(r.special_mismatch, 1u);
  EXPECT_EQ(r.max_err, 0.0);  // mismatches are counted, not folded into max_err
  EXPECT_FALSE(r.first_failure.empty());
}

TEST(Checker, FiniteWhereReferenceIsNaNFails) {
  AccuracyChecker c(DType::kF16);
  c.Add(0.0, kNaN, 1.0);
  EXPECT_FALSE(c.Report().pass);
  AccuracyChecker ok(DType::kF16);
  ok.Add(kNaN, kNaN, 1.0);
  EXPECT_TRUE(ok.Report().pass);
}

TEST(Checker, InfSignMismatchFails) {
  AccuracyChecker c(DType::kF32);
  c.Add(kInf, -kInf, 1.0);
  EXPECT_FALSE(c.Report().pass);
  EXPECT_EQ(c.Report().special_mismatch, 1u);
  AccuracyChecker ok(DType::kF32);
  ok.Add(-kInf, -kInf, 1.0);
  EXPECT_TRUE(ok.Report().pass);
}

TEST(Checker, ReferencePastFp16MaxExpectsInf) {
  EXPECT_EQ(RoundTo(DType::kF16, 70000.0), kInf);
  EXPECT_EQ(RoundTo(DType::kF16, 65520.0), kInf);      // the tie rounds to even: past 65504
  EXPECT_EQ(RoundTo(DType::kF16, 65519.0), 65504.0);   // below the tie: the largest finite
  EXPECT_EQ(RoundTo(DType::kF16, -70000.0), -kInf);
  auto verdict = [](double out, double ref) {
    AccuracyChecker c(DType::kF16);
    c.Add(out, ref, 1.0);
    return c.Report().pass;
  };
  EXPECT_TRUE(verdict(kInf, 70000.0));
  EXPECT_FALSE(verdict(65504.0, 70000.0));  // finite where Inf is expected
  EXPECT_FALSE(verdict(65504.0, 65520.0));
  EXPECT_TRUE(verdict(65504.0, 65519.0));
  EXPECT_FALSE(verdict(kInf, 65519.0));     // Inf where the rounded reference is finite
  EXPECT_TRUE(verdict(-kInf, -1e6));
  // fp32 and bf16: past FLT_MAX.
  AccuracyChecker f(DType::kF32);
  f.Add(kInf, 3.5e38, 1.0);
  EXPECT_TRUE(f.Report().pass);
  AccuracyChecker b(DType::kBF16);
  b.Add(double(std::numeric_limits<float>::max()), 3.5e38, 1.0);
  EXPECT_FALSE(b.Report().pass);
}

TEST(Checker, CancellationFloorIsGradientOver16) {
  // ref 0 (the derivative cancels): the error is measured against |g|/16.
  EXPECT_NEAR(ElementError(DType::kF32, 1e-5, 0.0, 1.0), 1.6e-4, 1e-12);
  EXPECT_NEAR(ElementError(DType::kF32, 1e-5, 0.0, 16.0), 1e-5, 1e-12);
  EXPECT_NEAR(ElementError(DType::kF32, 1e-4, 0.0, 1.0), 1.6e-3, 1e-12);
  // |ref| larger than |g|/16: relative.
  EXPECT_NEAR(ElementError(DType::kF32, 1.001, 1.0, 1.0), 1e-3, 1e-12);
  // g non-finite: no floor from g.
  EXPECT_NEAR(ElementError(DType::kF32, 1.001, 1.0, kInf), 1e-3, 1e-12);
  // Both tiny: the smallest normal of the dtype.
  EXPECT_NEAR(ElementError(DType::kF32, 1e-42, 0.0, 0.0), 1e-42 / double(std::numeric_limits<float>::min()), 1e-12);
  EXPECT_NEAR(ElementError(DType::kF16, 1e-6, 0.0, 0.0), 1e-6 / 6.103515625e-05, 1e-12);
  EXPECT_EQ(ElementError(DType::kF32, kNaN, 1.0, 1.0), kInf);
}

TEST(Checker, IntegersMustMatchExactly) {
  AccuracyChecker ok(DType::kI32);
  ok.Add(-5.0, -5.0, 3.0);
  ok.Add(2147483647.0, 2147483647.0, 1.0);
  EXPECT_TRUE(ok.Report().pass);
  AccuracyChecker bad(DType::kI8);
  for (int i = 0; i < 100000; ++i) bad.Add(1.0, 1.0, 1.0);
  bad.Add(-3.0, -4.0, 2.0);
  EXPECT_FALSE(bad.Report().pass);
}

TEST(Checker, UlpError) {
  EXPECT_EQ(UlpError(DType::kF32, double(std::nextafter(1.0f, 2.0f)), 1.0), 1.0);
  EXPECT_EQ(UlpError(DType::kF16, 1.0 + 0x1p-10, 1.0), 1.0);
  EXPECT_EQ(UlpError(DType::kBF16, 1.0 + 0x1p-6, 1.0), 2.0);
  EXPECT_EQ(UlpError(DType::kF32, 1.0, 1.0), 0.0);
}

TEST(Checker, MergeEqualsOneChecker) {
  AccuracyChecker a(DType::kF32), b(DType::kF32), all(DType::kF32);
  for (int i = 0; i < 1000; ++i) {
    const double out = 1.0 + (i % 7) * 1e-5, ref = 1.0;
    (i % 2 ? a : b).Add(out, ref, 1.0);
    all.Add(out, ref, 1.0);
  }
  a.Merge(b);
  EXPECT_EQ(a.Report().count, all.Report().count);
  EXPECT_EQ(a.Report().under_threshold, all.Report().under_threshold);
  EXPECT_EQ(a.Report().max_err, all.Report().max_err);
  EXPECT_EQ(a.Report().pass, all.Report().pass);
}

}  // namespace
}  // namespace actgrad
