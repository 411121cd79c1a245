// The tiling table compiled into the host tiling: generated at build time
// from tiling/tables/ascend910b.json by actgrad-atlas-gentable (or empty,
// meaning the built-in default rule, when that file does not exist). One row
// per size cell of the shared schema (docs/conventions.md "Size octaves").
#pragma once
#include <cstddef>
#include <cstdint>

#include "actgrad/types.h"

namespace actgrad::atlas {

struct AtlasTableEntry {
  Op op;
  DType dtype;
  GeluApprox mode;      // GELU's form (kNone for the other ops)
  int octave;           // n in [2^octave, 2^(octave+1))
  const char* variant;  // Atlas variant name (validated against the list at build time)
  uint32_t stage_tile;  // UB tile length, elements (the table's "tile")
  uint32_t block_dim;   // AI cores launched (the table's "threads")
  double median_ns;     // what the table's backend measured or modelled
};

extern const AtlasTableEntry kAtlasTilingTable[];
extern const size_t kAtlasTilingTableSize;
extern const char* const kAtlasTilingTableSource;   // JSON path or "built-in default rule"
extern const char* const kAtlasTilingTableMachine;  // machine_id of the table
extern const char* const kAtlasTilingTableBackend;  // "atlas-model", "atlas-device" or ""

}  // namespace actgrad::atlas
