// Our tiling of a call against Ascend's own (ascend_tilings.h), both priced
// by the cost model, and the comparison as a Markdown or CSV table
// (actgrad-atlas compare, docs/atlas.md "Our tilings against Ascend's").
//
// Ascend's tiling is priced with our kernel's instruction stream (same op,
// dtype and compute mode; their buffer count): the comparison is of the
// tilings -- core split, UB pass length, buffering -- not of the two
// kernels' instruction choices. Where their tile is longer than our UB
// layout holds, it is priced as if it fitted, and the row says so.
#pragma once
#include <string>
#include <vector>

#include "actgrad/types.h"
#include "atlas_tiling_data.h"
#include "atlas_variants.h"
#include "soc.h"

namespace actgrad::atlas {

struct TilingCost {
  std::string label;    // where the tiling came from: "table (octave 24)", "default rule", "best", "LogitGrad"
  std::string variant;  // the Atlas variant priced
  uint32_t block_dim = 0, tile = 0, buffers = 0;
  double ns = 0;        // modelled device time of one launch
  double pct_hbm = 0;   // 3 n sizeof(T) bytes / ns, in % of the SoC's peak HBM bandwidth
  std::string bound;    // "dma" or "vector"
};

struct TilingComparison {
  Op op = Op::kSeluBwd;
  DType dtype = DType::kF32;
  uint64_t n = 0;
  TilingCost ours;
  bool has_theirs = false;
  TilingCost theirs;
  double ratio = 0;  // theirs.ns / ours.ns: above 1 ours is predicted faster
  std::string note;  // why there is no Ascend tiling, or what pricing theirs assumed
};

// Prices `ours` (variant and tiling of n elements, labelled) and Ascend's
// tiling of the same call on `soc`.
TilingComparison CompareWithAscend(const AtlasVariant& ours_v, const AtlasTilingData& ours_t,
                                   const std::string& ours_label, const SocInfo& soc);

// The comparison as a Markdown table / as CSV with a header row.
std::string ComparisonMarkdown(const std::vector<TilingComparison>& rows);
std::string ComparisonCsv(const std::vector<TilingComparison>& rows);

}  // namespace actgrad::atlas
