// Every op x every dtype the spec lists against the double reference under
// the spec's accuracy rule: fp32 sweeps of >= 10^6 values in the spec's input
// ranges plus special values and boundary points; fp16/bf16 over all 65,536
// bit patterns of x (g = 1 and random g) and of g; SELU on int8 (all pairs)
// and int32; explicit spot checks of the documented edge cases.
#include <cmath>
#include <limits>
#include <random>

#include "api_test_util.h"

namespace apitest {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// NaN, +-Inf, +-0, denormals, smallest normals, largest finite values of t.
std::vector<double> Specials(DType t) {
  const double dmin = MinDenorm(t), nmin = MinNormal(t), mx = MaxFinite(t);
  std::vector<double> v = {kNaN, -kNaN, kInf, -kInf, 0.0, -0.0, dmin, -dmin, nmin - dmin, -(nmin - dmin),
                           nmin * 0.375, -nmin * 0.375, nmin, -nmin, mx, -mx, 1.0, -1.0};
  for (auto& x : v) x = RoundVal(t, x);
  return v;
}

float NextUp(float f) { return std::nextafter(f, std::numeric_limits<float>::infinity()); }
float NextDown(float f) { return std::nextafter(f, -std::numeric_limits<float>::infinity()); }

// Point v and its fp32 neighbours.
void AddWithNeighbours(std::vector<double>& out, double v) {
  const float f = float(v);
  out.push_back(f);
  out.push_back(NextUp(f));
  out.push_back(NextDown(f));
}

// Boundary points of each op (before rounding to the dtype).
std::vector<double> Boundaries(const OpSpec& s) {
  std::vector<double> b;
  switch (s.op) {
    case Op::kSeluBwd:
      AddWithNeighbours(b, 0.0);
      b.push_back(-0.0);
      AddWithNeighbours(b, -actgrad::ref::kSeluAlpha * actgrad::ref::kSeluScale);
      b.push_back(-30.0); b.push_back(5.0);
      break;
    case Op::kHardswishBwd:
      for (double v : {-3.0, 3.0, -1.5}) AddWithNeighbours(b, v);
      b.push_back(-5.0); b.push_back(5.0);
      break;
    case Op::kGeluBwd:
      for (double v : {0.0, 1e-20, -1e-20, 7.0, -5.9, 10.0, -10.0, 30.0, -30.0, 40.0, -40.0, 1e10, -1e10}) b.push_back(v);
      break;
    case Op::kSoftshrinkBwd:
      AddWithNeighbours(b, s.p.lambd);
      AddWithNeighbours(b, -s.p.lambd);
      b.push_back(2.0); b.push_back(-2.0);
      break;
    case Op::kLogitGrad: {
      const float eps = s.p.eps;
      AddWithNeighbours(b, 0.0);
      AddWithNeighbours(b, 1.0);
      AddWithNeighbours(b, 0.5);
      if (std::isfinite(eps)) {
        AddWithNeighbours(b, eps);
        AddWithNeighbours(b, 1.0f - eps);
      }
      b.push_back(-0.0); b.push_back(-0.5); b.push_back(1.5);
      break;
    }
  }
  return b;
}

// Random x in the spec's input range of the op.
double RandomX(const OpSpec& s, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  switch (s.op) {
    case Op::kSeluBwd: {  // y = selu(x), x in [-30, 5]
      const double x = -30.0 + 35.0 * u01(rng);
      return x > 0 ? actgrad::ref::kSeluScale * x
                   : actgrad::ref::kSeluScale * actgrad::ref::kSeluAlpha * std::expm1(x);
    }
    case Op::kHardswishBwd: return -5.0 + 10.0 * u01(rng);
    case Op::kGeluBwd: {
      if (rng() & 1) return -10.0 + 20.0 * u01(rng);
      std::normal_distribution<double> n(0.0, 1.0);
      return n(rng);
    }
    case Op::kSoftshrinkBwd: return -2.0 + 4.0 * u01(rng);
    case Op::kLogitGrad: {
      const uint64_t r = rng() % 16;
      if (r == 0) return -0.5 + 2.0 * u01(rng);  // some outside [0, 1]
      if (r == 1) return std::ldexp(u01(rng), -int(rng() % 40));  // close to 0
      if (r == 2) return 1.0 - std::ldexp(u01(rng), -int(rng() % 24));  // close to 1
      return u01(rng);
    }
  }
  return 0;
}

double RandomG(std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  if (rng() % 5 == 0) {
    const double mag = std::ldexp(1.0 + u01(rng), int(rng() % 41) - 20);
    return (rng() & 1) ? mag : -mag;
  }
  return -2.0 + 4.0 * u01(rng);
}

// Builds (g, x) pairs: n random, boundary x with special g and random g,
// special x with special g and random g, special g with random x.
void BuildInputs(const OpSpec& s, DType t, size_t n, uint64_t seed, std::vector<double>& g, std::vector<double>& x) {
  std::mt19937_64 rng(seed);
  auto push = [&](double gv, double xv) {
    g.push_back(RoundVal(t, gv));
    x.push_back(RoundVal(t, xv));
  };
  const auto specials = Specials(t);
  auto bounds = Boundaries(s);
  std::vector<double> sx = specials;
  sx.insert(sx.end(), bounds.begin(), bounds.end());
  std::vector<double> sg = specials;
  sg.push_back(0.5);
  sg.push_back(-3.0);
  for (double xv : sx) {
    for (double gv : sg) push(gv, xv);
    for (int k = 0; k < 16; ++k) push(RandomG(rng), xv);
  }
  for (double gv : sg)
    for (int k = 0; k < 64; ++k) push(gv, RandomX(s, rng));
  while (g.size() < n) push(RandomG(rng), RandomX(s, rng));
}

::testing::AssertionResult RunVectors(const OpSpec& s, DType t, const std::vector<double>& g,
                                      const std::vector<double>& x, DType out_t) {
  const int64_t n = int64_t(g.size());
  Tensor tg(t, {n}), tx(t, {n}), to(out_t, {n});
  tg.Fill(g);
  tx.Fill(x);
  return RunAndCheck(s, tg, tx, to);
}

// ------------------------------------------------------------ the cases

struct Case {
  std::string name;
  OpSpec spec;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> FloatCases() {
  std::vector<Case> c = {
      {"selu", Spec(Op::kSeluBwd)},
      {"hardswish", Spec(Op::kHardswishBwd)},
      {"gelu", Spec(Op::kGeluBwd)},
      {"gelu_v2_none", GeluV2None()},
      {"gelu_v2_tanh", GeluTanh()},
      {"softshrink_l0_5", Softshrink(0.5f)},
      {"softshrink_l0", Softshrink(0.0f)},
      {"softshrink_l0_3", Softshrink(0.3f)},
      {"softshrink_l1_25", Softshrink(1.25f)},
      {"logit_eps_m1", Logit(-1.0f)},
      {"logit_eps_0", Logit(0.0f)},
      {"logit_eps_1em6", Logit(1e-6f)},
      {"logit_eps_0_25", Logit(0.25f)},
  };
  return c;
}

// LogitGrad's eps rules: NaN, +Inf, -Inf, eps > 1, eps == 1, eps < 0.
std::vector<Case> EpsRuleCases() {
  return {
      {"logit_eps_nan", Logit(std::numeric_limits<float>::quiet_NaN())},
      {"logit_eps_inf", Logit(std::numeric_limits<float>::infinity())},
      {"logit_eps_minf", Logit(-std::numeric_limits<float>::infinity())},
      {"logit_eps_2", Logit(2.0f)},
      {"logit_eps_1p", Logit(NextUp(1.0f))},
      {"logit_eps_1", Logit(1.0f)},
      {"logit_eps_m0_5", Logit(-0.5f)},
      {"logit_eps_0_5", Logit(0.5f)},
  };
}

std::vector<Case> AllCases() {
  auto c = FloatCases();
  auto e = EpsRuleCases();
  c.insert(c.end(), e.begin(), e.end());
  return c;
}

std::string CaseName(const ::testing::TestParamInfo<Case>& i) { return i.param.name; }

// ---- fp32 sweep: >= 10^6 values per op (LogitGrad: per eps), specials included.

class F32Sweep : public ::testing::TestWithParam<Case> {};

TEST_P(F32Sweep, MatchesReference) {
  const Case& c = GetParam();
  const bool rule_case = c.name.find("logit_eps_") == 0 &&
                         (c.name == "logit_eps_nan" || c.name == "logit_eps_inf" || c.name == "logit_eps_minf" ||
                          c.name == "logit_eps_2" || c.name == "logit_eps_1p" || c.name == "logit_eps_1" ||
                          c.name == "logit_eps_m0_5" || c.name == "logit_eps_0_5");
  size_t n = 1 << 20;
  if (c.spec.op == Op::kLogitGrad) n = rule_case ? 1 << 14 : 300000;
  if (c.spec.op == Op::kSoftshrinkBwd && c.name != "softshrink_l0_5") n = 1 << 18;
  std::vector<double> g, x;
  BuildInputs(c.spec, DType::kF32, n, 0x5EED0000 + n, g, x);
  EXPECT_TRUE(RunVectors(c.spec, DType::kF32, g, x, DType::kF32));
}

INSTANTIATE_TEST_SUITE_P(Accuracy, F32Sweep, ::testing::ValuesIn(AllCases()), CaseName);

// ---- fp16 / bf16: all 65,536 patterns of x with g = 1, with random g; all
// patterns of g with random x; plus the boundary/special cross product.

struct HalfCase {
  Case c;
  DType t;
};
void PrintTo(const HalfCase& c, std::ostream* os) { *os << c.c.name << "_" << Name(c.t); }

std::vector<HalfCase> HalfCases() {
  std::vector<HalfCase> v;
  for (DType t : {DType::kF16, DType::kBF16})
    for (const auto& c : AllCases()) v.push_back({c, t});
  return v;
}

class HalfExhaustive : public ::testing::TestWithParam<HalfCase> {};

TEST_P(HalfExhaustive, AllBitPatterns) {
  const OpSpec& s = GetParam().c.spec;
  const DType t = GetParam().t;
  std::mt19937_64 rng(42);
  const int64_t n = 65536;
  {  // x = every pattern, g = 1
    Tensor tg(t, {n}), tx(t, {n}), to(t, {n});
    for (int64_t i = 0; i < n; ++i) {
      tx.SetBits16(i, uint16_t(i));
      tg.Set(i, 1.0);
    }
    EXPECT_TRUE(RunAndCheck(s, tg, tx, to)) << "x: all patterns, g = 1";
  }
  {  // x = every pattern, random g
    Tensor tg(t, {n}), tx(t, {n}), to(t, {n});
    for (int64_t i = 0; i < n; ++i) {
      tx.SetBits16(i, uint16_t(i));
      tg.Set(i, RandomG(rng));
    }
    EXPECT_TRUE(RunAndCheck(s, tg, tx, to)) << "x: all patterns, random g";
  }
  {  // g = every pattern, random x in the op's range
    Tensor tg(t, {n}), tx(t, {n}), to(t, {n});
    for (int64_t i = 0; i < n; ++i) {
      tg.SetBits16(i, uint16_t(i));
      tx.Set(i, RandomX(s, rng));
    }
    EXPECT_TRUE(RunAndCheck(s, tg, tx, to)) << "g: all patterns, random x";
  }
  {  // boundaries and specials crossed
    std::vector<double> g, x;
    BuildInputs(s, t, 0, 7, g, x);
    EXPECT_TRUE(RunVectors(s, t, g, x, t)) << "boundaries x specials";
  }
}

std::string HalfName(const ::testing::TestParamInfo<HalfCase>& i) { return i.param.c.name + "_" + Name(i.param.t); }

INSTANTIATE_TEST_SUITE_P(Accuracy, HalfExhaustive, ::testing::ValuesIn(HalfCases()), HalfName);

// ---- SELU on integers: compute in fp32, truncate toward zero, saturate.

TEST(AccuracyInt, SeluInt8AllPairs) {
  const int64_t n = 256 * 256;
  Tensor tg(DType::kI8, {n}), ty(DType::kI8, {n}), to(DType::kI8, {n});
  for (int64_t i = 0; i < n; ++i) {
    tg.Set(i, double(int8_t(uint8_t(i & 0xFF))));
    ty.Set(i, double(int8_t(uint8_t(i >> 8))));
  }
  EXPECT_TRUE(RunAndCheck(Spec(Op::kSeluBwd), tg, ty, to));
}

TEST(AccuracyInt, SeluInt32) {
  std::mt19937_64 rng(3);
  std::vector<double> g, y;
  const std::vector<double> edge = {0, 1, -1, 2, -2, 100, -100, 1 << 20, -(1 << 20), 2147483647.0, -2147483648.0,
                                    2043890000.0, -2043890000.0, 1221464000.0, -1221464000.0};
  for (double a : edge)
    for (double b : edge) {
      g.push_back(a);
      y.push_back(b);
    }
  std::uniform_int_distribution<int32_t> small(-1000, 1000), any(std::numeric_limits<int32_t>::min(),
                                                                   std::numeric_limits<int32_t>::max());
  while (g.size() < 200000) {
    const bool big = rng() % 4 == 0;
    g.push_back(big ? any(rng) : small(rng));
    y.push_back(rng() % 8 == 0 ? any(rng) : small(rng));
  }
  const int64_t n = int64_t(g.size());
  Tensor tg(DType::kI32, {n}), ty(DType::kI32, {n}), to(DType::kI32, {n});
  tg.Fill(g);
  ty.Fill(y);
  EXPECT_TRUE(RunAndCheck(Spec(Op::kSeluBwd), tg, ty, to));
}

TEST(AccuracyInt, SeluIntExplicit) {
  // g = 10: y > 0 -> trunc(10.507) = 10; y = 0 -> trunc(17.58) = 17; y = -1 -> trunc(7.58) = 7;
  // y = -2 -> trunc(-2.42) = -2 (toward zero). int8 g = 100, y = 100 -> 105; g = 127, y = 127 -> saturates 127;
  // g = -128, y = 0 -> -225 saturates to -128.
  {
    Tensor g(DType::kI32, {5}), y(DType::kI32, {5}), o(DType::kI32, {5});
    g.Fill({10, 10, 10, 10, 2147483647.0});
    y.Fill({5, 0, -1, -2, 1});
    ASSERT_TRUE(IsOk(RunOp(Spec(Op::kSeluBwd), g, y, o)));
    EXPECT_EQ(o.Values(), (std::vector<double>{10, 17, 7, -2, 2147483647.0}));
  }
  {
    Tensor g(DType::kI8, {4}), y(DType::kI8, {4}), o(DType::kI8, {4});
    g.Fill({100, 127, -128, -7});
    y.Fill({100, 127, 0, -1});
    ASSERT_TRUE(IsOk(RunOp(Spec(Op::kSeluBwd), g, y, o)));
    EXPECT_EQ(o.Values(), (std::vector<double>{105, 127, -128, -5}));
  }
}

// ---- explicit edge cases, each float dtype.

class Edges : public ::testing::TestWithParam<DType> {};

std::vector<double> RunSmall(const OpSpec& s, DType t, const std::vector<double>& g, const std::vector<double>& x) {
  const int64_t n = int64_t(x.size());
  Tensor tg(t, {n}), tx(t, {n}), to(t, {n});
  tg.Fill(g);
  tx.Fill(x);
  const RunResult r = RunOp(s, tg, tx, to);
  EXPECT_TRUE(IsOk(r)) << SpecName(s);
  return to.Values();
}

void ExpectNear(double got, double want, DType t, const std::string& what) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << what << ": got " << got << ", want NaN";
    return;
  }
  if (std::isinf(want)) {
    EXPECT_EQ(got, want) << what;
    return;
  }
  // The spec's per-element thresholds (fp32 1e-4: the shipping table may pick
  // any variant that passes the accuracy rule, e.g. GELU's erf_pw5 at 7e-5),
  // bf16 with its rounding on top.
  const double tol = t == DType::kF32 ? 1e-4 : t == DType::kF16 ? 1e-3 : 8e-3;
  EXPECT_NEAR(got, want, tol * std::max(1.0, std::fabs(want))) << what;
}

