// Cast round modes of the emulator, checked through the AscendC Cast API
// against neighbours found independently (tables of every fp16 / bf16 value)
// and against actgrad/half.h for round-to-nearest-even.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "actgrad/half.h"
#include "kernel_operator.h"

using namespace AscendC;

namespace {

// Runs Cast<D, S> over `in` in one emulated core.
template <typename D, typename S>
std::vector<D> CastAll(const std::vector<S>& in, RoundMode mode) {
  std::vector<D> out(in.size());
  const uint32_t chunk = 2048;
  AscendEmu::Launch("k_cast", 1, {}, [&] {
    KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
    TPipe pipe;
    TBuf<> bs, bd;
    pipe.InitBuffer(bs, chunk * sizeof(S));
    pipe.InitBuffer(bd, chunk * sizeof(D));
    LocalTensor<S> s = bs.Get<S>();
    LocalTensor<D> d = bd.Get<D>();
    for (size_t base = 0; base < in.size(); base += chunk) {
      const uint32_t n = uint32_t(std::min<size_t>(chunk, in.size() - base));
      for (uint32_t i = 0; i < n; ++i) s.SetValue(i, in[base + i]);
      Cast(d, s, mode, n);
      for (uint32_t i = 0; i < n; ++i) out[base + i] = d.GetValue(i);
    }
  });
  return out;
}

// Sorted finite values of a 16-bit format (decoder given), with bits.
struct Table {
  std::vector<std::pair<double, uint16_t>> v;
  double max;
};
Table MakeTable(double (*dec)(uint16_t)) {
  Table t;
  for (uint32_t b = 0; b < 65536; ++b) {
    const double x = dec(uint16_t(b));
    if (std::isfinite(x) && !(x == 0 && std::signbit(x))) t.v.push_back({x, uint16_t(b)});
  }
  std::sort(t.v.begin(), t.v.end());
  t.max = t.v.back().first;
  return t;
}
double DecHalf(uint16_t b) { return actgrad::HalfToFloat(b); }
double DecBF16(uint16_t b) { return actgrad::BF16ToFloat(b); }

// Expected result of rounding f under mode, from the value table.
double Expected(const Table& t, double f, RoundMode m, int mant_bits) {
  const auto it = std::lower_bound(t.v.begin(), t.v.end(), std::make_pair(f, uint16_t(0)));
  if (it != t.v.end() && it->first == f) return f;
  const double inf = std::numeric_limits<double>::infinity();
  double lo, hi;
  uint16_t lob = 0, hib = 0;
  if (it == t.v.end()) {
    lo = t.max;
    hi = inf;
    lob = t.v.back().second;
  } else if (it == t.v.begin()) {
    lo = -inf;
    hi = it->first;
    hib = it->second;
  } else {
    lo = std::prev(it)->first;
    lob = std::prev(it)->second;
    hi = it->first;
    hib = it->second;
  }
  // ulp spacing beyond the largest finite value continues the last binade
  const double spacing = t.max - std::prev(t.v.end(), 2)->first;  // last binade's ulp
  if (std::isinf(hi)) hi = t.max + spacing;  // the virtual next value (2^(emax+1))
  if (std::isinf(lo)) lo = -t.max - spacing;
  const double dlo = f - lo, dhi = hi - f;
  auto even_lo = [&] { return (std::fabs(lo) == t.max + spacing) ? true : ((lob & 1) == 0); };
  double r;
  switch (m) {
    case RoundMode::CAST_FLOOR: r = lo; break;
    case RoundMode::CAST_CEIL: r = hi; break;
    case RoundMode::CAST_TRUNC: r = f > 0 ? lo : hi; break;
    case RoundMode::CAST_ROUND: r = dlo < dhi ? lo : dhi < dlo ? hi : (f > 0 ? hi : lo); break;
    case RoundMode::CAST_ODD: r = ((lob & 1) == 1 && std::fabs(lo) <= t.max) ? lo : hi; break;
    default: r = dlo < dhi ? lo : dhi < dlo ? hi : (even_lo() ? lo : hi); break;
  }
  (void)hib;
  (void)mant_bits;
  if (std::fabs(r) > t.max) {
    // beyond the format: directed modes toward zero give the largest finite
    if (m == RoundMode::CAST_TRUNC || m == RoundMode::CAST_ODD) return f > 0 ? t.max : -t.max;
    return r > 0 ? inf : -inf;
  }
  return r;
}

std::vector<float> TestFloats(bool bf16) {
  std::vector<float> v;
  std::mt19937 rng(7);
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = rng();
    if (!bf16 && i % 2) u = (u & 0x8FFFFFFFu) | 0x30000000u;  // fp16 range more often
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isfinite(f)) v.push_back(f);
  }
  // ties, neighbours of ties, subnormal and overflow boundaries
  const double base[] = {1.0, 1.5, 65504.0, 65519.0, 65520.0, 65536.0, 6.103515625e-05, 5.9604644775390625e-08,
                         2.98e-08, 3.4e38, 1.1754943508222875e-38, 9.2e-41};
  for (double b : base)
    for (int s = -1; s <= 1; s += 2)
      for (int k = -2; k <= 2; ++k) {
        const float f = float(s * b);
        uint32_t u;
        std::memcpy(&u, &f, 4);
        u += k;
        float g;
        std::memcpy(&g, &u, 4);
        v.push_back(g);
      }
  for (int i = 0; i < 4096; ++i) {  // exact halfway points between fp16 values
    const float a = actgrad::HalfToFloat(uint16_t(i * 13));
    const float b = actgrad::HalfToFloat(uint16_t(i * 13 + 1));
    if (std::isfinite(a) && std::isfinite(b)) v.push_back(float((double(a) + double(b)) / 2));
  }
  return v;
}

