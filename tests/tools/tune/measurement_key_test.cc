// The measurement key: equality and hash, the fields that
// differ, and a resume against a log of another key: the old log is kept
// aside (never overwritten) and the run starts fresh; the same key replays.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/tools/tune/temp_files.h"
#include "tools/tune/log.h"
#include "tools/tune/measurement_key.h"
#include "tools/tune/search.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using testing::TempPath;

MeasurementKey Sample() {
  MeasurementKey k;
  k.compiler = "GNU 12.2.0";
  k.build_type = "Release";
  k.cxx_flags = "-O3 -DNDEBUG";
  k.highway = "1.0.3";
  k.variants = "0123456789ab";
  k.git_commit = "1234";
  k.env = {{"ACTGRAD_SPIN_US", "50"}};
  k.affinity = "0-1";
  k.machine_id = "genuineintel-6-143";
  return k;
}

using testing::ReadFile;

// Known values: logs and tables store these hashes, so the hash of a key
// (FNV-1a of its canonical JSON, tools/inputs/hash.h) and the search's seeds
// (HashKey) must never change.
TEST(MeasurementKey, HashesAreKnownValues) {
  EXPECT_EQ(Sample().Hash(), "3c14318ba452");
  EXPECT_EQ(HashKey(0, ""), 0x4ea0537ff367da6bull);
  EXPECT_EQ(HashKey(7, "selu_bwd/f32/contig/16#confirm"), 0xdeda540ad2a4e600ull);
}

TEST(MeasurementKey, EqualKeysHashAlikeAndRoundTrip) {
  const MeasurementKey a = Sample(), b = Sample();
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.Hash(), b.Hash());
  EXPECT_EQ(a.Hash().size(), 12u);
  EXPECT_TRUE(KeyDifferences(a, b).empty());
  MeasurementKey c;
  std::string why;
  ASSERT_TRUE(MeasurementKey::FromJson(json::parse(a.ToJson().dump()), &c, &why)) << why;
  EXPECT_EQ(a, c);
  EXPECT_EQ(a.ToJson()["hash"], a.Hash());
  EXPECT_FALSE(MeasurementKey::FromJson(json::array(), &c));
}

TEST(MeasurementKey, EveryFieldChangesTheHash) {
  const MeasurementKey a = Sample();
  for (int f = 0; f < 9; ++f) {
    MeasurementKey b = a;
    switch (f) {
      case 0: b.compiler = "Clang 17"; break;
      case 1: b.build_type = "Debug"; break;
      case 2: b.cxx_flags = "-O2"; break;
      case 3: b.highway = "1.1.0"; break;
      case 4: b.variants = "ba9876543210"; break;
      case 5: b.git_commit = "5678"; break;
      case 6: b.env["OMP_NUM_THREADS"] = "1"; break;
      case 7: b.affinity = "0"; break;
      case 8: b.machine_id = "authenticamd-25-17"; break;
    }
    EXPECT_NE(a, b) << f;
    EXPECT_NE(a.Hash(), b.Hash()) << f;
    EXPECT_EQ(KeyDifferences(a, b).size(), 1u) << f;
  }
}

TEST(MeasurementKey, ListsTheFieldsThatDiffer) {
  const MeasurementKey a = Sample();
  MeasurementKey b = a;
  b.git_commit = "5678";
  b.env["OMP_NUM_THREADS"] = "1";
  b.env.erase("ACTGRAD_SPIN_US");
  const auto d = KeyDifferences(a, b);
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0], "git_commit 1234 -> 5678");
  EXPECT_EQ(d[1], "env ACTGRAD_SPIN_US 50 -> unset");
  EXPECT_EQ(d[2], "env OMP_NUM_THREADS unset -> 1");
  EXPECT_EQ(JoinDifferences(d), "git_commit 1234 -> 5678, env ACTGRAD_SPIN_US 50 -> unset, env OMP_NUM_THREADS unset -> 1");
  // A key of another tool version (a field this one does not know), and none.
  json other = a.ToJson();
  other["gpu"] = "none";
  EXPECT_EQ(KeyDifferences(other, a.ToJson()), std::vector<std::string>{"gpu none -> absent"});
  EXPECT_EQ(KeyDifferences(json(), a.ToJson()).size(), 1u);
}

