// Where the tuner's threads can run: the CPUs of its affinity mask and how
// they group into sockets and last-level-cache domains (an AMD CCX, an Intel
// sub-NUMA cluster), read from /sys. The tuner offers thread counts beyond one
// socket only for sizes whose operands overflow that socket's last-level
// cache (CpuBackend::Candidates), and the table records it (provenance).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace actgrad::tune {

struct Topology {
  int cpus = 1;            // CPUs this process may run on (sched_getaffinity)
  int sockets = 1;         // packages those CPUs are on
  int cpus_per_socket = 1; // allowed CPUs of the most populated socket
  int llc_domains = 1;     // distinct last-level caches those CPUs share
  int cpus_per_llc = 1;    // allowed CPUs of the most populated one
  nlohmann::json ToJson() const;
};

// Reads `root` (/sys/devices/system/cpu) for the CPUs in `allowed`
// (missing files: one socket, one cache domain).
Topology ReadTopology(const std::string& root, const std::vector<int>& allowed);
// This process: its affinity mask and /sys/devices/system/cpu.
Topology ThisTopology();
// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; malformed parts are skipped.
std::vector<int> ParseCpuList(const std::string& s);

}  // namespace actgrad::tune