TEST_P(Edges, SeluAtZeroTakesNonPositiveBranch) {
  const DType t = GetParam();
  const double as = actgrad::ref::kSeluAlpha * actgrad::ref::kSeluScale;
  auto o = RunSmall(Spec(Op::kSeluBwd), t, {1, 1, 2, 1, 1}, {0.0, -0.0, 0.0, 1.0, -as});
  ExpectNear(o[0], as, t, "y=0, g=1 -> alpha*scale (1.7581)");
  ExpectNear(o[1], as, t, "y=-0, g=1 -> alpha*scale");
  ExpectNear(o[2], 2 * as, t, "y=0, g=2");
  ExpectNear(o[3], actgrad::ref::kSeluScale, t, "y=1 -> scale");
  EXPECT_LE(std::fabs(o[4]), t == DType::kF32 ? 1e-6 : 2e-2) << "y=-alpha*scale -> ~0";
}

TEST_P(Edges, HardswishEnds) {
  const DType t = GetParam();
  auto o = RunSmall(Spec(Op::kHardswishBwd), t, {2, 2, 2, 2, 2, 2, 2, 2},
                    {-3.0, 3.0, -3.5, 3.5, kNaN, kInf, -kInf, 0.0});
  ExpectNear(o[0], -1.0, t, "x=-3 -> -0.5*g");
  ExpectNear(o[1], 3.0, t, "x=3 -> 1.5*g (inclusive)");
  ExpectNear(o[2], 0.0, t, "x<-3 -> 0");
  ExpectNear(o[3], 2.0, t, "x>3 -> g");
  ExpectNear(o[4], 2.0, t, "x=NaN -> g");
  ExpectNear(o[5], 2.0, t, "x=+Inf -> g");
  ExpectNear(o[6], 0.0, t, "x=-Inf -> 0");
  ExpectNear(o[7], 1.0, t, "x=0 -> 0.5*g");
}