TEST(MeasurementKey, CurrentReadsTheEnvironmentThatChangesKernels) {
  EXPECT_TRUE(IsKeyEnvVar("ACTGRAD_SPIN_US"));
  EXPECT_TRUE(IsKeyEnvVar("ACTGRAD_TILING_TABLE"));
  EXPECT_TRUE(IsKeyEnvVar("OMP_NUM_THREADS"));
  EXPECT_TRUE(IsKeyEnvVar("OMP_PROC_BIND"));
  EXPECT_TRUE(IsKeyEnvVar("GOMP_SPINCOUNT"));
  EXPECT_TRUE(IsKeyEnvVar("HWY_ANYTHING"));
  EXPECT_FALSE(IsKeyEnvVar("HOME"));
  EXPECT_FALSE(IsKeyEnvVar("XOMP_NUM_THREADS"));
  const char* old = std::getenv("GOMP_SPINCOUNT");
  const std::string saved = old ? old : "";
  ::setenv("GOMP_SPINCOUNT", "12345", 1);
  const MeasurementKey a = MeasurementKey::Current("abc", "m");
  ::unsetenv("GOMP_SPINCOUNT");
  const MeasurementKey b = MeasurementKey::Current("abc", "m");
  if (old) ::setenv("GOMP_SPINCOUNT", saved.c_str(), 1);
  EXPECT_EQ(a.env.at("GOMP_SPINCOUNT"), "12345");
  EXPECT_EQ(b.env.count("GOMP_SPINCOUNT"), 0u);
  EXPECT_EQ(KeyDifferences(a, b), std::vector<std::string>{"env GOMP_SPINCOUNT 12345 -> unset"});
  EXPECT_EQ(a.git_commit, "abc");
  EXPECT_EQ(a.machine_id, "m");
  EXPECT_FALSE(a.affinity.empty());
  EXPECT_EQ(a.variants, VariantListHash());
  EXPECT_FALSE(a.compiler.empty());
  EXPECT_EQ(MeasurementKey::Current("abc", "m").Hash(), b.Hash());  // stable within a process
}

// The key counts the CPUs a process may use, not which: pinned to CPU 0 or
// to CPU 1 of this machine, the same key; one CPU or two, different keys.
TEST(MeasurementKey, AffinityIsACountNotACpuList) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  if (CPU_COUNT(&saved) < 2) GTEST_SKIP() << "needs two CPUs in the affinity mask";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
    if (CPU_ISSET(c, &saved)) cpus.push_back(c);
  auto pinned = [&](std::vector<int> which) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : which) CPU_SET(c, &set);
    EXPECT_EQ(sched_setaffinity(0, sizeof set, &set), 0);
    const std::string s = AffinityString();
    sched_setaffinity(0, sizeof saved, &saved);
    return s;
  };
  EXPECT_EQ(pinned({cpus[0]}), pinned({cpus[1]}));
  EXPECT_NE(pinned({cpus[0]}), pinned({cpus[0], cpus[1]}));
  EXPECT_EQ(pinned({cpus[0], cpus[1]}).rfind("2 cpus", 0), 0u);
}

LogRecord Rec(const std::string& cell, double ns) {
  LogRecord r;
  r.cell = cell;
  r.cand = "v0|t1|c0|s0";
  r.ns = {ns};
  r.sec = 0.001;
  return r;
}

