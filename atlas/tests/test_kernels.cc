// Every AscendC kernel variant, run through the emulator, against the double
// reference and the spec's accuracy rule; then the same inputs under many
// tilings (sizes with tails, big/small cores, 1..48 cores, two SoCs, tiles,
// threads) must give bit-identical results: every element written exactly
// once, by the same instruction sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <random>

#include "atlas_runner.h"
#include "atlas_test_util.h"
#include "atlas_variants.h"
#include "host_tiling.h"
#include "reference/accuracy_rule.h"
#include "reference/reference.h"

using namespace actgrad;
using namespace actgrad::atlas;
using namespace atlas_test;

namespace {

constexpr float kFltMax = std::numeric_limits<float>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

struct InputSet {
  std::string label;
  OpParams params;
  std::vector<double> g, x;  // values before storage rounding (16-bit sets use raw bits below)
  std::vector<uint16_t> gbits, xbits;  // 16-bit sets: exact bit patterns
};

void AddSpecials(Op op, const OpParams& p, std::vector<double>* g, std::vector<double>* x) {
  std::vector<double> xs = {kNaN, kInf, -kInf, 0.0, -0.0, 1e-40, -1e-40, 1.4e-45, kFltMax, -kFltMax,
                            1.0, -1.0, 0.5, -0.5, 3.0, -3.0, 2.0, -2.0, 1e-3, 0.999};
  if (op == Op::kSoftshrinkBwd) xs.insert(xs.end(), {double(p.lambd), -double(p.lambd)});
  if (op == Op::kLogitGrad && std::isfinite(p.eps))
    xs.insert(xs.end(), {double(p.eps), double(1.0f - p.eps), 1.0, 0.0});
  const std::vector<double> gs = {1.0, -2.5, 0.0, -0.0, 1e30, -1e-30, 1e-40, 7.0};
  for (double gv : gs)
    for (double xv : xs) {
      g->push_back(gv);
      x->push_back(xv);
    }
  // infinite and NaN gradients with inputs away from underflowing tails
  const std::vector<double> xs_mild = {kNaN, kInf, -kInf, 0.0, 1.0, -1.0, 0.5, 0.25, 2.0, -2.0, 4.0, -4.0};
  for (double gv : {kNaN, kInf, -kInf})
    for (double xv : xs_mild) {
      g->push_back(gv);
      x->push_back(xv);
    }
}

std::vector<InputSet> MakeInputs(const AtlasVariant& v) {
  std::vector<InputSet> sets;
  std::mt19937_64 rng(0xA71A5ull + uint64_t(v.op) * 7 + uint64_t(v.dtype));
  std::uniform_real_distribution<double> uni(-1, 1);
  std::normal_distribution<double> normal(0, 1);
  std::vector<OpParams> params(1);
  params[0].gelu_approx = v.approx;
  if (v.op == Op::kSoftshrinkBwd) {
    params[0].lambd = 0.5f;
    params.push_back(params[0]);
    params[1].lambd = 0.3f;  // not an fp16 value: exercises the native threshold
  }
  if (v.op == Op::kLogitGrad) {
    params.clear();
    for (float eps : {-1.0f, 0.0f, 1e-6f, 0.25f}) {
      OpParams p;
      p.eps = eps;
      params.push_back(p);
    }
  }

  for (const OpParams& p : params) {
    InputSet s;
    s.params = p;
    char lab[64];
    std::snprintf(lab, sizeof lab, "lambd=%g eps=%g", double(p.lambd), double(p.eps));
    s.label = lab;
    if (v.dtype == DType::kF16 || v.dtype == DType::kBF16) {
      // every bit pattern of x, with g = 1 and with random finite g
      for (int pass = 0; pass < 2; ++pass)
        for (uint32_t b = 0; b < 65536; ++b) {
          s.xbits.push_back(uint16_t(b));
          double gv = 1.0;
          if (pass == 1) gv = uni(rng) * std::exp2(std::floor(uni(rng) * 6));
          s.gbits.push_back(v.dtype == DType::kF16 ? FloatToHalf(float(gv)) : FloatToBF16(float(gv)));
        }
    } else if (v.dtype == DType::kI8) {
      for (int gi = -128; gi < 128; ++gi)
        for (int yi = -128; yi < 128; ++yi) {
          s.g.push_back(gi);
          s.x.push_back(yi);
        }
    } else if (v.dtype == DType::kI32) {
      std::uniform_int_distribution<int64_t> any(INT32_MIN, INT32_MAX);
      std::uniform_int_distribution<int64_t> small(-3000, 3000);
      const std::vector<double> edges = {double(INT32_MIN), double(INT32_MAX), 0, 1, -1, 2, -2, 1000, -1000};
      for (double a : edges)
        for (double b : edges) {
          s.g.push_back(a);
          s.x.push_back(b);
        }
      for (int i = 0; i < 100000; ++i) {
        s.g.push_back(double(i % 2 ? any(rng) : small(rng)));
        s.x.push_back(double(i % 3 ? small(rng) : any(rng)));
      }
    } else {  // fp32
      const size_t n = 1u << 20;
      for (size_t i = 0; i < n; ++i) {
        const double gv = (i % 4 == 0) ? 1.0 : uni(rng) * 4.0;
        double xv = 0;
        switch (v.op) {
          case Op::kGeluBwd: xv = (i % 2) ? uni(rng) * 10.0 : normal(rng); break;
          case Op::kSeluBwd: {
            const double xx = -30.0 + (uni(rng) + 1) * 17.5;  // [-30, 5]
            xv = xx > 0 ? ref::kSeluScale * xx : ref::kSeluScale * ref::kSeluAlpha * std::expm1(xx);
            break;
          }
          case Op::kHardswishBwd: xv = (i % 97 == 0) ? (i % 2 ? 3.0 : -3.0) : uni(rng) * 5.0; break;
          case Op::kSoftshrinkBwd: xv = (i % 97 == 0) ? (i % 2 ? p.lambd : -p.lambd) : uni(rng) * 2.0; break;
          case Op::kLogitGrad: {
            const int k = int(i % 101);
            xv = k == 0 ? 0.0 : k == 1 ? 1.0 : k == 2 ? double(p.eps) : k == 3 ? double(1.0f - p.eps)
                                                                          : (uni(rng) + 1) / 2;
            if (k == 4) xv = uni(rng) * 3;  // outside [0, 1] too
            break;
          }
        }
        s.g.push_back(gv);
        s.x.push_back(xv);
      }
      AddSpecials(v.op, p, &s.g, &s.x);
    }
    if (v.dtype == DType::kF16 || v.dtype == DType::kBF16) {
      std::vector<double> sg, sx;
      AddSpecials(v.op, p, &sg, &sx);
      for (size_t i = 0; i < sg.size(); ++i) {
        const bool h = v.dtype == DType::kF16;
        s.gbits.push_back(h ? FloatToHalf(float(sg[i])) : FloatToBF16(float(sg[i])));
        s.xbits.push_back(h ? FloatToHalf(float(sx[i])) : FloatToBF16(float(sx[i])));
      }
    }
    sets.push_back(std::move(s));
  }
  // LogitGrad: the special eps values on a smaller set
  if (v.op == Op::kLogitGrad) {
    for (double eps : {kNaN, kInf, -kInf, 1.0, 2.0, 0.5, 0.75}) {
      InputSet s;
      s.params.eps = float(eps);
      s.label = "special eps=" + std::to_string(eps);
      std::vector<double> g, x;
      AddSpecials(v.op, s.params, &g, &x);
      for (int i = 0; i < 3000; ++i) {
        g.push_back(uni(rng) * 3);
        x.push_back(uni(rng) * 1.5);
      }
      if (v.dtype == DType::kF32) {
        s.g = g;
        s.x = x;
      } else {
        for (size_t i = 0; i < g.size(); ++i) {
          const bool h = v.dtype == DType::kF16;
          s.gbits.push_back(h ? FloatToHalf(float(g[i])) : FloatToBF16(float(g[i])));
          s.xbits.push_back(h ? FloatToHalf(float(x[i])) : FloatToBF16(float(x[i])));
        }
      }
      sets.push_back(std::move(s));
    }
  }
  return sets;
}

struct Buffers {
  size_t n = 0;
  std::vector<uint8_t> g, x, out;
};

Buffers Encode(const AtlasVariant& v, const InputSet& s) {
  Buffers b;
  const size_t sz = DTypeSize(v.dtype);
  b.n = s.gbits.empty() ? s.g.size() : s.gbits.size();
  b.g.assign(b.n * sz, 0);
  b.x.assign(b.n * sz, 0);
  b.out.assign(b.n * sz, 0xA5);
  for (size_t i = 0; i < b.n; ++i) {
    if (s.gbits.empty()) {
      Store(v.dtype, b.g, i, s.g[i]);
      Store(v.dtype, b.x, i, s.x[i]);
    } else {
      StoreBits16(b.g, i, s.gbits[i]);
      StoreBits16(b.x, i, s.xbits[i]);
    }
  }
  return b;
}

void RunKernel(const AtlasVariant& v, const SocInfo& soc, const OpParams& p, Buffers* b, TilingOptions o = {},
         int threads = 2, bool nan_prop = true) {
  AtlasTilingData t;
  std::string err;
  ASSERT_TRUE(MakeTiling(v, b->n, p, soc, o, &t, &err)) << err;
  EmuOptions eo;
  eo.threads = threads;
  eo.ub_capacity = soc.UbBudget();
  eo.nan_propagating_minmax = nan_prop;
  RunOnEmulator(v, t, b->g.data(), b->x.data(), b->out.data(), eo);
}

class AtlasKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(AtlasKernel, AccuracyAndTilings) {
  const AtlasVariant& v = *FindAtlasVariant(GetParam());
  const SocInfo soc = Soc("ascend910b");
  const SocInfo soc40 = Soc("ascend910b4");
  const SocInfo tiny = TinySoc();
  const auto sets = MakeInputs(v);
  bool first = true;
  for (const InputSet& s : sets) {
    Buffers b = Encode(v, s);
    RunKernel(v, soc, s.params, &b);
    if (HasFatalFailure()) return;
    // accuracy against the double reference
    if (IsFloat(v.dtype)) {
      AccuracyChecker chk(v.dtype);
      for (size_t i = 0; i < b.n; ++i) {
        const double g = Load(v.dtype, b.g, i), x = Load(v.dtype, b.x, i);
        chk.Add(Load(v.dtype, b.out, i), ref::Reference(v.op, g, x, s.params), g, x);
      }
      const AccuracyReport r = chk.Report();
      EXPECT_TRUE(r.pass) << v.name << " [" << s.label << "]: " << r.first_failure << " (share " << r.Share()
                          << ", max err " << r.max_err << ", " << r.special_mismatch << " special mismatches)";
      std::printf("%-48s %-28s n=%-8zu share %.6f  max_err %.3g  max_ulp %.3g\n", v.name.c_str(), s.label.c_str(),
                  b.n, r.Share(), r.max_err, r.max_ulp);
    } else {
      size_t bad = 0;
      for (size_t i = 0; i < b.n; ++i) {
        const double g = Load(v.dtype, b.g, i), y = Load(v.dtype, b.x, i);
        const double want = v.dtype == DType::kI32 ? double(ref::SeluBwdInt<int32_t>(int32_t(g), int32_t(y)))
                                                   : double(ref::SeluBwdInt<int8_t>(int8_t(g), int8_t(y)));
        if (Load(v.dtype, b.out, i) != want && bad++ < 5)
          ADD_FAILURE() << v.name << ": g=" << g << " y=" << y << " got " << Load(v.dtype, b.out, i) << " want " << want;
      }
      EXPECT_EQ(bad, 0u);
    }
    if (!first) continue;
    first = false;

    // Same inputs under other tilings: prefixes of the set, bit-identical.
    struct Cfg {
      const SocInfo* soc;
      size_t n;
      int64_t tile;
      int dim;
      int threads;
    };
    const size_t N = b.n;
    const std::vector<Cfg> cfgs = {
        {&soc, 1, 0, 0, 1},       {&soc, 7, 0, 0, 1},        {&soc, 33, 256, 3, 1},
        {&soc, 257, 256, 0, 1},   {&soc, 1000, 0, 0, 1},     {&soc, 4099, 256, 5, 1},
        {&soc, 12289, 512, 48, 2}, {&soc40, 20000 + 13, 0, 0, 2}, {&soc40, 65537, 1024, 7, 2},
        {&tiny, 9001, 0, 0, 1},   {&tiny, 70001, 0, 0, 2},    {&soc, std::min<size_t>(N, 200003), 0, 1, 1},
        {&soc, N, 0, 13, 2}};
    for (const Cfg& c : cfgs) {
      if (c.n > N) continue;
      Buffers p;
      p.n = c.n;
      const size_t sz = DTypeSize(v.dtype);
      p.g.assign(b.g.begin(), b.g.begin() + c.n * sz);
      p.x.assign(b.x.begin(), b.x.begin() + c.n * sz);
      p.out.assign(c.n * sz, 0x5A);
      TilingOptions o;
      o.stage_tile = c.tile;
      o.block_dim = c.dim;
      RunKernel(v, *c.soc, s.params, &p, o, c.threads);
      if (HasFatalFailure()) return;
      const bool same = std::equal(p.out.begin(), p.out.end(), b.out.begin());
      EXPECT_TRUE(same) << v.name << ": n=" << c.n << " on " << c.soc->name << " tile " << c.tile << " dim " << c.dim
                        << " differs from the reference run";
    }
    // Min/Max NaN behaviour of the device is not documented: the kernels
    // must not depend on it.
    Buffers q = b;
    std::fill(q.out.begin(), q.out.end(), 0x3C);
    RunKernel(v, soc, s.params, &q, {}, 2, /*nan_prop=*/false);
    EXPECT_TRUE(q.out == b.out) << v.name << ": result depends on the NaN behaviour of Max/Min";
  }
}

std::vector<std::string> AllVariantNames() {
  std::vector<std::string> n;
  for (const auto& v : AtlasVariants()) n.push_back(v.name);
  return n;
}

std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Variant, AtlasKernel, ::testing::ValuesIn(AllVariantNames()), TestName);

