// The fallback chain (tiling/fallback.h) on fake machines: which compiled-in
// table a machine without its own gets, by vendor, family, model and facts.
#include "tiling/fallback.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "variants/cache.h"

namespace actgrad {
namespace {

MachineFacts Facts(const std::string& id, const std::string& isa, std::vector<std::string> features, uint64_t l2,
                   uint64_t llc, long cores) {
  MachineFacts f;
  ParseMachineId(id, &f);
  f.isa_family = isa;
  f.features = VectorFeatures(features);
  f.l2 = l2, f.llc = llc, f.cores = cores;
  return f;
}

constexpr uint64_t kMiB = uint64_t(1) << 20;
const std::vector<std::string> kZen4 = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16"};
const std::vector<std::string> kSpr = {"avx2",     "fma",         "f16c",        "avx512f", "avx512bw",
                                       "avx512vl", "avx512_bf16", "avx512_fp16", "amx_bf16"};

// The committed tables' shapes: two AMD, one Intel, the default.
std::vector<TableCandidate> Tables() {
  return {{Facts("authenticamd-25-17", "x86-avx512", kZen4, 1 * kMiB, 32 * kMiB, 2), 891},
          {Facts("genuineintel-6-143", "x86-avx512", kSpr, 2 * kMiB, 105 * kMiB, 2), 459},
          {Facts("authenticamd-25-1", "x86-avx2", {"avx2", "fma", "f16c"}, kMiB / 2, 32 * kMiB, 2), 999},
          {Facts("default", "", {}, 0, 0, 0), 0}};
}

TEST(Fallback, ParsesMachineIds) {
  MachineFacts f;
  ParseMachineId("genuineintel-6-167", &f);
  EXPECT_EQ(f.vendor, "genuineintel");
  EXPECT_EQ(f.family, 6);
  EXPECT_EQ(f.model, 167);
  ParseMachineId("arm-0x41-0xd0c", &f);
  EXPECT_EQ(f.vendor, "arm");
  EXPECT_EQ(f.family, 0x41);
  EXPECT_EQ(f.model, 0xd0c);
  for (const char* bad : {"no-such-machine", "x", "", "a-6", "a--7", "a-6-7x", "a-6--7"}) {
    ParseMachineId(bad, &f);
    EXPECT_EQ(f.id, bad);
    EXPECT_TRUE(f.family == -1 || f.model == -1) << bad;
  }
}

TEST(Fallback, ExactIdFirst) {
  const auto t = Tables();
  const TablePick p = PickTable(Facts("authenticamd-25-1", "x86-avx512", kSpr, 2 * kMiB, 0, 64), t);
  EXPECT_EQ(p.index, 2);
  EXPECT_EQ(p.reason, "exact machine id");
}

// An Intel AVX-512 machine without a table takes Intel's over AMD's, though
// AMD's has more entries (the choice this fallback replaced).
TEST(Fallback, SameVendorAndFamilyNearestModel) {
  auto t = Tables();
  const MachineFacts me = Facts("genuineintel-6-167", "x86-avx512", kSpr, 2 * kMiB, 480 * kMiB, 2);
  TablePick p = PickTable(me, t);
  EXPECT_EQ(t[size_t(p.index)].facts.id, "genuineintel-6-143");
  EXPECT_EQ(p.reason, "same vendor and family, nearest model");
  // Of two Intel tables, the nearer model; at equal distance the one with more entries.
  t.push_back({Facts("genuineintel-6-170", "x86-avx512", kSpr, 2 * kMiB, 105 * kMiB, 2), 10});
  EXPECT_EQ(t[size_t(PickTable(me, t).index)].facts.id, "genuineintel-6-170");
  t.back() = {Facts("genuineintel-6-191", "x86-avx512", kSpr, 2 * kMiB, 105 * kMiB, 2), 10};  // |191 - 167| = |143 - 167|
  EXPECT_EQ(t[size_t(PickTable(me, t).index)].facts.id, "genuineintel-6-143");
  t.back().runnable = 600;
  EXPECT_EQ(t[size_t(PickTable(me, t).index)].facts.id, "genuineintel-6-191");
}

// A vendor's table of another ISA family, or with nothing this CPU can run, is passed over.
TEST(Fallback, SiblingMustShareTheIsaFamilyAndRunSomething) {
  auto t = Tables();
  const MachineFacts avx2_intel = Facts("genuineintel-6-85", "x86-avx2", {"avx2", "fma", "f16c"}, kMiB, 32 * kMiB, 2);
  TablePick p = PickTable(avx2_intel, t);
  EXPECT_EQ(t[size_t(p.index)].facts.id, "authenticamd-25-1");
  EXPECT_EQ(p.reason, "nearest machine facts in ISA family x86-avx2");
  t[1].runnable = 0;
  p = PickTable(Facts("genuineintel-6-167", "x86-avx512", kSpr, 2 * kMiB, 480 * kMiB, 2), t);
  EXPECT_EQ(t[size_t(p.index)].facts.id, "authenticamd-25-17");
}

// Another vendor: the table of the ISA family whose facts are nearest.
TEST(Fallback, NearestFactsWithinTheIsaFamily) {
  auto t = Tables();
  t.push_back({Facts("hygongenuine-24-2", "x86-avx512", {"avx2", "fma", "f16c", "avx512f"}, kMiB / 2, 64 * kMiB, 64), 900});
  // An AMD-like new vendor with AVX512-FP16 and 2 MiB of L2: Intel's facts are nearer.
  TablePick p = PickTable(Facts("centaurhauls-7-1", "x86-avx512", kSpr, 2 * kMiB, 100 * kMiB, 2), t);
  EXPECT_EQ(t[size_t(p.index)].facts.id, "genuineintel-6-143");
  EXPECT_EQ(p.reason, "nearest machine facts in ISA family x86-avx512");
  // Without BF16 or FP16, 512 KiB of L2 and many cores: the new vendor's own kind.
  p = PickTable(Facts("centaurhauls-7-1", "x86-avx512", {"avx2", "fma", "f16c", "avx512f"}, kMiB / 2, 64 * kMiB, 64), t);
  EXPECT_EQ(t[size_t(p.index)].facts.id, "hygongenuine-24-2");
  EXPECT_LT(FactsDistance(t[4].facts, t[4].facts), 1e-12);
}

TEST(Fallback, DefaultWhenNothingFits) {
  const auto t = Tables();
  TablePick p = PickTable(Facts("arm-0x41-0xd0c", "arm-neon", {"asimd"}, kMiB, 32 * kMiB, 64), t);
  EXPECT_EQ(p.index, 3);
  EXPECT_EQ(p.reason, "portable default");
  EXPECT_EQ(PickTable(Facts("x", "", {}, 0, 0, 0), {}).index, -1);
}

// A hidden id is never picked, exact or not (a machine posing as new).
TEST(Fallback, HiddenTablesAreNeverPicked) {
  const auto t = Tables();
  const MachineFacts me = Facts("genuineintel-6-143", "x86-avx512", kSpr, 2 * kMiB, 105 * kMiB, 2);
  EXPECT_EQ(PickTable(me, t).reason, "exact machine id");
  const TablePick p = PickTable(me, t, {"genuineintel-6-143"});
  EXPECT_EQ(t[size_t(p.index)].facts.id, "authenticamd-25-17");
  EXPECT_EQ(p.reason, "nearest machine facts in ISA family x86-avx512");
}

// The chain's order, for the series the first table lacks: each next table
// is the pick with the earlier ones hidden; the default never fills.
TEST(Fallback, RankTablesFollowsTheChain) {
  const auto t = Tables();
  const MachineFacts me = Facts("genuineintel-6-167", "x86-avx512", kSpr, 2 * kMiB, 480 * kMiB, 2);
  const auto ranked = RankTables(me, t);
  ASSERT_EQ(ranked.size(), 2u);  // Intel, then AMD of the family; not the AVX2 table, not the default
  EXPECT_EQ(t[size_t(ranked[0].index)].facts.id, "genuineintel-6-143");
  EXPECT_EQ(ranked[0].reason, "same vendor and family, nearest model");
  EXPECT_EQ(t[size_t(ranked[1].index)].facts.id, "authenticamd-25-17");
  EXPECT_EQ(ranked[1].reason, "nearest machine facts in ISA family x86-avx512");
  EXPECT_TRUE(RankTables(Facts("arm-0x41-0xd0c", "arm-neon", {"asimd"}, kMiB, 32 * kMiB, 64), t).empty());
}

TEST(Fallback, VectorFeaturesKeepsOnlyTheListedFlagsInOrder) {
  EXPECT_EQ(VectorFeatures({"fpu", "avx512_fp16", "sse", "avx2", "sve"}),
            (std::vector<std::string>{"avx2", "avx512_fp16", "sve"}));
}

}  // namespace
}  // namespace actgrad

