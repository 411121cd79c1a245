// The one decision the tuner measures, the table stores, the generator
// compiles in and the dispatch hands to the kernel: which variant, and how
// its work splits. Choice names the variant (so it can be written, logged and
// compared across machines); KernelChoice is the same decision resolved for
// this process. Conversion runs one way: Choice -> KernelChoice (Resolve).
#pragma once
#include <cstdint>
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
  // Stable identity of the choice: "<variant>|t<threads>|c<chunk>|s<stage_tile>"
  // (the tuner's log key; docs/tuning.md).
  std::string Key() const;
  bool operator==(const Choice&) const = default;
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
// of it is this): DefaultVariant on one thread below kDefaultThreadsFrom
// elements, MaxThreads() threads from there on, default chunk and stage tile.
// variant is "" when no variant computes (op, dtype, mode).
inline constexpr uint64_t kDefaultThreadsFrom = uint64_t(1) << 16;
Choice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n);

}  // namespace actgrad
