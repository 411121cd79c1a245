// Runs an Atlas kernel variant on the AscendC emulator: registers the GM
// buffers, places the tiling data in "GM" and launches the AscendC entry
// point on every core (or a chosen subset). A dry run checks and counts
// without touching data (GM pointers may be null), for the cost model.
#pragma once
#include <cstdint>
#include <vector>

#include "atlas_variants.h"
#include "atlas_tiling_data.h"
#include "emu_runtime.h"

namespace actgrad::atlas {

struct EmuOptions {
  int threads = 1;               // cores at once (1: one after another)
  bool dry_run = false;
  bool trace = false;
  uint64_t ub_capacity = 196608 - 8192;  // bytes per core a TPipe may allocate
  std::vector<int> only_cores;
  bool nan_propagating_minmax = true;
};

// g, x, out: n elements of the variant's storage dtype (raw bits).
AscendEmu::LaunchResult RunOnEmulator(const AtlasVariant& v, const AtlasTilingData& t, const void* g,
                                      const void* x, void* out, const EmuOptions& o);

}  // namespace actgrad::atlas
