#include "tiling_compare.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "ascend_tilings.h"
#include "cost_model.h"
#include "host_tiling.h"

namespace actgrad::atlas {

namespace {

double PctHbm(uint64_t n, DType dt, double ns, const SocInfo& soc) {
  const double bytes = 3.0 * double(n) * double(DTypeSize(dt));
  return ns > 0 ? 100.0 * (bytes / ns) / soc.HbmPeakGbps() : 0.0;
}

TilingCost Cost(const std::string& label, const AtlasVariant& v, uint32_t dim, uint32_t tile, uint32_t bufs,
                const ModelResult& r, uint64_t n, const SocInfo& soc) {
  TilingCost c;
  c.label = label;
  c.variant = v.name;
  c.block_dim = dim;
  c.tile = tile;
  c.buffers = bufs;
  c.ns = r.total_ns;
  c.pct_hbm = PctHbm(n, v.dtype, r.total_ns, soc);
  c.bound = r.bound;
  return c;
}

std::string Kib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f KiB", double(bytes) / 1024.0);
  return b;
}

std::string Fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

std::string Shape(const TilingCost& c) {
  return std::to_string(c.block_dim) + " x " + std::to_string(c.tile) + " x " + std::to_string(c.buffers);
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

// A Markdown cell: no '|' inside.
std::string MdCell(std::string s) {
  std::replace(s.begin(), s.end(), '|', '/');
  return s;
}

}  // namespace

TilingComparison CompareWithAscend(const AtlasVariant& ours_v, const AtlasTilingData& ours_t,
                                   const std::string& ours_label, const SocInfo& soc) {
  TilingComparison c;
  c.op = ours_v.op;
  c.dtype = ours_v.dtype;
  c.n = ours_t.totalLength;
  c.ours = Cost(ours_label, ours_v, ours_t.blockDim, ours_t.tileLength, ours_t.bufferNum,
                ModelLaunch(ours_v, ours_t, soc), c.n, soc);

  AscendTiling a;
  std::string why;
  if (!AscendTilingFor(c.op, c.dtype, c.n, soc, &a, &why)) {
    c.note = why;
    return c;
  }
  // Our kernel's instruction stream with their buffer count, core split and
  // pass length (rounded up to our kernels' 256-element tile granule).
  const AtlasVariant* v = FindAtlasVariant(c.op, c.dtype, ours_v.compute, ours_v.approx, int(a.buffers));
  if (!v) v = &ours_v;
  AtlasTilingData t = ours_t;
  const uint32_t tile = uint32_t(RoundUpU64(std::max<uint32_t>(a.tile, 1), kTileAlign));
  t.tileLength = tile;
  t.bufferNum = uint32_t(v->buffers);
  t.blockDim = a.block_dim;
  t.tilingKey = MakeTilingKey(t.op, t.dtype, t.compute, t.approx, t.bufferNum);
  std::vector<std::string> notes;
  if (!a.note.empty()) notes.push_back(a.note);
  if (tile != a.tile) notes.push_back("their tile " + std::to_string(a.tile) + " priced as " + std::to_string(tile));
  const uint64_t need = UbBytesFor(*v, tile);
  const uint64_t cap = std::max<uint64_t>(soc.UbBudget(), need);
  if (need > soc.UbBudget())
    notes.push_back("our UB layout needs " + Kib(need) + " at their tile (theirs " + Kib(a.ub_bytes) +
                    "): priced as if it fitted");
  const ModelResult r = ModelCores(*v, t, a.core_lengths, soc, cap);
  c.has_theirs = true;
  c.theirs = Cost(a.name, *v, a.block_dim, a.tile, a.buffers, r, c.n, soc);
  c.ratio = c.ours.ns > 0 ? c.theirs.ns / c.ours.ns : 0.0;
  for (size_t i = 0; i < notes.size(); ++i) c.note += (i ? "; " : "") + notes[i];
  return c;
}

std::string ComparisonMarkdown(const std::vector<TilingComparison>& rows) {
  std::ostringstream o;
  o << "| op | dtype | n | ours | ours: cores x tile x buffers | ours us | ours % HBM | Ascend "
       "| Ascend: cores x tile x buffers | Ascend us | Ascend % HBM | Ascend / ours | note |\n";
  o << "|---|---|---:|---|---|---:|---:|---|---|---:|---:|---:|---|\n";
  for (const auto& r : rows) {
    o << "| " << OpName(r.op) << " | " << DTypeName(r.dtype) << " | " << r.n << " | " << MdCell(r.ours.label)
      << " | " << Shape(r.ours) << " | " << Fixed(r.ours.ns / 1000.0, 1) << " | " << Fixed(r.ours.pct_hbm, 0)
      << " | ";
    if (r.has_theirs)
      o << r.theirs.label << " | " << Shape(r.theirs) << " | " << Fixed(r.theirs.ns / 1000.0, 1) << " | "
        << Fixed(r.theirs.pct_hbm, 0) << " | " << Fixed(r.ratio, 2);
    else
      o << "- | - | - | - | -";
    o << " | " << MdCell(r.note) << " |\n";
  }
  return o.str();
}

std::string ComparisonCsv(const std::vector<TilingComparison>& rows) {
  std::ostringstream o;
  o << "op,dtype,n,ours_source,ours_variant,ours_block_dim,ours_tile,ours_buffers,ours_ns,ours_pct_hbm,"
       "ascend_name,ascend_block_dim,ascend_tile,ascend_buffers,ascend_ns,ascend_pct_hbm,ascend_over_ours,note\n";
  for (const auto& r : rows) {
    o << OpName(r.op) << "," << DTypeName(r.dtype) << "," << r.n << "," << CsvField(r.ours.label) << ","
      << r.ours.variant << "," << r.ours.block_dim << "," << r.ours.tile << "," << r.ours.buffers << ","
      << Fixed(r.ours.ns, 1) << "," << Fixed(r.ours.pct_hbm, 2) << ",";
    if (r.has_theirs)
      o << r.theirs.label << "," << r.theirs.block_dim << "," << r.theirs.tile << "," << r.theirs.buffers << ","
        << Fixed(r.theirs.ns, 1) << "," << Fixed(r.theirs.pct_hbm, 2) << "," << Fixed(r.ratio, 4) << ",";
    else
      o << ",,,,,,,";
    o << CsvField(r.note) << "\n";
  }
  return o.str();
}

}  // namespace actgrad::atlas
