// Shipping dispatch: (op, dtype, size, layout) -> variant, threads, chunk.
// Reads only the compiled-in tiling tables (or the ACTGRAD_TILING_TABLE
// override); never the tuner.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "actgrad/types.h"
#include "variants/variant.h"

namespace actgrad {

struct KernelChoice {
  const Variant* variant = nullptr;
  int threads = 1;
  size_t chunk = 0;  // elements per thread piece (0 = even split)
};

KernelChoice ChooseKernel(Op op, DType dtype, GeluApprox mode, uint64_t n, bool broadcast);

// Size bucket k holds n in [4^k, 4^(k+1)) (docs/conventions.md).
int SizeBucket(uint64_t n);

// The name of the table the dispatch uses ("default" when untuned).
std::string ActiveTableName();

}  // namespace actgrad
