// The one list of kernel variants (XNNPACK style). Tests, benchmarks, the
// accuracy tool, the tuner and the shipping dispatch all read this list.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actgrad/types.h"

namespace actgrad {

// Arguments of a contiguous kernel: n elements of g, x and out, all of the
// variant's dtype. out may alias g or x exactly (in-place).
struct KernelArgs {
  const void* g;
  const void* x;
  void* out;
  size_t n;
  OpParams params;
  size_t tile;  // staging tile in elements (upcast "staged"); 0 = variant default
};

using KernelFn = void (*)(const KernelArgs&);

struct Variant {
  std::string name;     // op.dtype.upcast.approx.uN.target[.nt]
  Op op;
  DType dtype;
  std::string upcast;   // none | reg | staged | f16native | bf16cvt | scalar
  std::string approx;   // op-specific approximation, "exact" if none
  int unroll;           // vectors per iteration
  std::string target;   // sse4 | avx2 | avx3 | avx512fp16 | neon | sve | emu128 | scalar
  bool nt_stores;       // non-temporal stores
  GeluApprox gelu_mode; // which GELU formula this variant computes (kNone for other ops)
  KernelFn fn;
  bool supported;       // this CPU can run it (checked once at start-up)
  double claimed_max_err;  // claimed bound of the approximation (spec error metric, g = 1), 0 if exact
};

// Every compiled variant, including those this CPU cannot run (supported=false).
const std::vector<Variant>& Variants();
// nullptr when no variant has that name.
const Variant* FindVariant(std::string_view name);
// Index in Variants(), or -1.
int VariantIndex(std::string_view name);
// The portable default for (op, dtype, gelu mode): best supported target,
// register upcast, the most accurate approximation, unroll 2, plain stores.
const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode = GeluApprox::kNone);

// Runs a variant over n elements, split into chunks of `tile` elements over
// `threads` threads of the library pool (variants/thread_pool.h; threads <= 1
// runs on the calling thread; pieces are claimed dynamically).
void RunVariant(const Variant& v, const KernelArgs& args, int threads, size_t chunk);

}  // namespace actgrad