TEST(MeasurementKeyLog, ChangedKeyStartsFreshAndKeepsTheOldLog) {
  const std::string path = TempPath("changed.log.jsonl");
  const json config = {{"search_version", 9}};
  const MeasurementKey a = Sample();
  MeasurementKey b = a;
  b.git_commit = "5678";
  b.env["OMP_NUM_THREADS"] = "1";
  std::string err;
  {
    MeasurementLog log;
    ASSERT_TRUE(log.Open(path, config, false, &err, MeasurementLog::SyncMode::kEveryLine, a.ToJson())) << err;
    EXPECT_TRUE(log.stale_note().empty());
    log.Append(Rec("c1", 100));
    log.Append(Rec("c2", 200));
  }
  const std::string old_text = ReadFile(path);
  // A file already at the name the old log would take is not overwritten.
  const std::string taken = path + ".stale-" + a.Hash();
  { std::ofstream(taken) << "someone else's file\n"; }
  {
    MeasurementLog log;
    ASSERT_TRUE(log.Open(path, config, false, &err, MeasurementLog::SyncMode::kEveryLine, b.ToJson())) << err;
    EXPECT_EQ(log.loaded(), 0u);  // nothing mixed in
    EXPECT_EQ(log.Find("c1", "v0|t1|c0|s0", 0, 0), nullptr);
    const std::string aside = taken + "-2";
    EXPECT_EQ(log.stale_note(), "measurement key changed (git_commit 1234 -> 5678, env OMP_NUM_THREADS unset -> 1): "
                                "the old log is kept as " + aside + "; starting fresh");
    EXPECT_EQ(ReadFile(aside), old_text);
    EXPECT_EQ(ReadFile(taken), "someone else's file\n");
    log.Append(Rec("c1", 300));
  }
  // The new log's header carries the new key; a resume with it replays.
  const std::string text = ReadFile(path);
  EXPECT_NE(text.find("\"measurement_key\""), std::string::npos);
  EXPECT_NE(text.find(b.Hash()), std::string::npos);
  MeasurementLog log;
  ASSERT_TRUE(log.Open(path, config, false, &err, MeasurementLog::SyncMode::kEveryLine, b.ToJson())) << err;
  EXPECT_TRUE(log.stale_note().empty());
  EXPECT_EQ(log.loaded(), 1u);
  ASSERT_NE(log.Find("c1", "v0|t1|c0|s0", 0, 0), nullptr);
  EXPECT_EQ(log.Find("c1", "v0|t1|c0|s0", 0, 0)->ns.at(0), 300);
}

TEST(MeasurementKeyLog, SameKeyReplays) {
  const std::string path = TempPath("same.log.jsonl");
  const json config = {{"search_version", 9}};
  const MeasurementKey a = Sample();
  std::string err;
  {
    MeasurementLog log;
    ASSERT_TRUE(log.Open(path, config, false, &err, MeasurementLog::SyncMode::kEveryLine, a.ToJson())) << err;
    log.Append(Rec("c1", 100));
  }
  MeasurementLog log;
  ASSERT_TRUE(log.Open(path, config, false, &err, MeasurementLog::SyncMode::kEveryLine, Sample().ToJson())) << err;
  EXPECT_TRUE(log.stale_note().empty());
  EXPECT_EQ(log.loaded(), 1u);
  EXPECT_FALSE(fs::exists(path + ".stale-" + a.Hash()));
}

TEST(MeasurementKeyLog, LogWithoutKeyIsNotResumedUnderOne) {
  const std::string path = TempPath("nokey.log.jsonl");
  const json config = {{"search_version", 9}};
  std::string err;
  {
    MeasurementLog log;  // a log of a tuner before measurement keys
    ASSERT_TRUE(log.Open(path, config, false, &err, MeasurementLog::SyncMode::kEveryLine)) << err;
    log.Append(Rec("c1", 100));
  }
  MeasurementLog log;
  ASSERT_TRUE(log.Open(path, config, false, &err, MeasurementLog::SyncMode::kEveryLine, Sample().ToJson())) << err;
  EXPECT_EQ(log.loaded(), 0u);
  EXPECT_NE(log.stale_note().find("measurement_key absent -> " + Sample().Hash()), std::string::npos)
      << log.stale_note();
  EXPECT_TRUE(fs::exists(path + ".stale-nokey"));
}

TEST(MeasurementKeyLog, OtherConfigIsStillRefused) {
  const std::string path = TempPath("config.log.jsonl");
  std::string err;
  {
    MeasurementLog log;
    ASSERT_TRUE(log.Open(path, json{{"a", 1}}, false, &err, MeasurementLog::SyncMode::kEveryLine, Sample().ToJson()));
    log.Append(Rec("c1", 100));
  }
  MeasurementKey b = Sample();
  b.git_commit = "5678";
  MeasurementLog log;
  EXPECT_FALSE(log.Open(path, json{{"a", 2}}, false, &err, MeasurementLog::SyncMode::kEveryLine, b.ToJson()));
  EXPECT_NE(err.find("different settings"), std::string::npos) << err;
}

}  // namespace
}  // namespace actgrad::tune