const RoundMode kModes[] = {RoundMode::CAST_RINT, RoundMode::CAST_ROUND, RoundMode::CAST_FLOOR,
                            RoundMode::CAST_CEIL, RoundMode::CAST_TRUNC, RoundMode::CAST_ODD, RoundMode::CAST_NONE};

TEST(Cast, FloatToHalfAllModes) {
  const Table t = MakeTable(DecHalf);
  const auto in = TestFloats(false);
  for (RoundMode m : kModes) {
    const auto out = CastAll<half, float>(in, m);
    size_t bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double want = Expected(t, in[i], m == RoundMode::CAST_NONE ? RoundMode::CAST_RINT : m, 10);
      const double got = float(out[i]);
      if (!(got == want) && bad++ < 5) ADD_FAILURE() << "mode " << int(m) << ": " << in[i] << " -> " << got << ", want " << want;
      if (got == 0 && want == 0 && std::signbit(got) != std::signbit(double(in[i])) && bad++ < 5)
        ADD_FAILURE() << "sign of zero for " << in[i];
    }
    EXPECT_EQ(bad, 0u) << "mode " << int(m);
    if (m == RoundMode::CAST_RINT)
      for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i].bits, actgrad::FloatToHalf(in[i])) << in[i];
  }
}

TEST(Cast, FloatToBF16DirectedModes) {
  const Table t = MakeTable(DecBF16);
  const auto in = TestFloats(true);
  for (RoundMode m : {RoundMode::CAST_RINT, RoundMode::CAST_ROUND, RoundMode::CAST_FLOOR, RoundMode::CAST_CEIL,
                      RoundMode::CAST_TRUNC}) {
    const auto out = CastAll<bfloat16_t, float>(in, m);
    size_t bad = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double want = Expected(t, in[i], m, 7);
      const double got = float(out[i]);
      if (!(got == want) && bad++ < 5) ADD_FAILURE() << "mode " << int(m) << ": " << in[i] << " -> " << got << ", want " << want;
    }
    EXPECT_EQ(bad, 0u);
    if (m == RoundMode::CAST_RINT)
      for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(out[i].bits, actgrad::FloatToBF16(in[i])) << in[i];
  }
}

TEST(Cast, NaNAndInfinitiesPass) {
  const std::vector<float> in = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                 -std::numeric_limits<float>::infinity()};
  for (RoundMode m : kModes) {
    const auto h = CastAll<half, float>(in, m);
    EXPECT_TRUE(std::isnan(float(h[0])));
    EXPECT_EQ(float(h[1]), std::numeric_limits<float>::infinity());
    EXPECT_EQ(float(h[2]), -std::numeric_limits<float>::infinity());
  }
}

