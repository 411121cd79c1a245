#include "atlas_backend.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <stdexcept>

#include "cost_model.h"
#include "host_tiling.h"

namespace actgrad::atlas {

using tune::Cell;

AtlasModelBackend::AtlasModelBackend(SocInfo soc) : soc_(std::move(soc)) {}

std::vector<uint32_t> AtlasModelBackend::TileChoices(const AtlasVariant& v) const {
  const uint32_t max_tile = MaxTileLength(v, soc_);
  std::vector<uint32_t> out;
  for (uint32_t t = 512; t <= max_tile; t *= 2) out.push_back(t);
  if (out.empty() || out.back() != max_tile) out.push_back(max_tile);
  return out;
}

std::vector<int> AtlasModelBackend::BlockDimChoices(const Cell& cell) const {
  const int cores = int(soc_.vector_cores);
  const uint64_t blocks = (cell.n + ElemsPerBlock(cell.dtype) - 1) / ElemsPerBlock(cell.dtype);
  std::vector<int> out;
  for (int d : {1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 64})
    if (d < cores && uint64_t(d) <= blocks) out.push_back(d);
  out.push_back(int(std::min<uint64_t>(cores, blocks)));
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<Choice> AtlasModelBackend::Candidates(const Cell& cell) {
  std::vector<Choice> out;
  if (cell.layout != "contig") return out;  // the Atlas kernels take contiguous operands
  const uint64_t epb = ElemsPerBlock(cell.dtype);
  for (const AtlasVariant* v : AtlasVariantsFor(cell.op, cell.dtype, cell.mode)) {
    for (int dim : BlockDimChoices(cell)) {
      // a tile much longer than a core's share only wastes UB
      const uint64_t blocks = (cell.n + epb - 1) / epb;
      const uint64_t per_core = (blocks + dim - 1) / dim * epb;
      bool covered = false;
      for (uint32_t tile : TileChoices(*v)) {
        if (covered) break;
        covered = tile >= per_core;
        Choice c;
        c.variant = v->name;
        c.split.threads = dim;
        c.split.stage_tile = tile;
        out.push_back(std::move(c));
      }
    }
  }
  return out;
}

Choice AtlasModelBackend::Default(const Cell& cell) {
  Choice c;
  OpParams p;
  TilingDecision d;
  std::string err;
  // the built-in default rule (not the compiled table): fp32 compute, 2 buffers
  const uint32_t compute = cell.dtype == DType::kF32 ? kComputeNone : kComputeUpcastF32;
  const AtlasVariant* v = FindAtlasVariant(cell.op, cell.dtype, compute, cell.mode, 2);
  if (!v) return c;
  AtlasTilingData t;
  if (!MakeTiling(*v, cell.n, p, soc_, TilingOptions{}, &t, &err)) return c;
  c.variant = v->name;
  c.split.threads = int(t.blockDim);
  c.split.stage_tile = t.tileLength;
  return c;
}

bool CandidateTiling(const SocInfo& soc, const Cell& cell, const Choice& c, const OpParams& params,
                     const AtlasVariant** v, AtlasTilingData* t, std::string* err) {
  *v = FindAtlasVariant(c.variant);
  if (!*v) {
    *err = "unknown Atlas variant " + c.variant;
    return false;
  }
  if ((*v)->op != cell.op || (*v)->dtype != cell.dtype || (cell.op == Op::kGeluBwd && (*v)->approx != cell.mode)) {
    *err = "variant " + c.variant + " does not match the cell";
    return false;
  }
  if (c.split.chunk != 0) {
    *err = "the Atlas kernels have no chunk (split.chunk " + std::to_string(c.split.chunk) + ")";
    return false;
  }
  TilingOptions o;
  o.stage_tile = c.split.stage_tile;
  o.block_dim = c.split.threads;
  return MakeTiling(**v, cell.n, params, soc, o, t, err);
}

std::vector<double> AtlasModelBackend::Measure(const Cell& cell, const Choice& c, int reps, double min_seconds) {
  (void)min_seconds;
  const AtlasVariant* v;
  AtlasTilingData t;
  std::string err;
  if (!CandidateTiling(soc_, cell, c, OpParams{}, &v, &t, &err)) throw std::runtime_error("atlas-model: " + err);
  const double ns = ModelLaunch(*v, t, soc_).total_ns;
  return std::vector<double>(size_t(std::max(1, reps)), ns);
}

static std::string NowIso() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}

nlohmann::json AtlasModelBackend::Provenance() {
  return {{"model", "actgrad atlas cost model v1 (emulator trace replay)"},
          {"parameter_file", soc_.path.empty() ? std::string("built-in") : soc_.path},
          {"soc", soc_.name},
          {"soc_version", soc_.soc_version},
          {"cores", soc_.vector_cores},
          {"ub_bytes", soc_.ub_bytes},
          {"parameters", SocToJson(soc_).at("params")},
          {"date", NowIso()},
          {"tool_version", "0.1.0"}};
}

std::unique_ptr<actgrad::tune::Backend> MakeAtlasModelBackend(const std::string& soc_json_path) {
  SocInfo soc;
  std::string err;
  if (!LoadSoc(soc_json_path, &soc, &err)) throw std::runtime_error("atlas-model: " + err);
  return std::make_unique<AtlasModelBackend>(std::move(soc));
}

}  // namespace actgrad::atlas
