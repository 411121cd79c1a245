// Internal: how the per-file variant lists are joined into the one list.
#pragma once
#include <vector>

#include "variants/variant.h"

// Calls FN for every Highway target compiled into this file. Entry 0 of the
// dispatch table is Highway's chooser, not a target (skip it), except in a
// one-target build (a sanitizer build that compiles its own kernels:
// kernels/CMakeLists.txt), where the table is that target's function alone.
#define ACTGRAD_APPEND_FOR_ALL_TARGETS(FN, out)                                       \
  do {                                                                                \
    const auto& table = HWY_DISPATCH_TABLE(FN);                                       \
    const size_t count = sizeof(table) / sizeof(table[0]);                            \
    for (size_t i = count == 1 ? 0 : 1; i < count; ++i) {                             \
      bool seen = false;                                                              \
      for (size_t j = 1; j < i; ++j) seen = seen || table[j] == table[i];             \
      if (table[i] && !seen) table[i](out);                                           \
    }                                                                                 \
  } while (0)

namespace actgrad {
void AppendSeluHardswishSoftshrinkVariantsAllTargets(std::vector<Variant>* out);
void AppendGeluVariantsAllTargets(std::vector<Variant>* out);
void AppendLogitVariantsAllTargets(std::vector<Variant>* out);
void AppendScalarVariants(std::vector<Variant>* out);
void AppendNativeVariants(std::vector<Variant>* out);  // AVX512-FP16/BF16 intrinsics, if built
}  // namespace actgrad
