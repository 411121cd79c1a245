// The tuner's view of where its threads run: sockets and last-level-cache
// domains of the CPUs it may use, read from a /sys tree.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tools/tune/topology.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;

// A /sys/devices/system/cpu tree: `sockets` x `per_socket` CPUs, an L3 per
// `per_llc` consecutive CPUs.
std::string FakeSys(int sockets, int per_socket, int per_llc) {
  const fs::path root = fs::temp_directory_path() / ("actgrad_topo_" + std::to_string(getpid()));
  fs::remove_all(root);
  for (int c = 0; c < sockets * per_socket; ++c) {
    const fs::path cpu = root / ("cpu" + std::to_string(c));
    fs::create_directories(cpu / "topology");
    fs::create_directories(cpu / "cache/index0");
    fs::create_directories(cpu / "cache/index3");
    std::ofstream(cpu / "topology/physical_package_id") << c / per_socket << "\n";
    std::ofstream(cpu / "cache/index0/shared_cpu_list") << c << "\n";
    const int first = c / per_llc * per_llc;
    std::ofstream(cpu / "cache/index3/shared_cpu_list") << first << "-" << first + per_llc - 1 << "\n";
  }
  return root.string();
}

TEST(Topology, SocketsAndCacheDomainsOfTheAllowedCpus) {
  const std::string root = FakeSys(2, 8, 4);  // 2 sockets, 2 CCX of 4 each
  Topology all = ReadTopology(root, ParseCpuList("0-15"));
  EXPECT_EQ(all.cpus, 16);
  EXPECT_EQ(all.sockets, 2);
  EXPECT_EQ(all.cpus_per_socket, 8);
  EXPECT_EQ(all.llc_domains, 4);
  EXPECT_EQ(all.cpus_per_llc, 4);
  // An affinity mask (taskset -c 0-2,8): only those CPUs count.
  Topology some = ReadTopology(root, ParseCpuList("0-2,8"));
  EXPECT_EQ(some.cpus, 4);
  EXPECT_EQ(some.sockets, 2);
  EXPECT_EQ(some.cpus_per_socket, 3);
  EXPECT_EQ(some.llc_domains, 2);
  EXPECT_EQ(some.ToJson()["cpus_per_llc"], 3);
  fs::remove_all(root);
}

TEST(Topology, MissingFilesMeanOneSocketAndOneCache) {
  const Topology t = ReadTopology("/nonexistent-actgrad", {0, 1, 2});
  EXPECT_EQ(t.cpus, 3);
  EXPECT_EQ(t.sockets, 1);
  EXPECT_EQ(t.cpus_per_socket, 3);
  EXPECT_EQ(t.llc_domains, 1);
}

TEST(Topology, CpuListsAsTheKernelWritesThem) {
  EXPECT_EQ(ParseCpuList("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ParseCpuList("5"), (std::vector<int>{5}));
  EXPECT_EQ(ParseCpuList(""), std::vector<int>{});
  EXPECT_EQ(ParseCpuList("3-1,x,2"), (std::vector<int>{2}));  // malformed parts skipped
  // This process: at least one CPU, and never more than the machine has.
  const Topology me = ThisTopology();
  EXPECT_GE(me.cpus, 1);
  EXPECT_LE(me.cpus, int(sysconf(_SC_NPROCESSORS_ONLN)));
}

}  // namespace
}  // namespace actgrad::tune
