// Identifies this machine for the tiling-table fallback chain:
// exact machine id, then ISA family, then "default".
#pragma once
#include <string>
#include <vector>

namespace actgrad {

// "<vendor>-<family>-<model>" in lower case, e.g. "genuineintel-6-143".
std::string MachineId();
// "x86-avx512", "x86-avx2", "x86-sse4", "arm-sve", "arm-neon" or "generic".
std::string IsaFamily();
// The CPU's marketing name ("Intel(R) Xeon(R) Processor"), "" if unknown:
// CpuModelNameIn of /proc/cpuinfo.
std::string CpuModelName();
// The first CPU's flags (x86 "flags") or features (Arm "Features") as
// /proc/cpuinfo lists them; empty where it lists none.
std::vector<std::string> CpuFlags();
// The first "model name" value of a /proc/cpuinfo text, "" if it has none
// (most arm64 kernels write none).
std::string CpuModelNameIn(const std::string& cpuinfo);

}  // namespace actgrad
