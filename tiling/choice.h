// The one decision the tuner measures, the table stores, the generator
// compiles in and the dispatch hands to the kernel: which variant, and how
// its work splits. Choice names the variant (so it can be written, logged and
// compared across machines); KernelChoice is the same decision resolved for
// this process. Conversion runs one way: Choice -> KernelChoice (Resolve).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "actgrad/types.h"
#include "variants/variant.h"

namespace actgrad {

// For the CPU: a variant of Variants() and the Split of its calls. For Atlas:
// the Atlas variant name, split.threads = block dim (AI cores),
// split.stage_tile = the UB tile length, split.chunk = 0.
struct Choice {
  std::string variant;
  Split split;
  // Stable identity of the choice: "<variant>|t<threads>|c<chunk>|s<stage_tile>",
  // then "|r<tile_rows>x<tile_cols>" when the split has a tile and "|tr"
  // when it transposes the result (the tuner's log key; docs/tuning.md).
  std::string Key() const;
  bool operator==(const Choice&) const = default;
};

// The inverse of Choice::Key, the one reader of those keys (the tuner's log,
// the Atlas model's calibration from it): false unless `key` has Key()'s
// form, with numbers that are whole decimal integers.
bool ParseChoiceKey(const std::string& key, Choice* out);

// How many threads a call of n elements gets from a tuned table entry
// (schema v4): one per `grain` elements, at least one, at most the threads
// available (MaxThreads(): OMP_NUM_THREADS, omp_set_num_threads, the
// affinity mask). Unlike a thread count it carries to machines with more
// cores, as PyTorch's and oneDNN's grain sizes do; grain 0: one thread at
// every size (more threads never paid off where the table was tuned).
struct ThreadRule {
  uint64_t grain = 0;
  int Threads(uint64_t n, int available) const {
    if (grain == 0 || available <= 1) return 1;
    const uint64_t t = n / grain;
    return t < 1 ? 1 : t >= uint64_t(available) ? available : int(t);
  }
  bool operator==(const ThreadRule&) const = default;
};

struct KernelChoice {
  const Variant* variant = nullptr;  // nullptr: no kernel (unknown name or this CPU cannot run it)
  Split split;
  bool from_table = false;  // a table entry, not the untuned default
};

// The choice with its variant looked up in Variants(); variant is nullptr if
// the name is unknown or this CPU cannot run it.
KernelChoice Resolve(const Choice& c, bool from_table = false);

// The untuned default (tiling/tables/default.json has no entries; every cell
// of it is this): DefaultVariant (of the table's accuracy class) with
// kDefaultThreadRule's threads, default chunk and stage tile. variant is ""
// when no variant computes (op, dtype, mode).
// The default grain is PyTorch's at::internal::GRAIN_SIZE (32K elements):
// one thread below 64K elements, then a thread per 32K up to every core, so
// that a 64-core machine does not wake 64 threads for a 64K-element call.
inline constexpr ThreadRule kDefaultThreadRule{uint64_t(1) << 15};
Choice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n, AccuracyClass cls = AccuracyClass::kRule);
// The same for a machine that runs the variants `runs` accepts (a machine
// the dispatch poses as: tiling/dispatch.h PoseAsMachine).
Choice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n, AccuracyClass cls,
                     const std::function<bool(const Variant&)>& runs);

}  // namespace actgrad