TEST_P(Edges, GeluLimits) {
  const DType t = GetParam();
  for (const OpSpec& s : {Spec(Op::kGeluBwd), GeluTanh()}) {
    auto o = RunSmall(s, t, {3, 3, 3, 3, 1}, {kInf, -kInf, kNaN, 0.0, 1.0});
    ExpectNear(o[0], 3.0, t, SpecName(s) + " x=+Inf -> g");
    ExpectNear(o[1], 0.0, t, SpecName(s) + " x=-Inf -> 0");
    ExpectNear(o[2], kNaN, t, SpecName(s) + " x=NaN -> NaN");
    ExpectNear(o[3], 1.5, t, SpecName(s) + " x=0 -> 0.5*g");
    ExpectNear(o[4], RoundVal(t, RefValue(s, 1.0, 1.0)), t, SpecName(s) + " x=1");
  }
  // exact and tanh differ measurably at x = 1 (1.0833 vs 1.0830): the mode is honoured.
  if (t == DType::kF32) {
    auto e = RunSmall(Spec(Op::kGeluBwd), t, {1}, {1.0});
    auto h = RunSmall(GeluTanh(), t, {1}, {1.0});
    const double exact = 1.0833154705876864, tanh_form = actgrad::ref::GeluBwdTanh(1.0, 1.0);
    EXPECT_NEAR(e[0], exact, 1e-4);  // the spec's fp32 threshold
    EXPECT_NEAR(h[0], tanh_form, 1e-4);
    EXPECT_LT(std::fabs(e[0] - exact), std::fabs(e[0] - tanh_form));
    EXPECT_LT(std::fabs(h[0] - tanh_form), std::fabs(h[0] - exact));
  }
}

