// The tuner's Atlas backends. "atlas-model" prices AscendC tilings with the
// cost model (atlas/model/cost_model.h) of a SoC file; it is deterministic.
// Candidate: variant = Atlas variant name, tile = tile length (elements),
// threads = block dim (vector cores), extra = {"buffers": n}.
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
  std::vector<actgrad::tune::Candidate> Candidates(const actgrad::tune::Bucket& b) override;
  actgrad::tune::Candidate Default(const actgrad::tune::Bucket& b) override;
  std::vector<double> Measure(const actgrad::tune::Bucket& b, const actgrad::tune::Candidate& c, int reps,
                              double min_seconds) override;
  nlohmann::json Provenance() override;
  std::string MachineId() override { return soc_.name; }

  const SocInfo& soc() const { return soc_; }
  // Tile lengths and block dims the candidate list explores.
  std::vector<uint32_t> TileChoices(const AtlasVariant& v) const;
  std::vector<int> BlockDimChoices(const actgrad::tune::Bucket& b) const;

 private:
  SocInfo soc_;
};

// Factory the tuner links against (throws std::runtime_error on a bad file).
std::unique_ptr<actgrad::tune::Backend> MakeAtlasModelBackend(const std::string& soc_json_path);

// The block dim, tile and buffers a candidate describes, as a tiling.
bool CandidateTiling(const SocInfo& soc, const actgrad::tune::Bucket& b, const actgrad::tune::Candidate& c,
                     const OpParams& params, const AtlasVariant** v, AtlasTilingData* t, std::string* err);

}  // namespace actgrad::atlas

#ifdef ACTGRAD_HAVE_CANN
namespace actgrad::atlas {
// UNTESTED (needs CANN and a device): times candidates on NPU `device` with ACL events.
std::unique_ptr<actgrad::tune::Backend> MakeAtlasDeviceBackend(const std::string& soc_json_path, int device);
}  // namespace actgrad::atlas
#endif
