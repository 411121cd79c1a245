// What a measurement depends on besides the search settings: the build (compiler, flags, build type, Highway), the kernels (the
// variant list, the library's commit), the environment that changes kernels
// or threads (ACTGRAD_*, OMP_*, GOMP_*, KMP_*, HWY_*), the cores the process
// may run on (sched_getaffinity) and the machine id. The log header and the
// table's provenance carry it ("measurement_key"); a resume against a log
// whose key differs moves the old log aside and starts fresh
// (MeasurementLog::Open), and `actgrad-tune merge` refuses shards whose keys
// differ. docs/tuning.md "Measurement key".
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace actgrad::tune {

struct MeasurementKey {
  std::string compiler;    // "GNU 13.2.0" (the tuner's and the library's compiler: one build)
  std::string build_type;  // CMAKE_BUILD_TYPE
  std::string cxx_flags;   // CMAKE_CXX_FLAGS and CMAKE_CXX_FLAGS_<BUILD_TYPE>, ACTGRAD_SANITIZE
  std::string highway;     // the Highway version the kernels were built with
  std::string variants;    // VariantListHash(): names and `supported` of Variants(), in order
  std::string git_commit;  // the library's commit (main.cc GitCommit: `git describe --dirty`)
  std::map<std::string, std::string> env;  // the set variables of IsKeyEnvVar, name -> value
  std::string affinity;    // what the process may run on: "2 cpus, 1 sockets, 1 llc" (AffinityString)
  std::string machine_id;  // tiling/machine.h

  // This process's key; git_commit and machine_id come from the caller (the
  // tool's provenance and the backend).
  static MeasurementKey Current(const std::string& git_commit, const std::string& machine_id);

  // The fields and "hash" (Hash()).
  nlohmann::json ToJson() const;
  // Reads ToJson's output ("hash" is not trusted: it is recomputed).
  static bool FromJson(const nlohmann::json& j, MeasurementKey* out, std::string* why = nullptr);
  // 12 hex digits: FNV-1a 64 over the fields' canonical JSON (sorted keys), so
  // equal keys hash alike in every build and run.
  std::string Hash() const;

  bool operator==(const MeasurementKey&) const = default;
};

// Environment variables that change what the kernels do or how many threads
// run them: ACTGRAD_* (ACTGRAD_SPIN_US, ACTGRAD_TILING_TABLE, ...), OMP_*,
// GOMP_*, KMP_*, HWY_*.
bool IsKeyEnvVar(const std::string& name);
// FNV-1a 64 over "name:supported\n" of every variant, in list order; 12 hex digits.
std::string VariantListHash();
// The affinity mask as counts (tools/tune/topology.h): "<cpus> cpus, <sockets>
// sockets, <llc domains> llc". Counts, not CPU numbers: a tuner pinned to cores
// 4-7 measures what one pinned to 0-3 of the same machine does.
std::string AffinityString();

// The fields that differ, old -> new, in a fixed order, e.g.
// {"git_commit 1234 -> 5678", "env OMP_NUM_THREADS unset -> 1"}. Works on
// ToJson's output, so that a key of another tool version (other fields, or
// none: null) compares too: a field absent on one side reads "absent".
std::vector<std::string> KeyDifferences(const nlohmann::json& old_key, const nlohmann::json& new_key);
std::vector<std::string> KeyDifferences(const MeasurementKey& old_key, const MeasurementKey& new_key);
// KeyDifferences joined with ", ".
std::string JoinDifferences(const std::vector<std::string>& diffs);

}  // namespace actgrad::tune
