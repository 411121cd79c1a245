// Tuning a fleet: --shard K/N assigns whole series to
// shards (every series exactly once, deterministically, balanced by weight),
// and `merge` joins the shard tables or refuses them with a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "tests/tools/tune/table_entries.h"
#include "tests/tools/tune/temp_files.h"
#include "tiling/table.h"
#include "tools/tune/measurement_key.h"
#include "tools/tune/shard.h"
#include "variants/variant.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using tables::Entry;
using tables::Layout;
using tables::Table;

using testing::TempPath;

TEST(Shard, ParsesKOverN) {
  int k = 0, n = 0;
  std::string err;
  EXPECT_TRUE(ParseShard("1/1", &k, &n, &err));
  EXPECT_TRUE(ParseShard("3/4", &k, &n, &err));
  EXPECT_EQ(k, 3);
  EXPECT_EQ(n, 4);
  for (const char* bad : {"0/4", "5/4", "1/0", "0/0", "-1/4", "1", "a/b", "1/4/2", "", "/", "1/", "1.5/4", "1/99999"}) {
    EXPECT_FALSE(ParseShard(bad, &k, &n, &err)) << bad;
    EXPECT_NE(err.find("--shard \"" + std::string(bad) + "\""), std::string::npos) << err;
    EXPECT_NE(err.find("1 <= K <= N"), std::string::npos) << err;
  }
}

TEST(Shard, EverySeriesInExactlyOneShardWhole) {
  const TuneConfig cfg = TuneConfig::Defaults(false);
  const std::vector<CellSpec> all = PlanCells(cfg);
  std::set<std::string> series;
  for (const auto& c : all) series.insert(SeriesKey(c.cell));
  ASSERT_EQ(series.size(), 27u);  // the docs' 27 op/dtype/formula/layout groups
  for (int n : {1, 2, 3, 4, 7, 27, 40}) {
    const ShardPlan plan = AssignSeries(all, n);
    ASSERT_EQ(plan.series.size(), size_t(n));
    std::multiset<std::string> seen;
    for (const auto& s : plan.series) seen.insert(s.begin(), s.end());
    EXPECT_EQ(seen.size(), series.size()) << n;
    for (const auto& key : series) EXPECT_EQ(seen.count(key), 1u) << key << " N=" << n;
    // The cells: every cell in exactly one shard, with all of its series.
    size_t cells = 0;
    std::map<std::string, int> shard_of_series;
    for (int k = 1; k <= n; ++k) {
      TuneConfig sharded = cfg;
      sharded.shard_index = k;
      sharded.shard_count = n;
      const auto mine = PlanCells(sharded);
      EXPECT_EQ(mine.size(), ShardCells(all, k, n).size());
      cells += mine.size();
      for (const auto& c : mine) {
        const auto [it, added] = shard_of_series.emplace(SeriesKey(c.cell), k);
        EXPECT_EQ(it->second, k) << "series " << it->first << " split over shards";
      }
    }
    EXPECT_EQ(cells, all.size()) << n;
  }
}

TEST(Shard, AssignmentIsDeterministicAndBalanced) {
  const std::vector<CellSpec> all = PlanCells(TuneConfig::Defaults(false));
  const ShardPlan a = AssignSeries(all, 4), b = AssignSeries(all, 4);
  EXPECT_EQ(a.series, b.series);
  // The input's order does not matter (ties are broken by key).
  std::vector<CellSpec> reversed(all.rbegin(), all.rend());
  EXPECT_EQ(AssignSeries(reversed, 4).series, a.series);
  // LPT: no shard heavier than the lightest plus the heaviest series.
  std::map<std::string, double> w;
  for (const auto& c : all) w[SeriesKey(c.cell)] += c.weight;
  double heaviest = 0;
  for (const auto& [k, v] : w) heaviest = std::max(heaviest, v);
  const auto [lo, hi] = std::minmax_element(a.weight.begin(), a.weight.end());
  EXPECT_LE(*hi - *lo, heaviest);
  EXPECT_GT(*lo, 0);
  // The provenance names the same series; every shard of the run, one plan.
  TuneConfig cfg = TuneConfig::Defaults(false);
  const json p1 = ShardProvenance(cfg, 1, 4), p2 = ShardProvenance(cfg, 2, 4);
  EXPECT_EQ(p1["series"].get<std::vector<std::string>>(), a.series[0]);
  EXPECT_EQ(p1["plan"], p2["plan"]);
  cfg.octaves = {10, 11};
  EXPECT_NE(ShardProvenance(cfg, 1, 4)["plan"], p1["plan"]);
}