// An infinite gradient against GELU's tiny negative-tail
// factor. The double reference's factor is non-zero down to x = -38.6 (erf)
// and -21.5 (tanh), so g = +-Inf gives -+Inf there, though an fp32 factor
// underflows from x = -14 (and the approximations flush it earlier); only
// where the reference's factor itself is 0 (and at x = -Inf) is it NaN.
TEST_P(Edges, GeluInfiniteGradientInNegativeTail) {
  const DType t = GetParam();
  for (const OpSpec& s : {Spec(Op::kGeluBwd), GeluTanh()}) {
    const std::vector<double> xs = {-8.0, -10.0, -14.0, -20.0, -7.0, -1.0, -kInf};
    for (double g : {kInf, -kInf}) {
      auto o = RunSmall(s, t, std::vector<double>(xs.size(), g), xs);
      for (size_t i = 0; i < xs.size(); ++i) {
        const double want = RoundVal(t, RefValue(s, g, RoundVal(t, xs[i])));
        ExpectNear(o[i], want, t, SpecName(s) + " g=" + std::to_string(g) + " x=" + std::to_string(xs[i]));
        if (std::isfinite(xs[i])) EXPECT_EQ(o[i], -g) << SpecName(s) << " x=" << xs[i] << ": -g expected";
      }
    }
  }
}

