// inputs.*: the suite's Rng (tools/inputs/rng.h) gives splitmix64's published
// sequence, the views of the benchmarks and the tuner fit their sizes,
// and the operand generator (tools/inputs/op_inputs.h) stays inside
// the documented ranges, is deterministic and tiles its pattern. The pinned
// hashes hold the benchmark operands still (a change of these bytes changes
// every benchmark number): only platform-exact sequences are pinned (uniform
// draws; Normal() and SELU's expm1 go through the C library).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "actgrad/half.h"
#include "reference/reference.h"
#include "tools/inputs/hash.h"
#include "tools/inputs/op_inputs.h"
#include "tools/inputs/rng.h"
#include "tools/inputs/views.h"

namespace actgrad::inputs {
namespace {

constexpr Op kOps[] = {Op::kSeluBwd, Op::kHardswishBwd, Op::kGeluBwd, Op::kSoftshrinkBwd, Op::kLogitGrad};
constexpr DType kFloatTypes[] = {DType::kF32, DType::kF16, DType::kBF16};

// Element i of a buffer of dtype t, as a double.
double Decode(DType t, const std::vector<uint8_t>& b, size_t i) {
  switch (t) {
    case DType::kF32: { float f; std::memcpy(&f, b.data() + 4 * i, 4); return f; }
    case DType::kF16: { uint16_t h; std::memcpy(&h, b.data() + 2 * i, 2); return HalfToFloat(h); }
    case DType::kBF16: { uint16_t h; std::memcpy(&h, b.data() + 2 * i, 2); return BF16ToFloat(h); }
    case DType::kI32: { int32_t k; std::memcpy(&k, b.data() + 4 * i, 4); return k; }
    case DType::kI8: { int8_t k; std::memcpy(&k, b.data() + i, 1); return k; }
  }
  return 0.0;
}

std::vector<uint8_t> Generate(Op op, DType t, Role role, size_t n) {
  std::vector<uint8_t> b(n * DTypeSize(t));
  GenerateOperand(op, t, role, b.data(), n);
  return b;
}

uint64_t Fnv1a(const std::vector<uint8_t>& b) { return inputs::Fnv1aBytes(b.data(), b.size()); }

// Known values of the suite's FNV-1a (hash.h: its offset basis is not the
// published one): measurement keys, variant-list hashes and shard plans in
// existing logs and tables were computed with exactly these.
TEST(Hash, Fnv1aKnownValues) {
  EXPECT_EQ(inputs::Fnv1a(""), 0x14650fb0739d0383ull);
  EXPECT_EQ(inputs::Fnv1a("a"), 0x44bd8ad473cd9906ull);
  EXPECT_EQ(inputs::Fnv1a("foobar"), 0x88fad7c0a8ff07f2ull);
  EXPECT_EQ(inputs::Fnv1a("bar", inputs::Fnv1a("foo")), inputs::Fnv1a("foobar"));  // piece by piece
  const uint8_t bytes[] = {'f', 'o', 'o', 'b', 'a', 'r'};
  EXPECT_EQ(inputs::Fnv1aBytes(bytes, sizeof(bytes)), inputs::Fnv1a("foobar"));
  EXPECT_EQ(Hex12(0x88fad7c0a8ff07f2ull), "d7c0a8ff07f2");
}

TEST(Hash, SplitMix64IsTheRngsStep) {
  uint64_t s = 0;
  EXPECT_EQ(SplitMix64(&s), 0xe220a8397b1dcdafull);
  EXPECT_EQ(SplitMix64(&s), 0x6e789e6aa1b965f4ull);
}

TEST(Rng, FirstOutputsAreSplitmix64s) {
  // The reference outputs of splitmix64 from seed 0 (Vigna's splitmix64.c).
  Rng r{0};
  EXPECT_EQ(r.Next(), 0xe220a8397b1dcdafull);
  EXPECT_EQ(r.Next(), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(r.Next(), 0x06c45d188009454full);
  EXPECT_EQ(r.Next(), 0xf88bb8a8724c81ecull);
}

TEST(Rng, UniformUsesTheTop53Bits) {
  Rng a{42}, b{42};
  for (int i = 0; i < 1000; ++i) {
    const uint64_t bits = a.Next() >> 11;
    EXPECT_EQ(b.Uniform(), double(bits) * 0x1.0p-53);
  }
}

TEST(Rng, DrawsStayInTheirRanges) {
  Rng r{7};
  double sum = 0, sum2 = 0;
  constexpr int kN = 200000;
  for (int i = 0; i < kN; ++i) {
    const double u = r.Uniform(-2.0, 3.0);
    ASSERT_GE(u, -2.0);
    ASSERT_LT(u, 3.0);
    const double l = r.LogUniform(1e-30, 0.1);
    ASSERT_GE(l, 1e-30 * (1 - 1e-12));
    ASSERT_LE(l, 0.1 * (1 + 1e-12));
    const double z = r.Normal();
    ASSERT_TRUE(std::isfinite(z));
    sum += z;
    sum2 += z * z;
  }
  // Loose moments (deterministic seed): a broken Box-Muller is far off.
  EXPECT_NEAR(sum / kN, 0.0, 0.02);
  EXPECT_NEAR(sum2 / kN, 1.0, 0.02);
}

TEST(OpInputs, SeedsDifferPerOpAndRole) {
  std::vector<uint64_t> seeds;
  for (Op op : kOps)
    for (Role role : {Role::kG, Role::kX}) seeds.push_back(OperandSeed(op, role));
  for (size_t i = 0; i < seeds.size(); ++i)
    for (size_t j = i + 1; j < seeds.size(); ++j) EXPECT_NE(seeds[i], seeds[j]);
}

TEST(OpInputs, FloatOperandsAreInTheirRanges) {
  constexpr size_t kN = 50000;
  const double selu_min = -ref::kSeluAlpha * ref::kSeluScale, selu_max = 5.0 * ref::kSeluScale;
  for (Op op : kOps)
    for (DType t : kFloatTypes) {
      SCOPED_TRACE(std::string(OpName(op)) + " " + std::string(DTypeName(t)));
      const std::vector<uint8_t> g = Generate(op, t, Role::kG, kN), x = Generate(op, t, Role::kX, kN);
      size_t gelu_wide = 0;
      for (size_t i = 0; i < kN; ++i) {
        const double gv = Decode(t, g, i), xv = Decode(t, x, i);
        ASSERT_TRUE(std::isfinite(gv) && std::fabs(gv) < 7.0) << i;  // N(0,1)
        ASSERT_TRUE(std::isfinite(xv)) << i;
        // Rounding to f16/bf16 may reach the bounds (the tolerance).
        const double tol = t == DType::kF32 ? 1e-6 : 1.0 / 64;
        switch (op) {
          case Op::kSeluBwd: ASSERT_TRUE(xv >= selu_min - tol && xv <= selu_max + tol) << xv; break;
          case Op::kHardswishBwd: ASSERT_TRUE(xv >= -5.0 && xv <= 5.0) << xv; break;
          case Op::kGeluBwd:
            ASSERT_TRUE(xv >= -10.0 && xv <= 10.0) << xv;
            gelu_wide += std::fabs(xv) > 6.0;  // only the U[-10,10] half reaches here
            break;
          case Op::kSoftshrinkBwd: ASSERT_TRUE(xv >= -2.0 && xv <= 2.0) << xv; break;
          case Op::kLogitGrad: ASSERT_TRUE(xv >= 0.0 && xv <= 1.0) << xv; break;
        }
        if (op == Op::kLogitGrad && t == DType::kF32) ASSERT_TRUE(xv > 0.0 && xv < 1.0) << xv;
      }
      // Half of GELU's x is U[-10,10]: 40 % of those lie beyond |6|, so ~20 %.
      if (op == Op::kGeluBwd) EXPECT_NEAR(double(gelu_wide) / kN, 0.2, 0.02);
    }
}

TEST(OpInputs, IntegerOperandsAreSmallIntegers) {
  constexpr size_t kN = 50000;
  for (DType t : {DType::kI32, DType::kI8}) {
    SCOPED_TRACE(std::string(DTypeName(t)));
    const double lim = t == DType::kI8 ? 40.0 : 1000.0;
    const std::vector<uint8_t> g = Generate(Op::kSeluBwd, t, Role::kG, kN), y = Generate(Op::kSeluBwd, t, Role::kX, kN);
    double gmin = 1e9, gmax = -1e9;
    for (size_t i = 0; i < kN; ++i) {
      const double gv = Decode(t, g, i), yv = Decode(t, y, i);
      gmin = std::min(gmin, gv), gmax = std::max(gmax, gv);
      ASSERT_TRUE(gv >= -lim && gv < lim) << gv;
      ASSERT_TRUE(yv >= -1.0 && yv <= 5.0) << yv;  // trunc(selu(z)), z in [-30, 5]
    }
    EXPECT_EQ(gmin, -lim);  // the whole range is used
    EXPECT_EQ(gmax, lim - 1);
  }
}

// The f32, f16 and bf16 operands of an op are the same values rounded.
TEST(OpInputs, NarrowFloatsAreTheF32ValuesRounded) {
  constexpr size_t kN = 4096;
  for (Op op : kOps)
    for (Role role : {Role::kG, Role::kX}) {
      const std::vector<uint8_t> f = Generate(op, DType::kF32, role, kN), h = Generate(op, DType::kF16, role, kN),
                                 b = Generate(op, DType::kBF16, role, kN);
      for (size_t i = 0; i < kN; ++i) {
        const float v = float(Decode(DType::kF32, f, i));
        uint16_t hv, bv;
        std::memcpy(&hv, h.data() + 2 * i, 2);
        std::memcpy(&bv, b.data() + 2 * i, 2);
        ASSERT_EQ(hv, FloatToHalf(v)) << OpName(op) << " " << i;
        ASSERT_EQ(bv, FloatToBF16(v)) << OpName(op) << " " << i;
      }
    }
}

TEST(OpInputs, FillTilesTheFirstPatternOfTheSequence) {
  const DType t = DType::kF16;
  const size_t n = 2 * kPatternElements + 3;
  std::vector<uint8_t> filled(n * 2);
  FillOperand(Op::kGeluBwd, t, Role::kX, filled.data(), n);
  const std::vector<uint8_t> pattern = Generate(Op::kGeluBwd, t, Role::kX, kPatternElements);
  EXPECT_EQ(0, std::memcmp(filled.data(), pattern.data(), pattern.size()));
  EXPECT_EQ(0, std::memcmp(filled.data() + pattern.size(), pattern.data(), pattern.size()));
  EXPECT_EQ(0, std::memcmp(filled.data() + 2 * pattern.size(), pattern.data(), 6));
  std::vector<uint8_t> again(n * 2);
  FillOperand(Op::kGeluBwd, t, Role::kX, again.data(), n);  // from the cache
  EXPECT_EQ(filled, again);
}

TEST(OpInputs, StoreOperandTruncatesAndSaturatesIntegers) {
  int32_t k;
  StoreOperand(DType::kI32, -2.9, &k);
  EXPECT_EQ(k, -2);
  StoreOperand(DType::kI32, 1e12, &k);
  EXPECT_EQ(k, 2147483647);
  int8_t s;
  StoreOperand(DType::kI8, -300.0, &s);
  EXPECT_EQ(s, -128);
  StoreOperand(DType::kI8, 5.9, &s);
  EXPECT_EQ(s, 5);
}

// The benchmark operands, pinned where every platform draws the same bits.
TEST(OpInputs, PlatformExactSequencesArePinned) {
  constexpr size_t kN = 4096;
  EXPECT_EQ(Fnv1a(Generate(Op::kHardswishBwd, DType::kF32, Role::kX, kN)), 0x82f3ee464f9244d1ull);
  EXPECT_EQ(Fnv1a(Generate(Op::kSoftshrinkBwd, DType::kF32, Role::kX, kN)), 0x3b291638f80171c1ull);
  EXPECT_EQ(Fnv1a(Generate(Op::kLogitGrad, DType::kF32, Role::kX, kN)), 0xb2f0311d6cb673acull);
  EXPECT_EQ(Fnv1a(Generate(Op::kSeluBwd, DType::kI32, Role::kG, kN)), 0x02870860363642ccull);
  EXPECT_EQ(Fnv1a(Generate(Op::kSeluBwd, DType::kI8, Role::kG, kN)), 0xd87a917c42cc0376ull);
}

// The tuner measures its cells at sizes the layouts fit (FitDown); the
// transposed view's out rows (n / 1024 elements) are whole 64-byte lines for
// the 16- and 32-bit dtypes from 32K up, as in the benchmarks' views.
TEST(Views, FitDownKeepsTransposedRowsOnWholeLines) {
  EXPECT_EQ(FitDown(ViewLayout::kTransposed, 23'726'566), size_t(724) * 32768);  // 2^24 * sqrt(2)
  EXPECT_EQ(FitDown(ViewLayout::kTransposed, 1u << 24), size_t(1) << 24);
  EXPECT_EQ(FitDown(ViewLayout::kTransposed, 65535), size_t(32768));
  EXPECT_EQ(FitDown(ViewLayout::kTransposed, 32767), size_t(31744));  // below 32K: whole 1024s
  EXPECT_EQ(FitDown(ViewLayout::kTransposed, 16383), size_t(0));
  EXPECT_EQ(FitDown(ViewLayout::kStrided, 23'726'566), size_t(23'726'566) / 1024 * 1024);
  EXPECT_EQ(FitDown(ViewLayout::kBcast, 100), size_t(64));
  for (size_t n : {size_t(32768), size_t(1'474'560), size_t(724) * 32768}) {
    const LayoutViews v = ViewsOf(ViewLayout::kTransposed, n);
    ASSERT_EQ(v.out.dims.size(), 2u);
    EXPECT_EQ(v.out.dims[0], 1024);
    EXPECT_EQ(v.out.dims[1] * 2 % 64, 0) << n;  // a 16-bit out row in whole lines
    EXPECT_EQ(v.x.strides[0], 1);                 // x read down the storage's columns
  }
}

}  // namespace
}  // namespace actgrad::inputs
