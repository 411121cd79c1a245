// Accuracy and special-value tests of every kernels/math policy on every
// Highway target compiled in and supported by this CPU.
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "math_eval.h"

namespace actgrad::math_test {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float FromBits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// Special inputs: exact expectations are checked for these (besides the
// error bound).
std::vector<float> GeluSpecials() {
  return {0.0f, -0.0f, kInf, -kInf, kNaN, -kNaN, FromBits(0x7FA00000u) /* sNaN */,
          FLT_TRUE_MIN, -FLT_TRUE_MIN, 1e-40f, -1e-40f, FLT_MIN, -FLT_MIN,
          FLT_MAX, -FLT_MAX, 3.0f, -3.0f, 1e10f, -1e10f, 1e30f, -1e30f,
          100.0f, -100.0f, 16.0f, -16.0f, 10.5f, -10.5f, 14.0f, -14.0f, 20.0f, -20.0f,
          0.7517915f, -0.7517915f, 1e-20f, -1e-20f};
}

// Dense sweep: [-10, 10] step 1e-4, uniform floats in [-16, 16], N(0, 1),
// every float around f's zero near x = -0.7518 (and the mirror point),
// then the specials.
const std::vector<float>& GeluInputs() {
  static const std::vector<float> v = [] {
    std::vector<float> x;
    for (int i = -100000; i <= 100000; ++i) x.push_back(float(i * 1e-4));
    std::mt19937 rng(12345);
    std::uniform_real_distribution<float> uni(-16.0f, 16.0f);
    std::normal_distribution<float> nrm(0.0f, 1.0f);
    for (int i = 0; i < 200000; ++i) x.push_back(uni(rng));
    for (int i = 0; i < 200000; ++i) x.push_back(nrm(rng));
    for (float c : {-0.7517915f, -0.79f, 0.7517915f}) {  // 0.79: tanh-mode zero
      float lo = c - 2e-3f, hi = c + 2e-3f;
      for (float f = lo; f <= hi; f = std::nextafter(f, kInf)) x.push_back(f);
    }
    for (float f : GeluSpecials()) x.push_back(f);
    return x;
  }();
  return v;
}

struct Worst {
  double err = 0;
  float x = 0;
  float got = 0;
  double ref = 0;
};

// Every 16th input plus the specials (for the partial-vector runs).
std::vector<float> Thin(const std::vector<float>& v, size_t keep_tail) {
  std::vector<float> r;
  for (size_t i = 0; i + keep_tail < v.size(); i += 16) r.push_back(v[i]);
  r.insert(r.end(), v.end() - keep_tail, v.end());
  return r;
}

// cap: 0 = full vectors, else CappedTag<float, cap>.
void CheckGelu(Kind kind, const std::string& name, int cap = 0) {
  static const std::vector<float> thin = Thin(GeluInputs(), GeluSpecials().size());
  const auto& x = cap == 0 ? GeluInputs() : thin;
  std::vector<double> ref(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    ref[i] = kind == Kind::kGeluErf ? RefGeluErf(x[i]) : RefGeluTanh(x[i]);
  std::vector<float> out(x.size());
  int ran = 0;
  ForEachTarget([&](int64_t target) {
    double claimed = 0;
    int64_t ran_on = 0;
    std::fill(out.begin(), out.end(), -12345.0f);
    if (!Eval(kind, name, x.data(), nullptr, out.data(), x.size(), &claimed, &ran_on, cap)) return;
    ++ran;
    const std::string tn =
        TargetLowerName(target) + (cap ? "/cap" + std::to_string(cap) : std::string());
    ASSERT_EQ(ran_on, target) << "dispatch did not reach " << tn;
    Worst w;
    size_t nan_mismatch = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const double e = GeluErr(out[i], ref[i]);
      if (std::isinf(e)) {
        if (nan_mismatch++ < 5)
          ADD_FAILURE() << name << "." << tn << ": special mismatch at x=" << x[i] << " got "
                        << out[i] << " ref " << ref[i];
        continue;
      }
      if (e > w.err) w = {e, x[i], out[i], ref[i]};
    }
    EXPECT_EQ(nan_mismatch, 0u);
    std::printf("  %-10s %-7s max_err %.3e (claimed %.1e) at x=%.9g got %.9g ref %.12g\n",
                name.c_str(), tn.c_str(), w.err, claimed, double(w.x), double(w.got), w.ref);
    EXPECT_LE(w.err, claimed) << name << "." << tn << " at x=" << w.x;

    // Exact specials.
    std::vector<float> sx = {kInf, -kInf, kNaN, -kNaN, FLT_MAX, -FLT_MAX, 1e10f, -1e10f,
                             100.0f, -100.0f, 20.0f, -20.0f};
    std::vector<float> so(sx.size());
    Eval(kind, name, sx.data(), nullptr, so.data(), sx.size(), &claimed, &ran_on, cap);
    for (size_t i = 0; i < sx.size(); ++i) {
      if (std::isnan(sx[i])) {
        EXPECT_TRUE(std::isnan(so[i])) << name << "." << tn << " f(NaN) = " << so[i];
      } else if (sx[i] > 0) {
        EXPECT_EQ(so[i], 1.0f) << name << "." << tn << " f(" << sx[i] << ")";
      } else {
        EXPECT_EQ(so[i], 0.0f) << name << "." << tn << " f(" << sx[i] << ")";  // +-0
      }
    }
  });
  EXPECT_GT(ran, 0) << name << " ran on no target";
}

// ----------------------------------------------------------------- division
struct DivCase {
  std::vector<float> num, den;
  size_t specials = 0;  // the last `specials` pairs are the special grid
};

const DivCase& DivInputs() {
  static const DivCase c = [] {
    DivCase c;
    std::mt19937 rng(777);
    // Every mantissa of den in [1, 2) (scale-invariance covers the rest of the
    // normal range), with random numerators.
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    for (uint32_t m = 0; m < (1u << 23); m += 3) {
      c.den.push_back(FromBits(0x3F800000u | m));
      c.num.push_back(u(rng));
    }
    // Random normal floats of any exponent for both.
    std::uniform_int_distribution<uint32_t> bits(0x00800000u, 0x7F7FFFFFu);
    for (int i = 0; i < 300000; ++i) {
      c.num.push_back(FromBits(bits(rng) | (i & 1 ? 0x80000000u : 0u)));
      c.den.push_back(FromBits(bits(rng) | (i & 2 ? 0x80000000u : 0u)));
    }
    // LogitGrad's shape: dy / (x (1 - x)) for x in [0, 1].
    std::normal_distribution<float> nrm(0.0f, 1.0f);
    for (int i = 0; i <= 200000; ++i) {
      const float x = float(i) / 200000.0f;
      c.num.push_back(nrm(rng));
      c.den.push_back(x * (1.0f - x));
    }
    // Specials: all pairs.
    const std::vector<float> sp = {0.0f, -0.0f, kInf, -kInf, kNaN, FLT_TRUE_MIN, -FLT_TRUE_MIN,
                                   1e-40f, -3e-39f, FLT_MIN, -FLT_MIN, 1.0f, -1.0f, 0.25f, 3.5f,
                                   FLT_MAX, -FLT_MAX, 0x1p126f, -0x1.8p126f, 0x1p127f, 1e-30f,
                                   1e30f, 0x1.fffffep125f, 0x1p-125f};
    for (float a : sp)
      for (float b : sp) {
        c.num.push_back(a);
        c.den.push_back(b);
      }
    c.specials = sp.size() * sp.size();
    return c;
  }();
  return c;
}

bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

void CheckDiv(const std::string& name, int cap = 0) {
  static const DivCase thin = [] {
    const auto& f = DivInputs();
    DivCase t;
    t.num = Thin(f.num, f.specials);
    t.den = Thin(f.den, f.specials);
    t.specials = f.specials;
    return t;
  }();
  const auto& c = cap == 0 ? DivInputs() : thin;
  const size_t n = c.num.size();
  std::vector<float> out(n);
  int ran = 0;
  ForEachTarget([&](int64_t target) {
    double claimed = 0;
    int64_t ran_on = 0;
    if (!Eval(Kind::kDiv, name, c.num.data(), c.den.data(), out.data(), n, &claimed, &ran_on, cap))
      return;
    ++ran;
    const std::string tn =
        TargetLowerName(target) + (cap ? "/cap" + std::to_string(cap) : std::string());
    ASSERT_EQ(ran_on, target);
    Worst w;
    size_t bad = 0;
    for (size_t i = 0; i < n; ++i) {
      const float num = c.num[i], den = c.den[i];
      const float ieee = num / den;
      const double ref = double(num) / double(den);
      // Exact wherever IEEE division gives a non-finite or zero result, or
      // where the inputs are special, and everywhere for true division.
      const bool special = !std::isfinite(ieee) || ieee == 0.0f || !std::isnormal(den) ||
                           std::fabs(den) >= 0x1p126f || !std::isfinite(num);
      if (claimed == 0.0 || special) {
        // Overflow rounding at the very top of the range may differ by one
        // rounding (FLT_MAX vs Inf): allowed only when |ref| is within 1e-6
        // of FLT_MAX.
        const bool edge = std::fabs(ref) > FLT_MAX * (1 - 1e-6) && std::fabs(ref) < FLT_MAX * (1 + 1e-6);
        if (!SameFloat(out[i], ieee) && !(edge && claimed != 0.0)) {
          if (bad++ < 8)
            ADD_FAILURE() << name << "." << tn << ": " << num << " / " << den << " = " << out[i]
                          << ", IEEE " << ieee;
        }
        continue;
      }
      const double den_m = std::max(std::fabs(ref), double(FLT_MIN));
      const double e = std::fabs(double(out[i]) - ref) / den_m;
      if (e > w.err) w = {e, num, out[i], ref};
    }
    EXPECT_EQ(bad, 0u);
    std::printf("  %-10s %-7s max_rel_err %.3e (claimed %.1e) at num=%.9g got %.9g ref %.12g\n",
                name.c_str(), tn.c_str(), w.err, claimed, double(w.x), double(w.got), w.ref);
    if (claimed != 0.0) {
      EXPECT_LE(w.err, claimed) << name << "." << tn;
    }
  });
  EXPECT_GT(ran, 0);
}

TEST(math, gelu_erf_r6) { CheckGelu(Kind::kGeluErf, "erf_r6"); }
TEST(math, gelu_erf_r3) { CheckGelu(Kind::kGeluErf, "erf_r3"); }
TEST(math, gelu_erf_r2) { CheckGelu(Kind::kGeluErf, "erf_r2"); }
TEST(math, gelu_erf_as) { CheckGelu(Kind::kGeluErf, "erf_as"); }
TEST(math, gelu_erf_sleef) {
  bool listed = false;
  ForEachTarget([&](int64_t) {
    for (const auto& p : ListPolicies()) listed |= p.name == "erf_sleef";
  });
  if (!listed) GTEST_SKIP() << "built without SLEEF";
  CheckGelu(Kind::kGeluErf, "erf_sleef");
}
TEST(math, gelu_tanh_exp) { CheckGelu(Kind::kGeluTanh, "tanh_exp"); }
TEST(math, gelu_tanh_hwy) { CheckGelu(Kind::kGeluTanh, "tanh_hwy"); }
// The piecewise policies exist on 16-lane (AVX-512) targets only.
void CheckGeluWhereListed(Kind kind, const char* name) {
  bool listed = false;
  ForEachTarget([&](int64_t) {
    for (const auto& p : ListPolicies()) listed |= p.name == name;
  });
  if (!listed) GTEST_SKIP() << name << " is not on any target of this CPU";
  CheckGelu(kind, name);
}
TEST(math, gelu_erf_pw6) { CheckGeluWhereListed(Kind::kGeluErf, "erf_pw6"); }
TEST(math, gelu_erf_pw5) { CheckGeluWhereListed(Kind::kGeluErf, "erf_pw5"); }
TEST(math, gelu_tanh_pw6) { CheckGeluWhereListed(Kind::kGeluTanh, "tanh_pw6"); }
TEST(math, gelu_tanh_pw5) { CheckGeluWhereListed(Kind::kGeluTanh, "tanh_pw5"); }
TEST(math, gelu_erf_pw4h) { CheckGeluWhereListed(Kind::kGeluErf, "erf_pw4h"); }
TEST(math, gelu_tanh_pw4h) { CheckGeluWhereListed(Kind::kGeluTanh, "tanh_pw4h"); }
TEST(math, div_exact) { CheckDiv("div"); }
TEST(math, div_rcp_nr) { CheckDiv("rcp_nr"); }
TEST(math, div_rcp_x) { CheckDiv("rcp_x"); }  // rcp_nr's division; its x range is the op's (kernels)

// Partial vectors (CappedTag<float, 1/4/8>: e.g. the 128- and 256-bit
// vectors of AVX3, which take other SLEEF entry points): same bounds and
// specials, on a thinned input set.
TEST(math, partial_vectors) {
  const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    ForceTarget(Targets()[0]);
    for (const auto& p : ListPolicies()) v.push_back(std::to_string(int(p.kind)) + p.name);
    ForceTarget(0);
    return v;
  }();
  for (int cap : {1, 4, 8}) {
    for (const auto& key : names) {
      const Kind kind = Kind(key[0] - '0');
      const std::string name = key.substr(1);
      if (kind == Kind::kDiv) {
        CheckDiv(name, cap);
      } else {
        CheckGelu(kind, name, cap);
      }
    }
  }
}