namespace actgrad {
namespace {

namespace fs = std::filesystem;

// The facts the chain and the store rules read from /sys.
TEST(CacheFacts, CountsCpuLists) {
  EXPECT_EQ(CountCpuList("0-1"), 2);
  EXPECT_EQ(CountCpuList("0-3,8,10-11\n"), 7);
  EXPECT_EQ(CountCpuList("5"), 1);
  for (const char* bad : {"", "x", "3-1", "0-", "-2", "0,,1", "0 1", "1-2a"}) EXPECT_EQ(CountCpuList(bad), 0) << bad;
}

TEST(CacheFacts, ReadsSharedCpuLists) {
  const fs::path dir = fs::temp_directory_path() / ("actgrad_cache_facts_" + std::to_string(getpid()));
  fs::remove_all(dir);
  const auto level = [&](int i, const char* lvl, const char* type, const char* size, const char* shared) {
    const fs::path d = dir / ("index" + std::to_string(i));
    fs::create_directories(d);
    std::ofstream(d / "level") << lvl << "\n";
    std::ofstream(d / "type") << type << "\n";
    std::ofstream(d / "size") << size << "\n";
    if (shared) std::ofstream(d / "shared_cpu_list") << shared << "\n";
  };
  level(0, "2", "Unified", "1024K", "0-1");
  level(1, "3", "Unified", "32768K", "0-7");
  level(2, "3", "Unified", "16384K", nullptr);
  const auto levels = ReadCacheLevels(dir.string());
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].shared_cpus, 2);
  EXPECT_EQ(levels[1].bytes, size_t(32) << 20);
  EXPECT_EQ(levels[1].shared_cpus, 8);
  EXPECT_EQ(levels[2].shared_cpus, 0);
  fs::remove_all(dir);
  EXPECT_GT(LastLevelCachePartBytes(), 0u);
  EXPECT_LE(LastLevelCachePartBytes(), LastLevelCacheBytes());
}

}  // namespace
}  // namespace actgrad