TEST(Cast, WideningIsExact) {
  std::vector<half> hs;
  std::vector<bfloat16_t> bs;
  for (uint32_t b = 0; b < 65536; ++b) {
    hs.push_back(half::FromBits(uint16_t(b)));
    bs.push_back(bfloat16_t::FromBits(uint16_t(b)));
  }
  const auto hf = CastAll<float, half>(hs, RoundMode::CAST_NONE);
  const auto bf = CastAll<float, bfloat16_t>(bs, RoundMode::CAST_NONE);
  for (uint32_t b = 0; b < 65536; ++b) {
    const float a = actgrad::HalfToFloat(uint16_t(b)), c = actgrad::BF16ToFloat(uint16_t(b));
    ASSERT_TRUE(hf[b] == a || (std::isnan(hf[b]) && std::isnan(a))) << b;
    ASSERT_TRUE(bf[b] == c || (std::isnan(bf[b]) && std::isnan(c))) << b;
  }
  std::vector<int8_t> i8;
  for (int i = -128; i < 128; ++i) i8.push_back(int8_t(i));
  const auto h8 = CastAll<half, int8_t>(i8, RoundMode::CAST_NONE);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(float(h8[i]), float(i - 128));
}

TEST(Cast, IntegerConversions) {
  // int32 -> float: round modes above 2^24
  std::vector<int32_t> ints = {16777217, -16777217, 16777219, 2147483647, -2147483647 - 1, 33554435, 0, -5};
  const auto rint = CastAll<float, int32_t>(ints, RoundMode::CAST_RINT);
  const auto fl = CastAll<float, int32_t>(ints, RoundMode::CAST_FLOOR);
  const auto ce = CastAll<float, int32_t>(ints, RoundMode::CAST_CEIL);
  const auto tr = CastAll<float, int32_t>(ints, RoundMode::CAST_TRUNC);
  EXPECT_EQ(rint[0], 16777216.0f);  // tie to even
  EXPECT_EQ(rint[2], 16777220.0f);  // tie to even (upwards)
  EXPECT_EQ(fl[1], -16777218.0f);
  EXPECT_EQ(ce[1], -16777216.0f);
  EXPECT_EQ(tr[1], -16777216.0f);
  EXPECT_EQ(rint[3], 2147483648.0f);
  EXPECT_EQ(tr[3], 2147483520.0f);
  EXPECT_EQ(fl[6], 0.0f);
  // float -> int32: modes and saturation (NaN -> 0)
  const std::vector<float> fs = {2.5f, -2.5f, 3.5f, -0.5f, 1e10f, -1e10f, std::numeric_limits<float>::quiet_NaN(), 2147483648.0f};
  const auto r = CastAll<int32_t, float>(fs, RoundMode::CAST_RINT);
  const auto a = CastAll<int32_t, float>(fs, RoundMode::CAST_ROUND);
  const auto z = CastAll<int32_t, float>(fs, RoundMode::CAST_TRUNC);
  const auto f = CastAll<int32_t, float>(fs, RoundMode::CAST_FLOOR);
  EXPECT_EQ(r[0], 2);
  EXPECT_EQ(r[2], 4);
  EXPECT_EQ(a[0], 3);
  EXPECT_EQ(a[1], -3);
  EXPECT_EQ(z[1], -2);
  EXPECT_EQ(f[3], -1);
  EXPECT_EQ(z[4], 2147483647);
  EXPECT_EQ(z[5], -2147483647 - 1);
  EXPECT_EQ(z[6], 0);
  EXPECT_EQ(z[7], 2147483647);
  // half -> int8 saturates
  const std::vector<half> hv = {half(200.0f), half(-200.0f), half(-7.9f), half(126.6f)};
  const auto h8 = CastAll<int8_t, half>(hv, RoundMode::CAST_TRUNC);
  EXPECT_EQ(h8[0], 127);
  EXPECT_EQ(h8[1], -128);
  EXPECT_EQ(h8[2], -7);
  EXPECT_EQ(h8[3], 126);
}

TEST(Cast, FloatToFloatRoundsToIntegral) {
  const std::vector<float> fs = {2.5f, -2.5f, 1.25f, -1.75f};
  const auto r = CastAll<float, float>(fs, RoundMode::CAST_RINT);
  const auto c = CastAll<float, float>(fs, RoundMode::CAST_CEIL);
  EXPECT_EQ(r[0], 2.0f);
  EXPECT_EQ(r[1], -2.0f);
  EXPECT_EQ(c[3], -1.0f);
}

}  // namespace