// --- merge ---

MeasurementKey Key() {
  MeasurementKey k;
  k.compiler = "GNU 12";
  k.git_commit = "1234";
  k.machine_id = "genuineintel-6-143";
  k.affinity = "0-1";
  return k;
}

using testing::EntryAt;

// Shard k of n: SELU f32 contig (shard 1) or Softshrink f32 contig (shard 2), octaves 10..12.
ShardTable Shard(int k, int n, const MeasurementKey& key = Key()) {
  ShardTable s;
  s.path = "shard" + std::to_string(k) + ".json";
  Table& t = s.table;
  t.machine_id = "genuineintel-6-143";
  const Op op = k == 1 ? Op::kSeluBwd : Op::kSoftshrinkBwd;
  for (int h = 10; h <= 12; ++h) t.entries.push_back(EntryAt(op, DType::kF32, Layout::kContig, h));
  t.provenance = {{"isa_family", "x86_avx3"},
                  {"cores", 2},
                  {"date", "2026-12-0" + std::to_string(k)},
                  {"measurement_key", key.ToJson()},
                  {"shard", {{"index", k}, {"count", n}, {"series", json::array()}, {"plan", "p"}}}};
  return s;
}

bool Merge(std::vector<ShardTable> shards, std::string* err, Table* out = nullptr, bool partial = false) {
  Table t;
  MergeSummary sum;
  return MergeShardTables(shards, partial, out ? out : &t, &sum, err);
}

TEST(ShardMerge, TwoShardsGiveTheEntriesOfBoth) {
  Table t;
  std::string err;
  MergeSummary sum;
  ASSERT_TRUE(MergeShardTables({Shard(2, 2), Shard(1, 2)}, false, &t, &sum, &err)) << err;
  ASSERT_EQ(t.entries.size(), 6u);
  const ShardTable a = Shard(1, 2), b = Shard(2, 2);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.entries[i].op, a.table.entries[i].op);
    EXPECT_EQ(t.entries[i].octave, a.table.entries[i].octave);
    EXPECT_EQ(t.entries[i].choice, a.table.entries[i].choice);
    EXPECT_EQ(t.entries[3 + i].op, b.table.entries[i].op);
    EXPECT_EQ(t.entries[3 + i].choice, b.table.entries[i].choice);
  }
  EXPECT_EQ(t.machine_id, "genuineintel-6-143");
  EXPECT_EQ(sum.merged, (std::vector<int>{1, 2}));
  EXPECT_TRUE(sum.missing.empty());
  // Common fields once, the rest per shard.
  EXPECT_EQ(t.provenance["cores"], 2);
  EXPECT_EQ(t.provenance["measurement_key"]["hash"], Key().Hash());
  EXPECT_FALSE(t.provenance.contains("date"));
  EXPECT_FALSE(t.provenance.contains("shard"));
  ASSERT_EQ(t.provenance["shards"].size(), 2u);
  EXPECT_EQ(t.provenance["shards"][0]["date"], "2026-12-01");
  EXPECT_EQ(t.provenance["shards"][0]["shard"]["index"], 1);
  EXPECT_EQ(t.provenance["shards"][1]["file"], "shard2.json");
  // The merged table validates.
  Table back;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(t).dump(), &back, &err)) << err;
  EXPECT_EQ(back.entries.size(), 6u);
}

