// The tuner's Atlas backends. "atlas-model" prices AscendC tilings with the
// cost model (atlas/model/cost_model.h) of a SoC file; it is deterministic.
// A candidate is a Choice (tiling/choice.h): variant = Atlas variant name
// (its buffer count included), split.threads = block dim (vector cores),
// split.stage_tile = UB tile length (elements), split.chunk = 0.
#pragma once
#include <memory>
#include <string>

#include "tools/tune/backend.h"
#include "atlas_variants.h"
#include "atlas_tiling_data.h"
#include "soc.h"

namespace actgrad::atlas {

class AtlasModelBackend : public actgrad::tune::Backend {
 public:
  explicit AtlasModelBackend(SocInfo soc);
  std::string Name() const override { return "atlas-model"; }
  bool Deterministic() const override { return true; }
  bool CallersCapThreads() const override { return false; }  // no one_thread fallback in Atlas tables
  std::vector<Choice> Candidates(const tune::Cell& cell) override;
  Choice Default(const tune::Cell& cell) override;
  std::vector<double> Measure(const tune::Cell& cell, const Choice& c, int reps, double min_seconds) override;
  nlohmann::json Provenance() override;
  std::string MachineId() override { return soc_.name; }

  const SocInfo& soc() const { return soc_; }
  // Tile lengths and block dims the candidate list explores.
  std::vector<uint32_t> TileChoices(const AtlasVariant& v) const;
  std::vector<int> BlockDimChoices(const tune::Cell& cell) const;

 private:
  SocInfo soc_;
};

// Factory the tuner links against (throws std::runtime_error on a bad file).
std::unique_ptr<actgrad::tune::Backend> MakeAtlasModelBackend(const std::string& soc_json_path);

// The variant, block dim and tile a candidate describes, as a tiling of cell b.
bool CandidateTiling(const SocInfo& soc, const tune::Cell& cell, const Choice& c, const OpParams& params,
                     const AtlasVariant** v, AtlasTilingData* t, std::string* err);

// The "atlas-device" backend (atlas_device_backend.cc, library
// actgrad_atlas_device): the same candidates, timed with ACL events around
// the kernel launches on NPU `device`; without CANN on the AscendC emulator
// behind the project's runtime, named "atlas-device(emulator)". Throws
// std::runtime_error naming the failed call and ACL's message.
std::unique_ptr<actgrad::tune::Backend> MakeAtlasDeviceBackend(const std::string& soc_json_path, int device);

}  // namespace actgrad::atlas
