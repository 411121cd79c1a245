// A SoC description for the Atlas track: the structural numbers the host
// tiling needs (vector cores, UB) and the cost-model parameters, read from
// atlas/soc/<name>.json where every number carries its source and
// uncertainty.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emu_runtime.h"

namespace actgrad::atlas {

struct ModelParams {
  double clock_ghz = 1.8;
  double hbm_bandwidth_gbps = 1300;      // achievable GM bandwidth shared by all cores (GB/s = bytes/ns)
  double l2_bandwidth_gbps = 3000;       // when the launch's working set fits in L2
  double l2_bytes = 192.0 * 1024 * 1024;
  double core_dma_bandwidth_gbps = 100;  // one core's MTE2/MTE3 limit
  double dma_setup_ns = 300;             // per copy instruction
  double launch_overhead_ns = 4000;      // per kernel launch
  double core_start_ns = 1000;           // per core: tiling read, TPipe set-up
  double scalar_issue_ns = 2;            // scalar unit, per issued instruction
  double flag_sync_ns = 20;              // per set/wait flag pair between pipes
  double vec_issue_cycles = 8;           // per vector instruction
  double vector_cycle_scale = 1.0;       // multiplies all vector cycles (calibration knob)
  std::array<double, AscendEmu::kNumVecKinds> cycles_per_repeat{};
};

// What a SoC file says about one parameter besides its value. Files may give
// a bare number (older files, fitted values): then all three are empty.
struct ParamDoc {
  std::string unit, source, uncertainty;
};

struct SocInfo {
  std::string name;         // e.g. "ascend910b" (the tiling table's machine_id)
  std::string soc_version;  // e.g. "Ascend910B2"
  std::string path;         // file it came from ("" for built-in)
  uint32_t vector_cores = 48;
  uint64_t ub_bytes = 196608;
  uint64_t ub_reserved_bytes = 8192;
  uint32_t block_bytes = 32;
  uint32_t repeat_bytes = 256;
  ModelParams model;
  // Nominal peak HBM bandwidth (GB/s), the 100 % of "% of HBM"; not a
  // timing parameter (the model uses hbm_bandwidth_gbps). 0 when the file
  // has none (older files): then % of HBM is taken against the achievable.
  double hbm_peak_gbps = 0;
  std::map<std::string, ParamDoc> docs;  // by parameter name, as the file gives them
  nlohmann::json raw;  // the file as read (for provenance and re-writing)
  uint64_t UbBudget() const { return ub_bytes - ub_reserved_bytes; }
  double HbmPeakGbps() const { return hbm_peak_gbps > 0 ? hbm_peak_gbps : model.hbm_bandwidth_gbps; }
};

// Reads a SoC file. On failure returns false and says why in *err.
bool LoadSoc(const std::string& path, SocInfo* out, std::string* err);
// Parses the JSON object of a SoC file.
bool SocFromJson(const nlohmann::json& j, SocInfo* out, std::string* err);
// Writes `soc` back into its JSON form (raw with the current model values).
nlohmann::json SocToJson(const SocInfo& soc);
// Directory of the SoC files in the source tree (compiled in).
std::string DefaultSocDir();
// Loads DefaultSocDir()/<name>.json, throwing std::runtime_error on failure.
SocInfo LoadSocByName(const std::string& name);

// Every parameter of a SoC file by name: name, current value as text, and its
// unit, source and uncertainty (for actgrad-atlas soc and docs/atlas.md).
struct SocParamRow {
  std::string name, value;
  ParamDoc doc;
};
std::vector<SocParamRow> SocParamRows(const SocInfo& soc);

// Names of the fittable model parameters and access to them.
const std::vector<std::string>& ModelParamNames();
double* ModelParamRef(ModelParams& m, const std::string& name);  // nullptr if unknown

// Host-side stand-in of CANN's platform_ascendc::PlatformAscendC, so the
// tiling code reads the platform the way CANN host tiling does.
enum class CoreMemType { UB, L1, L2 };
class PlatformAscendC {
 public:
  explicit PlatformAscendC(const SocInfo& soc) : soc_(soc) {}
  uint32_t GetCoreNumAiv() const { return soc_.vector_cores; }
  // UB available to a kernel's TPipe (the AscendC temporary area excluded).
  void GetCoreMemSize(CoreMemType type, uint64_t& size) const {
    size = type == CoreMemType::UB ? soc_.UbBudget() : type == CoreMemType::L2 ? uint64_t(soc_.model.l2_bytes) : 0;
  }

 private:
  const SocInfo& soc_;
};

}  // namespace actgrad::atlas
