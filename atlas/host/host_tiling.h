// Host tiling of the Atlas kernels, written the way CANN host tiling code is:
// read the platform (GetCoreNumAiv, GetCoreMemSize(UB)), split the elements
// over the vector cores in whole 32-byte blocks (big cores first, then small
// cores), and pick the largest tile that the UB layout of the kernel allows.
#pragma once
#include <cstdint>
#include <string>

#include "actgrad/types.h"
#include "atlas_variants.h"
#include "atlas_tiling_data.h"
#include "soc.h"

namespace actgrad::atlas {

// Fewer elements than this per core are not worth another core.
inline constexpr uint64_t kMinElemsPerCore = 256;
// Upper bound of the default tile (elements).
inline constexpr uint32_t kDefaultTileCap = 8192;

struct TilingOptions {
  int64_t stage_tile = 0;  // UB tile length (elements); 0: default rule
  int block_dim = 0;       // 0: default rule
};

// Elements per 32-byte block of a dtype.
uint32_t ElemsPerBlock(DType t);
// Largest tile (multiple of kTileAlign) whose UB layout fits the SoC.
uint32_t MaxTileLength(const AtlasVariant& v, const SocInfo& soc);
// UB bytes the kernel allocates per core for a tile.
uint32_t UbBytesFor(const AtlasVariant& v, uint32_t tile);
// The default block dim: every core while each gets kMinElemsPerCore.
uint32_t DefaultBlockDim(uint64_t n, DType t, const SocInfo& soc);

// Tiling for an explicit variant (tile length / block dim from `o` or the defaults).
bool MakeTiling(const AtlasVariant& v, uint64_t n, const OpParams& params, const SocInfo& soc,
                const TilingOptions& o, AtlasTilingData* out, std::string* err);

struct AtlasTableEntry;
// The entry of (op, dtype, GELU form) at `octave` in table[0, size), else
// the nearest octave that has one (the lower on a tie); null if none has.
const AtlasTableEntry* FindEntry(const AtlasTableEntry* table, size_t size, Op op, DType dtype, GeluApprox mode,
                                 int octave);

struct TilingDecision {
  const AtlasVariant* variant = nullptr;
  AtlasTilingData data{};
  std::string source;  // "table" or "default"
  int octave = 0;      // the table cell used (source "table")
};

// The shipping path: the tuned table entry of (op, dtype, GELU form) for n's
// size octave, else the nearest tuned octave (as the CPU dispatch does), the
// tiling adapted to this SoC; else the default rule: fp32 compute (no Cast
// for fp32 storage), two buffers, default tile and block dim. GELU's form
// comes from params.gelu_approx; a table tuned for the erf form only lends
// its tilings to the tanh form.
bool ComputeTiling(Op op, DType dtype, uint64_t n, const SocInfo& soc, const OpParams& params,
                   TilingDecision* out, std::string* err);

// Core `idx`'s element range (the kernel's own formula).
inline void CoreRangeOf(const AtlasTilingData& t, uint32_t idx, uint64_t* start, uint64_t* len) {
  CoreRange(t, idx, start, len);
}

}  // namespace actgrad::atlas
