// A table entry of the tuner tests: the untuned default variant of (op,
// dtype) at one octave, `threads` threads, a made-up median.
#pragma once
#include "tiling/table.h"
#include "variants/variant.h"

namespace actgrad::tune::testing {

inline tables::Entry EntryAt(Op op, DType t, tables::Layout layout, int octave, int threads = 1) {
  tables::Entry e;
  e.op = op;
  e.dtype = t;
  e.layout = layout;
  e.octave = octave;
  e.choice = Choice{DefaultVariant(op, t, GeluApprox::kNone)->name, Split{threads, 0, 0}};
  e.median_ns = 1000.0 * octave;
  return e;
}

}  // namespace actgrad::tune::testing
