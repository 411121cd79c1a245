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
  size_t chunk = 0;      // elements per piece threads claim (0 = RunVariant's default)
  bool from_table = false;
};

KernelChoice ChooseKernel(Op op, DType dtype, GeluApprox mode, uint64_t n, bool broadcast);

// The untuned choice (what the portable default table gives).
KernelChoice DefaultChoice(Op op, DType dtype, GeluApprox mode, uint64_t n);

// The size octave of n: h with n in [2^h, 2^(h+1)) (docs/conventions.md); 0 for n < 2.
int SizeOctave(uint64_t n);

// Which table the dispatch uses: its machine id and where it came from
// ("compiled:<json path>" or "env:<path>"), and why it was chosen.
struct ActiveTableInfo {
  std::string machine_id;
  std::string source;
  std::string reason;  // "exact machine id", "ISA family x86-avx512", "portable default", "ACTGRAD_TILING_TABLE"
  size_t entries = 0;
};
const ActiveTableInfo& ActiveTable();
std::string ActiveTableName();

// While alive, ChooseKernel on this thread returns `forced` (for the tuner's
// measurements through the aclnn API and for tests).
class ScopedKernelOverride {
 public:
  explicit ScopedKernelOverride(const KernelChoice& forced);
  ~ScopedKernelOverride();
  ScopedKernelOverride(const ScopedKernelOverride&) = delete;
  ScopedKernelOverride& operator=(const ScopedKernelOverride&) = delete;

 private:
  const KernelChoice* previous_;
  KernelChoice forced_;
};

// Re-selects the table (as at start-up), optionally pretending to be another
// machine; for tests and tools. Not thread-safe with running ops.
void ReloadTilingTable(const std::string& machine_id_override = "", const std::string& isa_override = "");

}  // namespace actgrad
