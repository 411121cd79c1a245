// actgrad_choose_probe OP DTYPE N: what the shipping dispatch runs for one
// call of N elements (with ACTGRAD_TILING_TABLE, a table file), printed as
// "<variant> threads=<t> table=<source>". For the affinity test
// (affinity_test.cmake).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tiling/dispatch.h"
#include "variants/thread_pool.h"

int main(int argc, char** argv) {
  using namespace actgrad;
  Op op;
  DType dtype;
  if (argc != 4 || !ParseOp(argv[1], &op) || !ParseDType(argv[2], &dtype)) {
    std::fprintf(stderr, "usage: %s OP DTYPE N\n", argv[0]);
    return 2;
  }
  const uint64_t n = std::strtoull(argv[3], nullptr, 10);
  const KernelChoice c = ChooseKernel(op, dtype, GeluApprox::kNone, n, tables::Layout::kContig);
  std::printf("%s threads=%d available=%d table=%s\n", c.variant ? c.variant->name.c_str() : "(none)", c.split.threads,
              MaxThreads(), ActiveTable().source.c_str());
  return c.variant ? 0 : 1;
}