TEST(AtlasVariants, ListIsConsistent) {
  EXPECT_EQ(AtlasVariants().size(), 42u);
  for (const auto& v : AtlasVariants()) {
    EXPECT_EQ(FindAtlasVariant(v.name), &v);
    EXPECT_EQ(FindAtlasVariant(v.op, v.dtype, v.compute, v.approx, v.buffers), &v);
    EXPECT_TRUE(v.buffers == 1 || v.buffers == 2);
  }
  EXPECT_NE(FindAtlasVariant("gelu_bwd.f16.atlas.upcast_f32.erf.db2"), nullptr);
}

TEST(AtlasKernels, EmptyInputLaunchesNothing) {
  const SocInfo soc = Soc("ascend910b");
  const AtlasVariant& v = *FindAtlasVariant("gelu_bwd.f32.atlas.none.erf.db2");
  AtlasTilingData t;
  std::string err;
  ASSERT_TRUE(MakeTiling(v, 0, OpParams{}, soc, {}, &t, &err)) << err;
  EXPECT_EQ(t.blockDim, 0u);
  EmuOptions o;
  const auto r = RunOnEmulator(v, t, nullptr, nullptr, nullptr, o);
  EXPECT_TRUE(r.cores.empty());
}

// Tiling data a kernel was not built for stops it loudly: ATLAS_TRAP is
// AscendC::Trap() on the device and a Breach with the reason here; the
// output stays unwritten (no core gets past its checks).
TEST(AtlasKernels, TilingItCannotRunTrapsAndWritesNothing) {
  const SocInfo soc = Soc("ascend910b");
  struct Case {
    const char* variant;
    std::function<void(AtlasTilingData&)> edit;
    const char* why;
  };
  const std::vector<Case> cases = {
      {"gelu_bwd.f32.atlas.none.erf.db2", [](AtlasTilingData& t) { t.magic = 0; },
       "tiling data without the ATLS magic"},
      {"selu_bwd.f32.atlas.none.exact.db1", [](AtlasTilingData& t) { t.magic ^= 1; }, "tiling data without the ATLS magic"},
      {"gelu_bwd.f32.atlas.none.erf.db2", [](AtlasTilingData& t) { t.bufferNum = 3; }, "bufferNum must be 1 or 2"},
      {"gelu_bwd.f32.atlas.none.erf.db2", [](AtlasTilingData& t) { t.compute = kComputeUpcastF32; },
       "fp32 storage computes without Cast"},
      {"gelu_bwd.f16.atlas.upcast_f32.erf.db2", [](AtlasTilingData& t) { t.compute = kComputeF16Native; },
       "fp16 compute mode not built for this op"},
      {"gelu_bwd.bf16.atlas.upcast_f32.erf.db2", [](AtlasTilingData& t) { t.compute = kComputeNone; },
       "bf16 is computed in fp32"},
      {"hardswish_bwd.f32.atlas.none.exact.db2", [](AtlasTilingData& t) { t.dtype = kDtI32; },
       "integer dtype not built for this op"},
      {"logit_grad.f32.atlas.none.exact.db2", [](AtlasTilingData& t) { t.dtype = 7; }, "unknown dtype in tiling data"},
  };
  for (const Case& c : cases) {
    const AtlasVariant* v = FindAtlasVariant(c.variant);
    ASSERT_NE(v, nullptr) << c.variant;
    const size_t n = 5000;
    AtlasTilingData t;
    std::string err;
    ASSERT_TRUE(MakeTiling(*v, n, OpParams{}, soc, {}, &t, &err)) << err;
    c.edit(t);
    const size_t bytes = n * DTypeSize(v->dtype);
    std::vector<uint8_t> g(bytes, 0), x(bytes, 0), out(bytes, 0x5A);
    std::string msg;
    try {
      RunOnEmulator(*v, t, g.data(), x.data(), out.data(), EmuOptions{});
    } catch (const AscendEmu::Breach& b) {
      msg = b.what();
    }
    EXPECT_NE(msg.find(std::string("kernel '") + v->kernel + "', core 0 of "), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("Trap: AscendC::Trap(): ") + c.why), std::string::npos) << c.variant << ": " << msg;
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint8_t b) { return b == 0x5A; }))
        << c.variant << ": output written by a trapped kernel";
  }
}

}  // namespace