// The per-target lists: every target lists the portable policies, names are
// unique per kind, claims are sane, and the names tested above are the ones
// listed (a new policy must get a test).
TEST(math, approx_lists) {
  const std::set<std::string> tested = {"0 erf_r6", "0 erf_r3",   "0 erf_r2", "0 erf_as",
                                        "0 erf_sleef", "1 tanh_exp", "1 tanh_hwy", "2 div",
                                        "2 rcp_nr",   "2 rcp_x",    "0 erf_pw6",  "0 erf_pw5",  "1 tanh_pw6",
                                        "1 tanh_pw5", "0 erf_pw4h", "1 tanh_pw4h"};
  ForEachTarget([&](int64_t target) {
    std::set<std::string> seen;
    for (const auto& p : ListPolicies()) {
      const std::string key = std::to_string(int(p.kind)) + " " + p.name;
      EXPECT_TRUE(seen.insert(key).second) << "duplicate " << key;
      EXPECT_TRUE(tested.count(key)) << "untested policy " << key;
      EXPECT_GE(p.claimed, 0.0);
      EXPECT_LT(p.claimed, 1e-3) << key;
    }
    for (const char* must : {"0 erf_r6", "0 erf_r3", "0 erf_r2", "0 erf_as", "1 tanh_exp",
                             "1 tanh_hwy", "2 div", "2 rcp_nr"})
      EXPECT_TRUE(seen.count(must)) << must << " missing on " << TargetLowerName(target);
  });
}

}  // namespace
}  // namespace actgrad::math_test
