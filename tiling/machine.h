// Identifies this machine for the tiling-table fallback chain:
// exact machine id, then ISA family, then "default".
#pragma once
#include <string>

namespace actgrad {

// "<vendor>-<family>-<model>" in lower case, e.g. "genuineintel-6-143".
std::string MachineId();
// "x86-avx512", "x86-avx2", "x86-sse4", "arm-sve", "arm-neon" or "generic".
std::string IsaFamily();
// The CPU's marketing name ("Intel(R) Xeon(R) Processor"), "" if unknown.
std::string CpuModelName();

}  // namespace actgrad
