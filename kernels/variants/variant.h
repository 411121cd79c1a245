// The one list of kernel variants (XNNPACK style). Tests, benchmarks, the
// accuracy tool, the tuner and the shipping dispatch all read this list.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "actgrad/types.h"
#include "variants/split.h"

namespace actgrad {

// Arguments of a contiguous kernel: n elements of g, x and out, all of the
// variant's dtype. out may alias g or x exactly (in-place).
struct KernelArgs {
  const void* g;
  const void* x;
  void* out;
  size_t n;
  OpParams params;
  size_t stage_tile;  // Split::stage_tile: elements staged per step (upcast "staged"); 0 = kDefaultStageTile
};

using KernelFn = void (*)(const KernelArgs&);

struct Variant {
  std::string name;     // op.dtype.upcast.approx.uN.target[.nt]
  Op op;
  DType dtype;
  std::string upcast;   // none | reg | staged | f16native | bf16cvt | gather | bits | scalar
  std::string approx;   // op-specific approximation, "exact" if none
  int unroll;           // vectors per iteration
  std::string target;   // sse4 | avx2 | avx3 | avx512 | avx512bf16 | avx512fp16 | neon | sve | emu128 | scalar
  bool nt_stores;       // non-temporal stores
  GeluApprox gelu_mode; // which GELU formula this variant computes (kNone for other ops)
  KernelFn fn;
  bool supported;       // this CPU can run it (checked once at start-up)
  double claimed_max_err;  // claimed bound of the approximation (spec error metric, g = 1), 0 if exact
  bool factor_table = false;  // reads a factor table (upcast "gather", factor_tables.h)
};

// Every compiled variant, including those this CPU cannot run (supported=false).
const std::vector<Variant>& Variants();
// nullptr when no variant has that name.
const Variant* FindVariant(std::string_view name);
// Index in Variants(), or -1.
int VariantIndex(std::string_view name);
// Preference of targets, widest first (0 = best; unknown targets last): the
// untuned default takes the best supported one, the tuner's prior order too.
int TargetRank(std::string_view target);
// The portable default for (op, dtype, gelu mode): best supported target,
// register upcast (or bf16cvt), the most accurate approximation, unroll 2,
// plain stores.
const Variant* DefaultVariant(Op op, DType dtype, GeluApprox mode = GeluApprox::kNone);

// Builds what the variant reads besides its operands (a factor table) now,
// so that its first run does not: the runtime calls it in phase one.
void PrepareVariant(const Variant& v, const OpParams& p);

// Runs a variant over n elements as `split` says (split.h): pieces of
// split.chunk elements claimed dynamically by split.threads threads of the
// library pool (threads <= 1, or n < kSerialBelow: on the calling thread);
// split.stage_tile goes to the kernel as KernelArgs::stage_tile.
void RunVariant(const Variant& v, const KernelArgs& args, const Split& split);

}  // namespace actgrad
