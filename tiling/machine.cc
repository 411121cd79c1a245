#include "tiling/machine.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#endif

namespace actgrad {

std::string MachineId() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  __cpuid(0, a, b, c, d);
  char vendor[13];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  vendor[12] = 0;
  __cpuid(1, a, b, c, d);
  unsigned family = (a >> 8) & 0xF, model = (a >> 4) & 0xF;
  if (family == 0xF) family += (a >> 20) & 0xFF;
  if (family == 0x6 || family >= 0xF) model |= ((a >> 16) & 0xF) << 4;
  std::string v = vendor;
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
  return v + "-" + std::to_string(family) + "-" + std::to_string(model);
#else
  std::ifstream in("/proc/cpuinfo");
  std::string line, impl = "0", part = "0";
  while (std::getline(in, line)) {
    auto val = [&] { return line.substr(line.find(':') + 2); };
    if (line.rfind("CPU implementer", 0) == 0) impl = val();
    if (line.rfind("CPU part", 0) == 0) part = val();
  }
  return "arm-" + impl + "-" + part;
#endif
}

std::string IsaFamily() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) return "x86-avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "x86-avx2";
  if (__builtin_cpu_supports("sse4.2")) return "x86-sse4";
  return "generic";
#elif defined(__aarch64__)
  // The kernel's hardware capabilities (what Highway's dispatch reads), not
  // /proc/cpuinfo: under QEMU user emulation that file is the host's.
#ifndef HWCAP_SVE
#define HWCAP_SVE (1UL << 22)
#endif
  return (getauxval(AT_HWCAP) & HWCAP_SVE) ? "arm-sve" : "arm-neon";
#else
  return "generic";
#endif
}

std::string CpuModelNameIn(const std::string& cpuinfo) {
  std::istringstream in(cpuinfo);
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (line.rfind("model name", 0) != 0 || colon == std::string::npos) continue;
    const size_t value = line.find_first_not_of(" \t", colon + 1);  // "model name\t:" alone has none
    return value == std::string::npos ? "" : line.substr(value);
  }
  return "";
}

std::vector<std::string> CpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::vector<std::string> flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) {
      std::istringstream ss(line.substr(line.find(':') + 1));
      for (std::string f; ss >> f;) flags.push_back(f);
      break;
    }
  return flags;
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  return CpuModelNameIn(text.str());
}

}  // namespace actgrad