// The same class of defect in every op: g = +-Inf, +-max and NaN against the
// points where the reference's factor is tiny, zero or pushes g*f across the
// largest finite value; NaN/Inf exactly where the reference has them.
TEST_P(Edges, ExtremeGradientsPlaceSpecialsAsTheReference) {
  const DType t = GetParam();
  const double as = actgrad::ref::kSeluAlpha * actgrad::ref::kSeluScale;
  struct Probe { OpSpec s; std::vector<double> x; };
  const std::vector<Probe> probes = {
      {Spec(Op::kGeluBwd), {-38.6, -38.61, -30.0, -14.0, -0.7517915, -0.75179154, 0.7517915, 5.7, 5.75, 9.0}},
      {GeluTanh(), {-21.5, -21.52, -0.7524614, 5.0, 9.0}},
      {Spec(Op::kSeluBwd), {-as, -1.7580993, -0.7580993, -0.75809932, -40.0, 0.0}},
      {Spec(Op::kHardswishBwd), {-4.0, -3.0, -1.5, 1.5, NextUp(1.5f), 3.0}},
      {Softshrink(0.5f), {0.5, -0.5, 0.25, 0.75}},
  };
  for (const Probe& p : probes) {
    for (double g : {kInf, -kInf, MaxFinite(t), -MaxFinite(t), kNaN}) {
      auto o = RunSmall(p.s, t, std::vector<double>(p.x.size(), g), p.x);
      for (size_t i = 0; i < p.x.size(); ++i) {
        const double want = RoundVal(t, RefValue(p.s, g, RoundVal(t, p.x[i])));
        const std::string what = SpecName(p.s) + " g=" + std::to_string(g) + " x=" + std::to_string(p.x[i]);
        if (std::isnan(want) || std::isinf(want)) {
          ExpectNear(o[i], want, t, what);
        } else {
          EXPECT_TRUE(std::isfinite(o[i])) << what << ": got " << o[i] << ", want " << want;
        }
      }
    }
  }
}

