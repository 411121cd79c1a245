#include "tiling/dispatch.h"

#include <omp.h>

namespace actgrad {

int SizeBucket(uint64_t n) {
  int k = 0;
  while (n >= 4 && k < 31) n /= 4, ++k;
  return k;
}

std::string ActiveTableName() { return "default"; }

KernelChoice ChooseKernel(Op op, DType dtype, GeluApprox mode, uint64_t n, bool) {
  KernelChoice c;
  c.variant = DefaultVariant(op, dtype, mode);
  c.threads = n >= (uint64_t(1) << 16) ? omp_get_max_threads() : 1;
  return c;
}

}  // namespace actgrad
