#include "tools/tune/topology.h"

#include <sched.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

namespace actgrad::tune {

namespace {

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// The largest group's size and the number of groups of `key` over `cpus`.
std::pair<int, int> Groups(const std::vector<int>& cpus, const std::function<std::string(int)>& key) {
  std::map<std::string, int> count;
  for (int c : cpus) ++count[key(c)];
  int most = 0;
  for (const auto& [k, n] : count) most = std::max(most, n);
  return {int(count.size()), most};
}

}  // namespace

std::vector<int> ParseCpuList(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    int a = 0, b = 0;
    char dash = 0;
    std::istringstream p(part);
    if (!(p >> a) || a < 0) continue;
    if (p >> dash) {
      if (dash != '-' || !(p >> b) || b < a || b - a > 65536) continue;
    } else {
      b = a;
    }
    for (int c = a; c <= b; ++c) out.push_back(c);
  }
  return out;
}

nlohmann::json Topology::ToJson() const {
  return {{"cpus", cpus}, {"sockets", sockets}, {"cpus_per_socket", cpus_per_socket},
          {"llc_domains", llc_domains}, {"cpus_per_llc", cpus_per_llc}};
}

Topology ReadTopology(const std::string& root, const std::vector<int>& allowed) {
  Topology t;
  if (allowed.empty()) return t;
  t.cpus = int(allowed.size());
  const auto dir = [&](int c) { return root + "/cpu" + std::to_string(c); };
  std::tie(t.sockets, t.cpus_per_socket) = Groups(allowed, [&](int c) {
    const std::string id = ReadLine(dir(c) + "/topology/physical_package_id");
    return id.empty() ? std::string("0") : id;
  });
  // The last-level cache: the highest cache index of a CPU; its
  // shared_cpu_list names the domain.
  std::tie(t.llc_domains, t.cpus_per_llc) = Groups(allowed, [&](int c) {
    std::string shared;
    for (int i = 0; i < 8; ++i) {
      const std::string s = ReadLine(dir(c) + "/cache/index" + std::to_string(i) + "/shared_cpu_list");
      if (!s.empty()) shared = s;
    }
    return shared.empty() ? std::string("all") : shared;
  });
  return t;
}

Topology ThisTopology() {
  std::vector<int> allowed;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) allowed.push_back(c);
  return ReadTopology("/sys/devices/system/cpu", allowed);
}

}  // namespace actgrad::tune