TEST_P(Edges, SoftshrinkAtLambd) {
  const DType t = GetParam();
  auto o = RunSmall(Softshrink(0.5f), t, {2, 2, 2, 2, 2, 2}, {0.5, -0.5, 0.75, -0.75, kNaN, 0.25});
  ExpectNear(o[0], 0.0, t, "x=lambd -> 0");
  ExpectNear(o[1], 0.0, t, "x=-lambd -> 0");
  ExpectNear(o[2], 2.0, t, "x>lambd -> g");
  ExpectNear(o[3], 2.0, t, "x<-lambd -> g");
  ExpectNear(o[4], 2.0, t, "x=NaN -> g");
  ExpectNear(o[5], 0.0, t, "inside -> 0");
  auto z = RunSmall(Softshrink(0.0f), t, {2, 2, 2}, {0.0, -0.0, MinDenorm(t)});
  ExpectNear(z[0], 0.0, t, "lambd=0, x=0 -> 0");
  ExpectNear(z[1], 0.0, t, "lambd=0, x=-0 -> 0");
  ExpectNear(z[2], 2.0, t, "lambd=0, x=denormal -> g (no flush to zero)");
}

TEST_P(Edges, LogitGradRules) {
  const DType t = GetParam();
  const std::vector<double> x = {0.5, 0.0, 1.0, -0.25, 1.25, kNaN, kInf, -kInf, 0.1};
  const std::vector<double> dy = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  {  // eps = -1 (recommended): x outside [0, 1] -> NaN; 0 and 1 -> Inf
    auto o = RunSmall(Logit(-1.0f), t, dy, x);
    ExpectNear(o[0], 4.0, t, "eps=-1 x=0.5");
    ExpectNear(o[1], kInf, t, "eps=-1 x=0 -> +Inf");
    ExpectNear(o[2], kInf, t, "eps=-1 x=1 -> +Inf");
    ExpectNear(o[3], kNaN, t, "eps=-1 x<0 -> NaN");
    ExpectNear(o[4], kNaN, t, "eps=-1 x>1 -> NaN");
    ExpectNear(o[5], kNaN, t, "x=NaN -> NaN");
    ExpectNear(o[6], kNaN, t, "x=+Inf -> NaN");
    ExpectNear(o[7], kNaN, t, "x=-Inf -> NaN");
  }
  {  // eps = 0.25: x outside [eps, 1-eps] -> 0, at the bounds inclusive
    auto o = RunSmall(Logit(0.25f), t, {1, 1, 1, 1, 1, 1}, {0.25, 0.75, 0.2, 0.8, 0.5, kInf});
    ExpectNear(o[0], 1.0 / (0.25 * 0.75), t, "eps=0.25 x=eps (inside)");
    ExpectNear(o[1], 1.0 / (0.25 * 0.75), t, "eps=0.25 x=1-eps (inside)");
    ExpectNear(o[2], 0.0, t, "eps=0.25 x<eps -> 0");
    ExpectNear(o[3], 0.0, t, "eps=0.25 x>1-eps -> 0");
    ExpectNear(o[4], 4.0, t, "eps=0.25 x=0.5");
    ExpectNear(o[5], kNaN, t, "eps=0.25 x=Inf -> NaN (rule 2 before rule 5)");
  }
  {  // eps = 0: x = 0 and 1 are inside -> Inf; outside -> 0
    auto o = RunSmall(Logit(0.0f), t, {1, -1, 1, 1}, {0.0, 1.0, -0.25, 1.25});
    ExpectNear(o[0], kInf, t, "eps=0 x=0 -> +Inf");
    ExpectNear(o[1], -kInf, t, "eps=0 x=1 dy=-1 -> -Inf");
    ExpectNear(o[2], 0.0, t, "eps=0 x<0 -> 0");
    ExpectNear(o[3], 0.0, t, "eps=0 x>1 -> 0");
  }
  {  // eps rules
    auto nan_eps = RunSmall(Logit(std::numeric_limits<float>::quiet_NaN()), t, {1, 1}, {0.5, 2.0});
    ExpectNear(nan_eps[0], kNaN, t, "eps=NaN -> NaN");
    ExpectNear(nan_eps[1], kNaN, t, "eps=NaN -> NaN");
    auto inf_eps = RunSmall(Logit(std::numeric_limits<float>::infinity()), t, {1, 1, 1}, {0.5, 2.0, kNaN});
    ExpectNear(inf_eps[0], 0.0, t, "eps=+Inf -> 0");
    ExpectNear(inf_eps[1], 0.0, t, "eps=+Inf -> 0");
    ExpectNear(inf_eps[2], kNaN, t, "eps=+Inf, x=NaN -> NaN (rule 2 first)");
    auto big_eps = RunSmall(Logit(2.0f), t, {1, 1}, {0.5, 3.0});
    ExpectNear(big_eps[0], kNaN, t, "eps>1 -> NaN");
    ExpectNear(big_eps[1], kNaN, t, "eps>1 -> NaN");
    auto one_eps = RunSmall(Logit(1.0f), t, {1, -2, 0, 1}, {0.5, 0.5, 0.5, 7.0});
    ExpectNear(one_eps[0], kInf, t, "eps=1 dy=1 -> +Inf");
    ExpectNear(one_eps[1], -kInf, t, "eps=1 dy=-2 -> -Inf");
    ExpectNear(one_eps[2], kNaN, t, "eps=1 dy=0 -> NaN");
    ExpectNear(one_eps[3], kInf, t, "eps=1 x=7 -> +Inf");
    auto neg_eps = RunSmall(Logit(-0.5f), t, {1, 1, 1}, {-0.1, 1.1, 0.5});
    ExpectNear(neg_eps[0], kNaN, t, "eps<0 x<0 -> NaN");
    ExpectNear(neg_eps[1], kNaN, t, "eps<0 x>1 -> NaN");
    ExpectNear(neg_eps[2], 4.0, t, "eps<0 x=0.5");
  }
  {  // dy Inf / NaN propagates
    auto o = RunSmall(Logit(-1.0f), t, {kInf, kNaN, -kInf}, {0.5, 0.5, 0.5});
    ExpectNear(o[0], kInf, t, "dy=Inf");
    ExpectNear(o[1], kNaN, t, "dy=NaN");
    ExpectNear(o[2], -kInf, t, "dy=-Inf");
  }
}

