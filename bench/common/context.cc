// The JSON context of a run (benchmark::AddCustomContext): what was measured,
// on what, with what.
#include <hwy/targets.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include "actgrad_bench_git.h"  // ACTGRAD_BENCH_GIT_COMMIT, generated at build time
#include "common/bench_common.h"

#ifndef ACTGRAD_BENCH_BUILD_TYPE
#define ACTGRAD_BENCH_BUILD_TYPE "unknown"
#endif
#ifndef ACTGRAD_BENCH_CXX_FLAGS
#define ACTGRAD_BENCH_CXX_FLAGS ""
#endif

namespace actgrad::bench {
namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// First value of `key` in /proc/cpuinfo ("" if absent).
std::string CpuInfoField(const std::string& key) {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    if (Trim(line.substr(0, colon)) == key) return Trim(line.substr(colon + 1));
  }
  return "";
}

}  // namespace

std::string CpuModel() {
  std::string m = CpuInfoField("model name");
  if (m.empty()) m = CpuInfoField("Model");      // some Arm kernels
  if (m.empty()) m = CpuInfoField("Processor");
  return m.empty() ? "unknown" : m;
}

std::string MachineId() {
  std::string vendor = CpuInfoField("vendor_id");
  std::string family = CpuInfoField("cpu family");
  std::string model = CpuInfoField("model");
  if (vendor.empty()) {  // Arm: implementer / architecture / part
    vendor = CpuInfoField("CPU implementer");
    family = CpuInfoField("CPU architecture");
    model = CpuInfoField("CPU part");
  }
  if (vendor.empty()) return "unknown";
  return Lower(vendor + "-" + family + "-" + model);
}

std::string HwyTargets() {
  std::string out;
  const int64_t supported = hwy::SupportedTargets();
  for (int bit = 0; bit < 63; ++bit) {
    const int64_t t = int64_t{1} << bit;
    if ((supported & t) == 0) continue;
    if (!out.empty()) out += ",";
    out += Lower(hwy::TargetName(t));
  }
  return out;
}

std::string CompilerId() {
#if defined(__clang__)
  return "Clang " + std::to_string(__clang_major__) + "." + std::to_string(__clang_minor__) + "." +
         std::to_string(__clang_patchlevel__);
#elif defined(__GNUC__)
  return "GNU " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) + "." +
         std::to_string(__GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

void AddContext(const ContextInfo& info) {
  benchmark::AddCustomContext("actgrad_cpu_model", CpuModel());
  benchmark::AddCustomContext("actgrad_machine_id", MachineId());
  benchmark::AddCustomContext("actgrad_isa_targets", HwyTargets());
  benchmark::AddCustomContext("actgrad_compiler", CompilerId());
  benchmark::AddCustomContext("actgrad_build_type", ACTGRAD_BENCH_BUILD_TYPE);
  benchmark::AddCustomContext("actgrad_git_commit", ACTGRAD_BENCH_GIT_COMMIT);
  benchmark::AddCustomContext("actgrad_tiling_table", info.tiling_table.empty() ? "none" : info.tiling_table);
  benchmark::AddCustomContext("actgrad_tiling_table_freshness", info.tiling_table_freshness);
  // Beyond the conventions: how to read the figures.
  benchmark::AddCustomContext("actgrad_cxx_flags", ACTGRAD_BENCH_CXX_FLAGS);
  benchmark::AddCustomContext("actgrad_variant_targets", info.variant_targets.empty() ? "none" : info.variant_targets);
  benchmark::AddCustomContext("actgrad_peers", info.peers.empty() ? "none" : info.peers);
  benchmark::AddCustomContext("actgrad_binary", info.binary);
  benchmark::AddCustomContext("actgrad_max_threads", std::to_string(ThreadsAtStart()));
  benchmark::AddCustomContext("actgrad_placements", PlacementsText());
  benchmark::AddCustomContext("actgrad_stream_isa", StreamIsa(false) + " / " + StreamIsa(true));
  benchmark::AddCustomContext(
      "actgrad_limit_method",
      "pct_of_bandwidth = 100 * bytes_per_second / limit(n, threads); limit = max(stream_plain, stream_nt) "
      "bytes/s (2 reads + 1 write of n f32), each the median of 7 samples, measured once per (n, threads) "
      "in this run; for threads > 1 the best over thread counts <= threads; rates are against wall-clock time");
}

}  // namespace actgrad::bench