TEST(ShardMerge, Refusals) {
  std::string err;
  {
    ShardTable other = Shard(2, 2);
    other.table.machine_id = "authenticamd-25-17";
    EXPECT_FALSE(Merge({Shard(1, 2), other}, &err));
    EXPECT_NE(err.find("was tuned on machine id authenticamd-25-17"), std::string::npos) << err;
  }
  {
    MeasurementKey k = Key();
    k.git_commit = "5678";
    EXPECT_FALSE(Merge({Shard(1, 2), Shard(2, 2, k)}, &err));
    EXPECT_NE(err.find("another measurement key"), std::string::npos) << err;
    EXPECT_NE(err.find("git_commit 1234 -> 5678"), std::string::npos) << err;
  }
  {
    ShardTable other = Shard(2, 2);
    other.table.provenance.erase("measurement_key");
    EXPECT_FALSE(Merge({Shard(1, 2), other}, &err));
    EXPECT_NE(err.find("shard2.json has no provenance.measurement_key"), std::string::npos) << err;
  }
  {
    ShardTable other = Shard(2, 2);
    other.table.backend = "atlas-model";
    EXPECT_FALSE(Merge({Shard(1, 2), other}, &err));
    EXPECT_NE(err.find("backend atlas-model"), std::string::npos) << err;
  }
  {
    ShardTable again = Shard(2, 2);
    again.path = "again.json";
    again.table.entries.clear();
    again.table.entries.push_back(EntryAt(Op::kHardswishBwd, DType::kF32, Layout::kContig, 10));
    EXPECT_FALSE(Merge({Shard(1, 2), Shard(2, 2), again}, &err));
    EXPECT_NE(err.find("again.json and shard2.json are both shard 2/2"), std::string::npos) << err;
  }
  {
    EXPECT_FALSE(Merge({Shard(1, 2), Shard(2, 3)}, &err));
    EXPECT_NE(err.find("shards of one run have the same N"), std::string::npos) << err;
  }
  {
    ShardTable other = Shard(2, 2);
    other.table.provenance["shard"]["plan"] = "q";
    EXPECT_FALSE(Merge({Shard(1, 2), other}, &err));
    EXPECT_NE(err.find("split different selections"), std::string::npos) << err;
  }
  {
    ShardTable overlap = Shard(2, 2);
    overlap.table.entries.push_back(EntryAt(Op::kSeluBwd, DType::kF32, Layout::kContig, 11));
    EXPECT_FALSE(Merge({Shard(1, 2), overlap}, &err));
    EXPECT_NE(err.find("cell selu_bwd/f32/-/contig/o11 is in both shard1.json and shard2.json"), std::string::npos)
        << err;
  }
  {
    ShardTable plain = Shard(2, 2);
    plain.table.provenance.erase("shard");
    EXPECT_FALSE(Merge({Shard(1, 2), plain}, &err));
    EXPECT_NE(err.find("shard2.json is not a shard table"), std::string::npos) << err;
  }
  {
    EXPECT_FALSE(Merge({Shard(1, 3), Shard(2, 3)}, &err));
    EXPECT_NE(err.find("missing shard(s) 3 of 3"), std::string::npos) << err;
    EXPECT_NE(err.find("--allow-partial"), std::string::npos) << err;
    Table t;
    ASSERT_TRUE(Merge({Shard(1, 3), Shard(2, 3)}, &err, &t, /*partial=*/true)) << err;
    EXPECT_EQ(t.entries.size(), 6u);
    EXPECT_EQ(t.provenance["merge"]["missing"], json::array({3}));
  }
  EXPECT_FALSE(Merge({}, &err));
}

TEST(ShardMerge, FilesWriteAValidTableOrNothing) {
  const std::string a = TempPath("a.json"), b = TempPath("b.json"), out = TempPath("m.json");
  std::string err;
  ShardTable s1 = Shard(1, 2), s2 = Shard(2, 2);
  ASSERT_TRUE(tables::SaveTableFile(a, s1.table, &err)) << err;
  ASSERT_TRUE(tables::SaveTableFile(b, s2.table, &err)) << err;
  MergeSummary sum;
  EXPECT_FALSE(MergeShardFiles(out, {a}, false, &sum, &err));
  EXPECT_NE(err.find("missing shard(s) 2 of 2"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));
  ASSERT_TRUE(MergeShardFiles(out, {a, b}, false, &sum, &err)) << err;
  Table t;
  ASSERT_TRUE(tables::LoadTableFile(out, &t, &err)) << err;
  EXPECT_EQ(t.entries.size(), 6u);
  EXPECT_EQ(t.provenance["shards"][0]["file"], a);
  EXPECT_FALSE(MergeShardFiles(a, {a, b}, false, &sum, &err));
  EXPECT_NE(err.find("is also an input"), std::string::npos) << err;
}

}  // namespace
}  // namespace actgrad::tune
