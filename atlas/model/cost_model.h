// Cost model of the Atlas vector cores. The emulator (dry run) produces, per
// core, the exact instruction stream of a kernel variant under a tiling: copy
// instructions on MTE2/MTE3 with their bytes, vector instructions on V with
// their repeats, and the queue flags between the pipes. The model replays it:
// every pipe executes its instructions in order, an instruction starts when
// its pipe is free, the scalar unit has issued it and the flags it waits for
// are set (so double buffering overlaps DMA with vector work by itself);
// a copy costs setup + bytes / bandwidth, where the core's bandwidth is its
// own DMA limit or its share of HBM (or L2) among the launched cores; a vector
// instruction costs (issue + repeats * cycles per repeat) / clock. The launch
// costs the slowest core plus the launch overhead.
//
// Cores with the same element count run the same stream, so only the distinct
// ones (big, small, last) are emulated; a core with many tiles is emulated at
// two shorter lengths and extrapolated linearly (exact for the periodic
// pipeline once it is in steady state).
#pragma once
#include <string>
#include <vector>

#include "actgrad/types.h"
#include "atlas_variants.h"
#include "atlas_tiling_data.h"
#include "emu_runtime.h"
#include "soc.h"

namespace actgrad::atlas {

struct CoreTime {
  double ns = 0;
  double busy[AscendEmu::kNumPipes] = {};  // time each pipe was busy
};

// Replays one core's trace. dma_bytes_per_ns: this core's copy bandwidth.
CoreTime ReplayTrace(const std::vector<AscendEmu::TraceEvent>& trace, const ModelParams& m, double dma_bytes_per_ns);

struct ModelResult {
  double total_ns = 0;        // launch overhead + core start + slowest core
  double slowest_core_ns = 0;
  uint32_t block_dim = 0;
  double mte2_busy_ns = 0, v_busy_ns = 0, mte3_busy_ns = 0;  // of the slowest core
  const char* bound = "";     // "dma" or "vector": the busier pipe of the slowest core
  AscendEmu::CoreStats slowest;  // counters of the slowest core
  AscendEmu::CoreStats total;    // counters summed over all cores
};

// Models one launch of `v` with tiling `t` on `soc`. Throws AscendEmu::Breach
// if the kernel breaches the programming model under this tiling.
ModelResult ModelLaunch(const AtlasVariant& v, const AtlasTilingData& t, const SocInfo& soc);

// Models a launch of core_lengths.size() cores, core i holding
// core_lengths[i] elements, each running v's instruction stream in tiles of
// t.tileLength (t supplies the op's scalars; its lengths and block dim are
// ignored). This prices another split of the work, e.g. Ascend's own
// (ascend_tilings.h), with our kernel's instructions. ub_capacity: the UB the
// emulator grants a core (0: the SoC's budget); larger lets a tile our UB
// layout cannot hold be priced as if it fitted.
ModelResult ModelCores(const AtlasVariant& v, const AtlasTilingData& t, const std::vector<uint64_t>& core_lengths,
                       const SocInfo& soc, uint64_t ub_capacity = 0);

// Drops the cached per-core traces (they depend on variant, tile, length only).
void ClearTraceCache();

// ---- calibration

struct Measurement {
  std::string variant;
  uint64_t n = 0;
  int64_t tile = 0;
  int block_dim = 0;
  double time_ns = 0;
};

// CSV with a header naming at least: variant,n,tile,block_dim,time_ns
// (extra columns are ignored; '#' lines are comments).
bool ReadMeasurementsCsv(const std::string& path, std::vector<Measurement>* out, std::string* err);
bool WriteMeasurementsCsv(const std::string& path, const std::vector<Measurement>& rows, std::string* err);
// The rows of a tuner measurement log (actgrad-tune --log, JSON Lines,
// tools/tune/log.h) of an Atlas backend: each contiguous cell's Atlas
// candidates, one row per (variant, n, tile, block dim) with the median of
// all its samples. A cell's n is its "@n", else the size the tuner measures
// its octave at (RepresentativeN with the header's max_n). Lines that are
// not such records (CPU candidates, other layouts, bad lines) are counted in
// *skipped; *backend gets the header's backend name ("" if none). False
// (with the reason) if the file cannot be read or has no row.
bool ReadTuneLog(const std::string& path, std::vector<Measurement>* out, size_t* skipped, std::string* err,
                 std::string* backend = nullptr);

struct FitResult {
  std::vector<std::string> names;
  std::vector<double> before, after;
  double rms_log_before = 0, rms_log_after = 0;  // RMS of log(model / measured)
  int iterations = 0;
  size_t points = 0;
};

// Modelled time of a measurement row (its tiling rebuilt from the row).
double ModelRow(const Measurement& r, const SocInfo& soc, const OpParams& params);

// Fits the named model parameters (see ModelParamNames(); "cpr.<Kind>" for a
// cycles-per-repeat entry) by Levenberg-Marquardt on log(time), positive
// parameters in log space. Updates soc->model in place.
FitResult Calibrate(SocInfo* soc, const std::vector<Measurement>& rows, const std::vector<std::string>& params,
                    const OpParams& op_params);

// The parameters calibrate fits unless told otherwise.
std::vector<std::string> DefaultFitParams();

}  // namespace actgrad::atlas
