// Host tiling properties on many shapes, dtypes, variants and SoCs: every
// element covered exactly once, UB never exceeded, every core's GM range
// 32-byte aligned, no idle core when work allows; the emulator dry run then
// confirms that the kernel's copies under that tiling are aligned or padded
// and move exactly the tensor bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>

#include "atlas_runner.h"
#include "atlas_test_util.h"
#include "host_tiling.h"
#include "tiling_table.h"

using namespace actgrad;
using namespace actgrad::atlas;
using namespace atlas_test;

namespace {

const uint64_t kSizes[] = {0, 1, 2, 7, 8, 15, 16, 17, 31, 32, 33, 255, 256, 257, 1000, 4095, 4096, 4097,
                           12288, 12289, 65541, 48 * 256 - 1, 40 * 256 * 7 + 13, 1000003, 16777216 + 5,
                           100000007};

void CheckTiling(const AtlasVariant& v, const SocInfo& soc, uint64_t n, const AtlasTilingData& t,
                 bool default_dim) {
  const uint32_t epb = ElemsPerBlock(v.dtype);
  const uint64_t blocks = (n + epb - 1) / epb;
  SCOPED_TRACE(v.name + " n=" + std::to_string(n) + " soc=" + soc.name + " tile=" + std::to_string(t.tileLength) +
               " dim=" + std::to_string(t.blockDim));
  ASSERT_LE(t.blockDim, soc.vector_cores);
  if (n == 0) {
    EXPECT_EQ(t.blockDim, 0u);
    return;
  }
  ASSERT_GE(t.blockDim, 1u);
  if (default_dim) {
    const uint64_t want = std::min<uint64_t>({soc.vector_cores, blocks, (n + kMinElemsPerCore - 1) / kMinElemsPerCore});
    EXPECT_EQ(t.blockDim, want) << "idle cores although work allows";
  }
  // coverage: contiguous, in order, exactly [0, n)
  uint64_t next = 0;
  for (uint32_t c = 0; c < t.blockDim; ++c) {
    uint64_t s, l;
    CoreRange(t, c, &s, &l);
    ASSERT_EQ(s, next) << "core " << c;
    ASSERT_GE(l, 1u) << "core " << c << " idle";
    EXPECT_EQ((s * DTypeSize(v.dtype)) % 32, 0u) << "core " << c << " GM start not 32-byte aligned";
    if (c + 1 < t.blockDim) EXPECT_EQ(l % epb, 0u) << "core " << c << " not whole 32-byte blocks";
    if (c < t.bigCoreNum) EXPECT_EQ(l, t.bigCoreLength);
    next = s + l;
  }
  EXPECT_EQ(next, n);
  EXPECT_LE(t.bigCoreLength - t.smallCoreLength, epb) << "big/small split unbalanced";
  // UB and tile shape
  EXPECT_EQ(t.tileLength % kTileAlign, 0u);
  EXPECT_LE(UbBytesFor(v, t.tileLength), soc.UbBudget());
  EXPECT_EQ(t.tilingKey, MakeTilingKey(t.op, t.dtype, t.compute, t.approx, t.bufferNum));
}

TEST(Tiling, PropertiesOverShapesDtypesVariantsSocs) {
  const SocInfo socs[] = {Soc("ascend910b"), Soc("ascend910b4"), TinySoc()};
  size_t checked = 0;
  for (const SocInfo& soc : socs)
    for (const auto& v : AtlasVariants())
      for (uint64_t n : kSizes)
        for (int dim : {0, 1, 5, int(soc.vector_cores), 1000})
          for (int64_t tile : {int64_t(0), int64_t(256), int64_t(1000), int64_t(MaxTileLength(v, soc))}) {
            AtlasTilingData t;
            std::string err;
            TilingOptions o;
            o.stage_tile = tile;
            o.block_dim = dim;
            if (uint64_t(RoundUpU64(uint64_t(tile), kTileAlign)) > MaxTileLength(v, soc)) {
              EXPECT_FALSE(MakeTiling(v, n, OpParams{}, soc, o, &t, &err));
              continue;
            }
            ASSERT_TRUE(MakeTiling(v, n, OpParams{}, soc, o, &t, &err)) << err;
            CheckTiling(v, soc, n, t, dim == 0);
            ++checked;
          }
  EXPECT_GT(checked, 10000u);
}

TEST(Tiling, TooLargeTileIsRefused) {
  const SocInfo soc = Soc("ascend910b");
  const auto& v = *FindAtlasVariant("gelu_bwd.f32.atlas.none.erf.db2");
  AtlasTilingData t;
  std::string err;
  TilingOptions o;
  o.stage_tile = MaxTileLength(v, soc) + 256;
  EXPECT_FALSE(MakeTiling(v, 1 << 20, OpParams{}, soc, o, &t, &err));
  EXPECT_NE(err.find("exceeds"), std::string::npos);
  OpParams bad;
  bad.lambd = -1;
  EXPECT_FALSE(MakeTiling(*FindAtlasVariant("softshrink_bwd.f32.atlas.none.exact.db1"), 10, bad, soc, {}, &t, &err));
}

// The kernel under the tiling, dry-run on the emulator (all cores for small
// sizes, the distinct ones for large): no breach (alignment, padding, UB,
// queues, GM bounds) and exactly the tensor's bytes in and out.
TEST(Tiling, DryRunMovesExactlyTheTensor) {
  const SocInfo socs[] = {Soc("ascend910b"), TinySoc()};
  for (const SocInfo& soc : socs)
    for (const auto& v : AtlasVariants())
      for (uint64_t n : {uint64_t(1), uint64_t(17), uint64_t(257), uint64_t(4097), uint64_t(65541), uint64_t(1000003)})
        for (int64_t tile : {int64_t(0), int64_t(256)}) {
          if (tile == 256 && n > 70000) continue;
          AtlasTilingData t;
          std::string err;
          TilingOptions o;
          o.stage_tile = tile;
          ASSERT_TRUE(MakeTiling(v, n, OpParams{}, soc, o, &t, &err)) << err;
          EmuOptions eo;
          eo.dry_run = true;
          eo.ub_capacity = soc.UbBudget();
          AscendEmu::LaunchResult r;
          ASSERT_NO_THROW(r = RunOnEmulator(v, t, nullptr, nullptr, nullptr, eo)) << v.name << " n=" << n;
          uint64_t in = 0, out = 0, peak = 0;
          for (const auto& s : r.stats) {
            in += s.gm_to_ub_bytes;
            out += s.ub_to_gm_bytes;
            peak = std::max(peak, s.ub_peak_bytes);
          }
          EXPECT_EQ(in, 2 * n * DTypeSize(v.dtype)) << v.name << " n=" << n;
          EXPECT_EQ(out, n * DTypeSize(v.dtype)) << v.name << " n=" << n;
          EXPECT_LE(peak, soc.UbBudget());
          EXPECT_EQ(peak, UbBytesFor(v, t.tileLength)) << "kernel and host disagree on the UB layout";
        }
}

TEST(Tiling, FindEntryTakesTheOctaveElseTheNearestTuned) {
  const AtlasTableEntry t[] = {
      {Op::kGeluBwd, DType::kF16, GeluApprox::kNone, 12, "a", 256, 8, 1},
      {Op::kGeluBwd, DType::kF16, GeluApprox::kNone, 16, "b", 512, 48, 1},
      {Op::kGeluBwd, DType::kF16, GeluApprox::kNone, 20, "c", 1024, 48, 1},
      {Op::kGeluBwd, DType::kF16, GeluApprox::kTanh, 14, "t", 1024, 48, 1},
      {Op::kGeluBwd, DType::kF32, GeluApprox::kNone, 30, "f32", 1024, 48, 1}};
  auto at = [&](int octave, GeluApprox m = GeluApprox::kNone) -> std::string {
    const AtlasTableEntry* e = FindEntry(t, std::size(t), Op::kGeluBwd, DType::kF16, m, octave);
    return e ? e->variant : "-";
  };
  EXPECT_EQ(at(16), "b");
  EXPECT_EQ(at(0), "a");   // below the tuned range: the first tuned octave
  EXPECT_EQ(at(47), "c");  // above: the last
  EXPECT_EQ(at(13), "a");
  EXPECT_EQ(at(14), "a");  // a tie between 12 and 16 goes to the lower octave
  EXPECT_EQ(at(15), "b");
  EXPECT_EQ(at(18), "b");
  EXPECT_EQ(at(19), "c");
  EXPECT_EQ(at(3, GeluApprox::kTanh), "t");  // entries of the form asked for only
  EXPECT_EQ(FindEntry(t, std::size(t), Op::kGeluBwd, DType::kBF16, GeluApprox::kNone, 16), nullptr);
  EXPECT_EQ(FindEntry(t, 0, Op::kGeluBwd, DType::kF16, GeluApprox::kNone, 16), nullptr);
}

TEST(Tiling, ComputeTilingUsesTheCompiledTable) {
  const SocInfo soc = Soc("ascend910b");
  for (size_t i = 0; i < kAtlasTilingTableSize; ++i) {
    const AtlasTableEntry& e = kAtlasTilingTable[i];
    const AtlasVariant* v = FindAtlasVariant(e.variant);
    ASSERT_NE(v, nullptr) << e.variant;
    // the first, a middle and the last size of the entry's octave
    for (const uint64_t n : {uint64_t(1) << e.octave, (uint64_t(3) << e.octave) / 2, (uint64_t(2) << e.octave) - 1}) {
      SCOPED_TRACE(e.variant + std::string(" n=") + std::to_string(n));
      OpParams p;
      p.gelu_approx = e.mode;
      TilingDecision d;
      std::string err;
      ASSERT_TRUE(ComputeTiling(e.op, e.dtype, n, soc, p, &d, &err)) << err;
      EXPECT_EQ(d.source, "table");
      EXPECT_EQ(d.octave, e.octave);
      EXPECT_EQ(d.variant->name, e.variant);
      EXPECT_EQ(d.data.tileLength, e.stage_tile);
      const uint64_t blocks = (n + ElemsPerBlock(e.dtype) - 1) / ElemsPerBlock(e.dtype);
      EXPECT_EQ(d.data.blockDim, std::min<uint64_t>({e.block_dim, soc.vector_cores, blocks}));
      EXPECT_EQ(d.data.bufferNum, uint32_t(v->buffers));
      // GELU's tanh form takes the erf entry's tiling when the table has no tanh entries
      if (e.op == Op::kGeluBwd && e.mode == GeluApprox::kNone) {
        p.gelu_approx = GeluApprox::kTanh;
        ASSERT_TRUE(ComputeTiling(e.op, e.dtype, n, soc, p, &d, &err)) << err;
        EXPECT_EQ(d.variant->approx, GeluApprox::kTanh);
        EXPECT_EQ(d.data.bufferNum, uint32_t(v->buffers));
        EXPECT_EQ(d.data.tileLength, e.stage_tile);
      }
    }
  }
  // every op and dtype gets a tiling, from the table or the default rule
  for (Op op : {Op::kSeluBwd, Op::kHardswishBwd, Op::kGeluBwd, Op::kSoftshrinkBwd, Op::kLogitGrad})
    for (DType dt : AtlasDTypes(op)) {
      TilingDecision d;
      std::string err;
      ASSERT_TRUE(ComputeTiling(op, dt, 123457, soc, OpParams{}, &d, &err)) << err;
      EXPECT_TRUE(d.source == "table" || d.source == "default");
      CheckTiling(*d.variant, soc, 123457, d.data, d.source == "default");
    }
  // a smaller SoC than the table was tuned for: block dims are clamped
  const SocInfo tiny = TinySoc();
  TilingDecision d;
  std::string err;
  ASSERT_TRUE(ComputeTiling(Op::kGeluBwd, DType::kF16, 1 << 22, tiny, OpParams{}, &d, &err)) << err;
  EXPECT_LE(d.data.blockDim, tiny.vector_cores);
  EXPECT_LE(UbBytesFor(*d.variant, d.data.tileLength), tiny.UbBudget());
}

TEST(Tiling, PlatformReadsTheSocFile) {
  const SocInfo soc = Soc("ascend910b");
  PlatformAscendC p(soc);
  uint64_t ub = 0;
  p.GetCoreMemSize(CoreMemType::UB, ub);
  EXPECT_EQ(p.GetCoreNumAiv(), 48u);
  EXPECT_EQ(ub, 196608u - 8192u);
  EXPECT_EQ(Soc("ascend910b4").vector_cores, 40u);
}

}  // namespace
