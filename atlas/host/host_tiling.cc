#include "host_tiling.h"

#include <algorithm>
#include <cmath>

#include "actgrad/half.h"
#include "tiling/size_cells.h"
#include "tiling_table.h"

namespace actgrad::atlas {

uint32_t ElemsPerBlock(DType t) { return uint32_t(32 / DTypeSize(t)); }

uint32_t UbBytesFor(const AtlasVariant& v, uint32_t tile) {
  const uint32_t approx = v.approx == GeluApprox::kTanh ? kApproxTanh : kApproxErf;
  return MakeUbLayout(AtlasOpOf(v.op), AtlasDTypeOf(v.dtype), v.compute, approx, uint32_t(v.buffers), tile)
      .total;
}

uint32_t MaxTileLength(const AtlasVariant& v, const SocInfo& soc) {
  PlatformAscendC platform(soc);
  uint64_t ub = 0;
  platform.GetCoreMemSize(CoreMemType::UB, ub);
  // UB use is linear in the tile: find the largest multiple of kTileAlign.
  const uint32_t per_align = UbBytesFor(v, kTileAlign);
  uint32_t tile = uint32_t(ub / per_align) * kTileAlign;
  while (tile > 0 && UbBytesFor(v, tile) > ub) tile -= kTileAlign;
  // DataCopyPad blockLen has 21 bits
  const uint32_t dma_cap = (2097151u / uint32_t(DTypeSize(v.dtype))) / kTileAlign * kTileAlign;
  return std::min(tile, dma_cap);
}

uint32_t DefaultBlockDim(uint64_t n, DType t, const SocInfo& soc) {
  PlatformAscendC platform(soc);
  const uint64_t cores = platform.GetCoreNumAiv();
  const uint64_t blocks = (n + ElemsPerBlock(t) - 1) / ElemsPerBlock(t);
  const uint64_t by_work = (n + kMinElemsPerCore - 1) / kMinElemsPerCore;
  return uint32_t(std::min({cores, blocks, by_work}));
}

// Largest fp16 value <= v (v >= 0), as a float: the fp16 compare threshold
// that selects exactly the fp16 inputs x with x <= v.
static float HalfFloorOf(float v) {
  if (std::isnan(v)) return v;
  uint16_t h = FloatToHalf(v);
  if (HalfToFloat(h) > v) {
    if ((h & 0x7FFF) == 0) return 0.0f;
    h = uint16_t(h - 1);  // v >= 0: one step toward zero
  }
  return HalfToFloat(h);
}

bool MakeTiling(const AtlasVariant& v, uint64_t n, const OpParams& params, const SocInfo& soc,
                const TilingOptions& o, AtlasTilingData* out, std::string* err) {
  if (v.op == Op::kSoftshrinkBwd && !(params.lambd >= 0.0f)) {
    *err = "softshrink lambd must be >= 0";
    return false;
  }
  PlatformAscendC platform(soc);
  const uint32_t cores = platform.GetCoreNumAiv();
  const uint32_t epb = ElemsPerBlock(v.dtype);
  const uint64_t blocks = (n + epb - 1) / epb;

  AtlasTilingData t{};
  t.magic = kTilingMagic;
  t.op = AtlasOpOf(v.op);
  t.dtype = AtlasDTypeOf(v.dtype);
  t.compute = v.compute;
  t.approx = v.approx == GeluApprox::kTanh ? kApproxTanh : kApproxErf;
  t.bufferNum = uint32_t(v.buffers);
  t.totalLength = n;

  uint32_t dim = o.block_dim > 0 ? std::min<uint32_t>(uint32_t(o.block_dim), cores) : DefaultBlockDim(n, v.dtype, soc);
  dim = uint32_t(std::min<uint64_t>(dim, blocks));
  t.blockDim = dim;
  if (dim > 0) {
    const uint64_t per = blocks / dim;
    t.bigCoreNum = uint32_t(blocks % dim);
    t.smallCoreLength = per * epb;
    t.bigCoreLength = (per + (t.bigCoreNum ? 1 : 0)) * epb;
  }

  const uint32_t max_tile = MaxTileLength(v, soc);
  if (max_tile == 0) {
    *err = "no tile fits the UB of " + soc.name;
    return false;
  }
  uint64_t tile;
  if (o.stage_tile > 0) {
    tile = RoundUpU64(uint64_t(o.stage_tile), kTileAlign);
    if (tile > max_tile) {
      *err = "tile " + std::to_string(o.stage_tile) + " exceeds the largest tile " + std::to_string(max_tile) +
             " that fits UB for " + v.name;
      return false;
    }
  } else {
    tile = std::min<uint64_t>({max_tile, kDefaultTileCap,
                               std::max<uint64_t>(kTileAlign, RoundUpU64(t.bigCoreLength, kTileAlign))});
  }
  t.tileLength = uint32_t(tile);
  t.tilingKey = MakeTilingKey(t.op, t.dtype, t.compute, t.approx, t.bufferNum);
  t.scalar0 = v.op == Op::kSoftshrinkBwd ? params.lambd : v.op == Op::kLogitGrad ? params.eps : 0.0f;
  t.scalar1 = v.op == Op::kLogitGrad ? 1.0f - params.eps : 0.0f;
  t.scalarHalf = v.op == Op::kSoftshrinkBwd ? HalfFloorOf(params.lambd) : 0.0f;
  *out = t;
  return true;
}

const AtlasTableEntry* FindEntry(const AtlasTableEntry* table, size_t size, Op op, DType dtype, GeluApprox mode,
                                 int octave) {
  const AtlasTableEntry* best = nullptr;
  for (size_t i = 0; i < size; ++i) {
    const AtlasTableEntry& e = table[i];
    if (e.op != op || e.dtype != dtype || e.mode != mode) continue;
    const int d = std::abs(e.octave - octave), best_d = best ? std::abs(best->octave - octave) : 0;
    if (!best || d < best_d || (d == best_d && e.octave < best->octave)) best = &e;
  }
  return best;
}

bool ComputeTiling(Op op, DType dtype, uint64_t n, const SocInfo& soc, const OpParams& params,
                   TilingDecision* out, std::string* err) {
  const GeluApprox approx = op == Op::kGeluBwd ? params.gelu_approx : GeluApprox::kNone;
  TilingDecision d;
  TilingOptions o;
  const int octave = SizeOctave(n);
  const AtlasTableEntry* e = FindEntry(kAtlasTilingTable, kAtlasTilingTableSize, op, dtype, approx, octave);
  if (!e && approx != GeluApprox::kNone)
    e = FindEntry(kAtlasTilingTable, kAtlasTilingTableSize, op, dtype, GeluApprox::kNone, octave);
  if (e) {
    // An erf entry serves the tanh form with the same compute mode, buffers,
    // tile and block dim.
    const AtlasVariant* tv = FindAtlasVariant(e->variant);
    if (tv) d.variant = FindAtlasVariant(op, dtype, tv->compute, approx, tv->buffers);
    if (d.variant) {
      o.stage_tile = std::min<int64_t>(e->stage_tile, MaxTileLength(*d.variant, soc));
      o.block_dim = int(e->block_dim);
      d.source = "table";
      d.octave = e->octave;
    }
  }
  if (!d.variant) {
    const uint32_t compute = dtype == DType::kF32 ? kComputeNone : kComputeUpcastF32;
    d.variant = FindAtlasVariant(op, dtype, compute, approx, 2);
    d.source = "default";
  }
  if (!d.variant) {
    *err = std::string("no Atlas kernel for ") + std::string(OpName(op)) + " " + std::string(DTypeName(dtype));
    return false;
  }
  if (!MakeTiling(*d.variant, n, params, soc, o, &d.data, err)) return false;
  *out = d;
  return true;
}

}  // namespace actgrad::atlas
