// The accuracy inputs are what the spec's "Inputs for accuracy runs" asks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "tools/accuracy/inputs.h"
#include "actgrad/half.h"
#include "math/extreme_g.h"
#include "reference/reference.h"

namespace actgrad::acc {
namespace {

AccuracyOptions Small() {
  AccuracyOptions o;
  o.fp32_count = 20000;
  return o;
}

// The x values of a case (as fp32 bit patterns: NaN and -0 stay distinct).
struct XSet {
  std::set<uint32_t> bits;
  bool count(float f) const { return bits.count(FloatBits(f)) != 0; }
  bool HasNaN() const {
    for (uint32_t b : bits)
      if (std::isnan(BitsFloat(b))) return true;
    return false;
  }
};

XSet XValues(const InputSet& s, size_t case_index) {
  XSet xs;
  const InputCase& c = s.cases.at(case_index);
  for (size_t i = 0; i < c.n; ++i) xs.bits.insert(FloatBits(float(DecodeElement(s.dtype, c.x.data(), i))));
  return xs;
}

TEST(Inputs, HalfTypesCoverEveryBitPatternWithUnitAndRandomG) {
  for (DType t : {DType::kF16, DType::kBF16}) {
    const InputSet s = BuildInputs(Op::kGeluBwd, t, GeluApprox::kNone, Small());
    ASSERT_EQ(s.cases.size(), 2u);  // the case and its g-sweep
    EXPECT_FALSE(s.cases[0].sweep);
    EXPECT_TRUE(s.cases[1].sweep);
    const InputCase& c = s.cases[0];
    ASSERT_GE(c.n, 2u * 65536);
    std::vector<int> seen_g1(65536), seen_rand(65536);
    const uint16_t one = t == DType::kF16 ? FloatToHalf(1.0f) : FloatToBF16(1.0f);
    size_t random_g_not_one = 0;
    for (size_t i = 0; i < c.n; ++i) {
      uint16_t g, x;
      std::memcpy(&g, c.g.data() + 2 * i, 2);
      std::memcpy(&x, c.x.data() + 2 * i, 2);
      if (i < 65536) {
        EXPECT_EQ(g, one);
        seen_g1[x]++;
      } else if (i < 2 * 65536) {
        seen_rand[x]++;
        random_g_not_one += g != one;
      }
    }
    for (int b = 0; b < 65536; ++b) {
      ASSERT_EQ(seen_g1[b], 1) << "pattern " << b;
      ASSERT_EQ(seen_rand[b], 1) << "pattern " << b;
    }
    EXPECT_GT(random_g_not_one, 65000u);
  }
}

TEST(Inputs, Fp32HasTheRequestedCountAndSpecials) {
  const auto o = Small();
  for (int op = 0; op < kNumOps; ++op) {
    const InputSet s = BuildInputs(Op(op), DType::kF32, GeluApprox::kNone, o);
    for (size_t k = 0; k < s.cases.size(); ++k) {
      const auto xs = XValues(s, k);
      EXPECT_TRUE(xs.HasNaN()) << OpName(Op(op)) << " case " << k;
      EXPECT_TRUE(xs.count(std::numeric_limits<float>::infinity()));
      EXPECT_TRUE(xs.count(-std::numeric_limits<float>::infinity()));
      EXPECT_TRUE(xs.count(std::numeric_limits<float>::max()));
      EXPECT_TRUE(xs.count(-std::numeric_limits<float>::max()));
      EXPECT_TRUE(xs.count(std::numeric_limits<float>::denorm_min()));
      EXPECT_TRUE(xs.count(0.0f));
      EXPECT_TRUE(xs.count(-0.0f));
    }
    // The full-size cases hold at least fp32_count elements.
    EXPECT_GE(s.cases[0].n, o.fp32_count);
  }
  // At the default count: at least 10^6 values per op.
  EXPECT_GE(AccuracyOptions{}.fp32_count, 1000000u);
}

TEST(Inputs, ExactBoundaries) {
  const auto o = Small();
  const auto hs = XValues(BuildInputs(Op::kHardswishBwd, DType::kF32, GeluApprox::kNone, o), 0);
  EXPECT_TRUE(hs.count(3.0f) && hs.count(-3.0f));
  const InputSet ss = BuildInputs(Op::kSoftshrinkBwd, DType::kF32, GeluApprox::kNone, o);
  ASSERT_GE(ss.cases.size(), 2u);
  std::set<float> lambds;
  for (size_t k = 0; k < ss.cases.size(); ++k) {
    const float l = ss.cases[k].params.lambd;
    lambds.insert(l);
    const auto xs = XValues(ss, k);
    EXPECT_TRUE(xs.count(l) && xs.count(-l)) << "lambd " << l;
  }
  EXPECT_TRUE(lambds.count(0.5f));
  EXPECT_GE(lambds.size(), 2u);
  const InputSet lg = BuildInputs(Op::kLogitGrad, DType::kF32, GeluApprox::kNone, o);
  std::set<float> eps;
  for (size_t k = 0; k < lg.cases.size(); ++k) {
    const float e = lg.cases[k].params.eps;
    if (!std::isnan(e)) eps.insert(e);
    const auto xs = XValues(lg, k);
    EXPECT_TRUE(xs.count(0.0f) && xs.count(1.0f));
    if (std::isfinite(e)) EXPECT_TRUE(xs.count(e) && xs.count(1.0f - e)) << "eps " << e;
  }
  for (float e : {-1.0f, 0.0f, 1e-6f, 0.25f}) EXPECT_TRUE(eps.count(e)) << e;
  // SELU inputs are results of the forward SELU: y >= -alpha*scale, y <= selu(5).
  const InputSet se = BuildInputs(Op::kSeluBwd, DType::kF32, GeluApprox::kNone, o);
  for (size_t i = 0; i < o.fp32_count; ++i) {
    const double y = DecodeElement(DType::kF32, se.cases[0].x.data(), i);
    ASSERT_GE(y, -ref::kSeluAlpha * ref::kSeluScale - 1e-6);
    ASSERT_LE(y, ref::kSeluScale * 5 + 1e-5);
  }
}

TEST(Inputs, ReferenceMatchesTheSpecFormulas) {
  const InputSet s = BuildInputs(Op::kGeluBwd, DType::kF32, GeluApprox::kTanh, Small());
  const InputCase& c = s.cases[0];
  for (size_t i = 0; i < 1000; ++i) {
    const double g = DecodeElement(DType::kF32, c.g.data(), i), x = DecodeElement(DType::kF32, c.x.data(), i);
    ASSERT_EQ(c.ref[i], ref::GeluBwdTanh(g, x));
  }
  const InputSet i8 = BuildInputs(Op::kSeluBwd, DType::kI8, GeluApprox::kNone, Small());
  ASSERT_EQ(i8.total, 65536u);  // every (g, y) pair
  for (size_t i = 0; i < i8.total; ++i) {
    const auto g = int8_t(DecodeElement(DType::kI8, i8.cases[0].g.data(), i));
    const auto y = int8_t(DecodeElement(DType::kI8, i8.cases[0].x.data(), i));
    ASSERT_EQ(i8.cases[0].ref[i], double(ref::SeluBwdInt<int8_t>(g, y)));
  }
}

// The g-sweep holds g = +-Inf, +-max and NaN against the
// tails, with the references the rule needs there: -+Inf down to GELU's last
// non-zero factor (x = -38.6 erf, -21.5 tanh), NaN below it.
TEST(Inputs, GSweepCoversInfiniteGradientInGeluTail) {
  const float inf = std::numeric_limits<float>::infinity();
  for (GeluApprox m : {GeluApprox::kNone, GeluApprox::kTanh}) {
    const float lowest = m == GeluApprox::kTanh ? -0x1.58441cp+4f : -0x1.34d4ecp+5f;
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) {
      const InputSet s = BuildInputs(Op::kGeluBwd, t, m, Small());
      const InputCase* sweep = nullptr;
      for (const auto& c : s.cases)
        if (c.sweep) sweep = &c;
      ASSERT_NE(sweep, nullptr) << DTypeName(t);
      std::set<double> gs;
      int found = 0;
      for (size_t i = 0; i < sweep->n; ++i) {
        const double g = DecodeElement(t, sweep->g.data(), i), x = DecodeElement(t, sweep->x.data(), i);
        if (!std::isnan(g)) gs.insert(g);
        EXPECT_TRUE(sweep->flags[i] & kFlagSpecial);
        if (std::isinf(g) && (x == -8.0 || x == -14.0 || x == -20.0)) {
          ++found;
          EXPECT_EQ(sweep->ref[i], -g) << DTypeName(t) << " x=" << x;
        }
        if (t == DType::kF32 && std::isinf(g) && x == lowest) {
          ++found;
          EXPECT_EQ(sweep->ref[i], -g);
        }
        if (t == DType::kF32 && std::isinf(g) && x == std::nextafter(lowest, -inf)) {
          ++found;
          EXPECT_TRUE(std::isnan(sweep->ref[i]));
        }
      }
      EXPECT_EQ(gs.size(), 4u) << DTypeName(t) << ": +-Inf and +-max";
      // fp16/bf16: every pattern, so x = -8, -14, -20 with both infinities;
      // fp32: the exact boundary and its neighbour below, from the refinement.
      EXPECT_EQ(found, t == DType::kF32 ? 4 : 6) << DTypeName(t);
    }
  }
}

// The sign regions the kernels use for g = +-Inf (math/extreme_g.h) are the
// double reference's: zero below lowest_nonzero, negative up to
// last_negative, positive from first_positive (its float neighbour) on.
TEST(Reference, GeluSignRegionsOfTheKernels) {
  const float inf = std::numeric_limits<float>::infinity();
  for (GeluApprox m : {GeluApprox::kNone, GeluApprox::kTanh}) {
    const auto& s = extreme::GeluSignsOf(m);
    auto f = [&](float x) { return m == GeluApprox::kTanh ? ref::GeluBwdTanh(1.0, x) : ref::GeluBwdErf(1.0, x); };
    EXPECT_EQ(f(std::nextafter(s.lowest_nonzero, -inf)), 0.0);
    EXPECT_LT(f(s.lowest_nonzero), 0.0);
    EXPECT_LT(f(s.last_negative), 0.0);
    EXPECT_EQ(std::nextafter(s.last_negative, inf), s.first_positive);
    EXPECT_GT(f(s.first_positive), 0.0);
    EXPECT_EQ(f(-inf), 0.0);
    // Negative all the way between (a coarse scan; f has one root).
    for (float x = s.lowest_nonzero; x < s.last_negative; x += 0.01f) ASSERT_LT(f(x), 0.0) << x;
    for (float x = s.first_positive; x < 40.0f; x += 0.01f) ASSERT_GT(f(x), 0.0) << x;
  }
}

TEST(Inputs, Deterministic) {
  const InputSet a = BuildInputs(Op::kLogitGrad, DType::kF32, GeluApprox::kNone, Small());
  const InputSet b = BuildInputs(Op::kLogitGrad, DType::kF32, GeluApprox::kNone, Small());
  ASSERT_EQ(a.cases.size(), b.cases.size());
  for (size_t k = 0; k < a.cases.size(); ++k) {
    EXPECT_EQ(a.cases[k].g, b.cases[k].g);
    EXPECT_EQ(a.cases[k].x, b.cases[k].x);
    EXPECT_EQ(a.cases[k].flags, b.cases[k].flags);
  }
  // The cache hands out the same set.
  EXPECT_EQ(GetInputs(Op::kHardswishBwd, DType::kF16, GeluApprox::kNone, Small()).get(),
            GetInputs(Op::kHardswishBwd, DType::kF16, GeluApprox::kNone, Small()).get());
}

TEST(Inputs, FlagsMarkUnitGradientAndSpecials) {
  const InputSet s = BuildInputs(Op::kHardswishBwd, DType::kF32, GeluApprox::kNone, Small());
  const InputCase& c = s.cases[0];
  size_t g1 = 0, special = 0;
  for (size_t i = 0; i < c.n; ++i) {
    const double g = DecodeElement(DType::kF32, c.g.data(), i), x = DecodeElement(DType::kF32, c.x.data(), i);
    EXPECT_EQ((c.flags[i] & kFlagG1) != 0, g == 1.0);
    if (!std::isfinite(x) || !std::isfinite(g)) EXPECT_TRUE(c.flags[i] & kFlagSpecial);
    g1 += (c.flags[i] & kFlagG1) != 0;
    special += (c.flags[i] & kFlagSpecial) != 0;
  }
  EXPECT_GE(g1, Small().fp32_count / 2);
  EXPECT_GT(special, 50u);
}

}  // namespace
}  // namespace actgrad::acc