// The eps argument is a double; its fp32-rounded value is what the bounds use.
TEST(EdgesF32, LogitGradEpsBoundsExact) {
  const float eps = 1e-6f;
  const float hi = 1.0f - eps;
  auto o = RunSmall(Logit(eps), DType::kF32, {1, 1, 1, 1},
                    {double(eps), double(NextDown(eps)), double(hi), double(NextUp(hi))});
  EXPECT_NEAR(o[0], 1.0 / (double(eps) * (1.0 - double(eps))), 1e-4 / double(eps));
  EXPECT_EQ(o[1], 0.0);
  EXPECT_GT(o[2], 0.0);
  EXPECT_EQ(o[3], 0.0);
}

INSTANTIATE_TEST_SUITE_P(Accuracy, Edges, ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const ::testing::TestParamInfo<DType>& i) { return Name(i.param); });

// ---- GELU dtype promotion: f16 + bf16 -> f32; f32 with anything -> f32.

struct PromoCase {
  DType g, x, out;
};
void PrintTo(const PromoCase& c, std::ostream* os) { *os << Name(c.g) << "+" << Name(c.x) << "->" << Name(c.out); }

class GeluPromotion : public ::testing::TestWithParam<PromoCase> {};

TEST_P(GeluPromotion, MatchesReference) {
  const auto p = GetParam();
  const int64_t n = 65536;
  std::mt19937_64 rng(11);
  OpSpec s = Spec(Op::kGeluBwd);
  for (const OpSpec& spec : {s, GeluTanh()}) {
    Tensor tg(p.g, {n}), tx(p.x, {n}), to(p.out, {n});
    for (int64_t i = 0; i < n; ++i) {
      if (p.x == DType::kF32) tx.Set(i, RandomX(spec, rng)); else tx.SetBits16(i, uint16_t(i));
      if (p.g == DType::kF32) tg.Set(i, RandomG(rng)); else tg.Set(i, RandomG(rng));
    }
    EXPECT_TRUE(RunAndCheck(spec, tg, tx, to));
  }
}

INSTANTIATE_TEST_SUITE_P(Accuracy, GeluPromotion,
                         ::testing::Values(PromoCase{DType::kF16, DType::kBF16, DType::kF32},
                                           PromoCase{DType::kBF16, DType::kF16, DType::kF32},
                                           PromoCase{DType::kF32, DType::kF16, DType::kF32},
                                           PromoCase{DType::kF16, DType::kF32, DType::kF32},
                                           PromoCase{DType::kF32, DType::kBF16, DType::kF32},
                                           PromoCase{DType::kBF16, DType::kF32, DType::kF32}),
                         [](const ::testing::TestParamInfo<PromoCase>& i) {
                           return Name(i.param.g) + "_" + Name(i.param.x) + "_to_" + Name(i.param.out);
                         });

}  // namespace
}  // namespace apitest
