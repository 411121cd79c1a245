// The measurement cache: a log written under other search settings (seed,
// search_version, ...) but the same measurement key and measured part
// (MeasuredPart) is kept read-only beside a new log, and its samples are
// reused per (cell, candidate, placement) before anything is measured; the
// new log holds every sample its run used. A log of another measurement key
// is moved aside as stale; a corrupt cache line is skipped with a message.
// Time is the fake clock's (FakeClock), never the wall clock's.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <tuple>

#include "fake_backend.h"
#include "tools/tune/measurement_key.h"
#include "tools/tune/tuner.h"
#include "tests/tools/tune/log_stats.h"
#include "tests/tools/tune/temp_files.h"

// Its own namespace: the tests are built as one unity file, and the other
// files' helpers have the same names.
namespace actgrad::tune::cache_test {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using testing::FakeBackend;
using testing::FakeClock;
using testing::ReadFile;
using testing::SimulatedCrash;
using testing::TempPath;

constexpr double kSampleSec = 0.001;  // what a fake sample costs on the fake clock

TuneConfig Config(uint64_t seed) {
  TuneConfig c = TuneConfig::Defaults(false);
  c.ops = {Op::kSeluBwd, Op::kGeluBwd};
  c.dtypes = {DType::kF32};
  c.octaves = {10, 16, 20};
  c.screen_keep = 3;   // the fake has 8 variants: screening runs
  c.budget_sec = 1e6;  // the budget never binds
  c.search.seed = seed;
  return c;
}

MeasurementKey Key(const std::string& commit = "1234") {
  MeasurementKey k;
  k.compiler = "GNU 13.2.0";
  k.build_type = "Release";
  k.git_commit = commit;
  k.machine_id = "fake-machine";
  return k;
}

struct TuneRun {
  TuneResult res;
  long calls = 0;  // the fake's Measure calls
  std::string cache_path, cache_note, stale_note;
  size_t cache_available = 0, cache_skipped = 0, loaded = 0;
  std::vector<std::string> problems;
};

// A tuning run on `path` as actgrad-tune's OpenLog opens it (header with the
// backend and machine, the measured part set); `search_version` > 0 replaces
// the config's.
TuneRun Tune(const std::string& path, const TuneConfig& cfg_in, const MeasurementKey& key, int search_version = 0,
         long crash_after = -1) {
  TuneConfig cfg = cfg_in;
  FakeBackend be;
  be.sleep_sec = kSampleSec;
  be.crash_after = crash_after;
  FakeClock clock;
  clock.Use(be, &cfg.search);
  json header = cfg.ToJson();
  header["backend"] = be.Name();
  header["machine_id"] = be.MachineId();
  if (search_version > 0) header["search_version"] = search_version;
  MeasurementLog log;
  log.SetMeasuredPart(MeasuredPart);
  std::string err;
  if (!log.Open(path, header, false, &err, MeasurementLog::SyncMode::kBackground, key.ToJson()))
    throw std::runtime_error(err);
  TuneRun r;
  r.cache_path = log.cache_path();
  r.cache_note = log.cache_note();
  r.stale_note = log.stale_note();
  r.cache_available = log.cache_available();
  r.cache_skipped = log.cache_skipped_lines();
  r.loaded = log.loaded();
  r.problems = log.problems();
  auto progress = Progress::Silent();
  try {
    r.res = RunTuning(be, log, cfg, *progress);
  } catch (const SimulatedCrash&) {
    r.calls = be.calls;
    throw;
  }
  r.calls = be.calls;
  return r;
}

using testing::CountLog;
using testing::LogStats;

void ExpectSameChoices(const tables::Table& a, const tables::Table& b) {
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    EXPECT_EQ(a.entries[i].choice, b.entries[i].choice) << "entry " << i;
    EXPECT_EQ(a.entries[i].one_thread, b.entries[i].one_thread) << "entry " << i;
  }
}

// A finished log of settings A (seed 1) at `path`; returns its run.
TuneRun WriteA(const std::string& path) {
  fs::remove(path);
  TuneRun a = Tune(path, Config(1), Key());
  EXPECT_GT(a.calls, 100);
  EXPECT_EQ(a.res.cached, 0);
  return a;
}

TEST(MeasurementCache, AnotherSeedReusesTheSamplesAndWritesACompleteLog) {
  const std::string path = TempPath("cache_seed.jsonl");
  const TuneRun a = WriteA(path);
  const std::string a_text = ReadFile(path);

  const TuneRun b = Tune(path, Config(2), Key());
  ASSERT_FALSE(b.cache_path.empty()) << "the old log becomes the cache";
  EXPECT_EQ(fs::path(b.cache_path).parent_path().string(), fs::path(path).parent_path().string());
  EXPECT_NE(b.cache_note.find(b.cache_path), std::string::npos) << b.cache_note;
  EXPECT_EQ(b.cache_available, size_t(a.calls));
  EXPECT_EQ(ReadFile(b.cache_path), a_text) << "the cache is never written";
  EXPECT_EQ(b.loaded, 0u);
  EXPECT_GT(b.res.cached, 0);
  EXPECT_LT(b.calls, a.calls) << "cached samples are not measured again";
  EXPECT_EQ(b.res.measured, int(b.calls));
  EXPECT_EQ(b.res.replayed, 0);
  // Cached samples cost what they cost when measured (the budget's clock).
  EXPECT_NEAR(b.res.spent_sec, (b.res.measured + b.res.cached) * kSampleSec, 1e-6);

  // The new log holds every sample the run used, and names its cache.
  const LogStats s = CountLog(path);
  EXPECT_EQ(s.records, size_t(b.res.measured + b.res.cached));
  EXPECT_EQ(s.distinct, s.records);
  EXPECT_EQ(s.cached, size_t(b.res.cached));
  EXPECT_EQ(s.header.value("cache", ""), fs::path(b.cache_path).filename().string());
  EXPECT_EQ(s.header["config"]["search"]["seed"], 2);

  // Resumed with the same settings, it replays: nothing measured or taken
  // from the cache again, the same table.
  const TuneRun again = Tune(path, Config(2), Key());
  EXPECT_EQ(again.calls, 0);
  EXPECT_EQ(again.res.cached, 0);
  EXPECT_EQ(again.res.replayed, int(s.records));
  EXPECT_EQ(again.cache_path, b.cache_path);
  EXPECT_EQ(again.cache_available, size_t(a.calls - b.res.cached)) << "what B took is not handed out again";
  ExpectSameChoices(b.res.table, again.res.table);
}

TEST(MeasurementCache, AnotherSearchVersionReusesTheSamples) {
  const std::string path = TempPath("cache_version.jsonl");
  fs::remove(path);
  const TuneRun a = Tune(path, Config(1), Key(), /*search_version=*/13);
  const TuneRun b = Tune(path, Config(1), Key());
  ASSERT_FALSE(b.cache_path.empty());
  // Same seed, same walk: every sample comes from the cache.
  EXPECT_EQ(b.calls, 0);
  EXPECT_EQ(b.res.cached, int(a.calls));
  ExpectSameChoices(a.res.table, b.res.table);
  EXPECT_EQ(CountLog(path).records, size_t(a.calls));
}

TEST(MeasurementCache, AResumedRunTakesEachCachedSampleOnce) {
  const std::string ref_path = TempPath("cache_ref_b.jsonl");
  const std::string path = TempPath("cache_crash_b.jsonl");
  WriteA(ref_path);
  fs::copy_file(ref_path, path, fs::copy_options::overwrite_existing);
  // B takes more final samples than A logged: some come from the cache, the
  // rest are measured.
  TuneConfig b = Config(2);
  b.search.final_reps = 20;
  const TuneRun ref = Tune(ref_path, b, Key());  // B uninterrupted
  ASSERT_GT(ref.calls, 1);
  ASSERT_GT(ref.res.cached, 0);

  long first_calls = 0;
  try {
    Tune(path, b, Key(), 0, ref.calls / 2);
    ADD_FAILURE() << "the fake did not crash";
  } catch (const SimulatedCrash&) {
    first_calls = ref.calls / 2;
  }
  const TuneRun second = Tune(path, b, Key());
  EXPECT_FALSE(second.cache_path.empty()) << "the resumed log finds its cache";
  EXPECT_GT(second.loaded, 0u);
  EXPECT_EQ(first_calls + second.calls, ref.calls);
  const LogStats s = CountLog(path), r = CountLog(ref_path);
  EXPECT_EQ(s.records, r.records);
  EXPECT_EQ(s.distinct, s.records);
  EXPECT_EQ(s.cached, r.cached);
  ExpectSameChoices(ref.res.table, second.res.table);
}

TEST(MeasurementCache, ADifferentMeasurementKeyStartsFresh) {
  const std::string path = TempPath("cache_key.jsonl");
  WriteA(path);
  const TuneRun b = Tune(path, Config(2), Key("5678"));
  EXPECT_TRUE(b.cache_path.empty());
  EXPECT_NE(b.stale_note.find("git_commit 1234 -> 5678"), std::string::npos) << b.stale_note;
  EXPECT_EQ(b.res.cached, 0);
  EXPECT_EQ(b.res.measured, int(b.calls));
  EXPECT_EQ(CountLog(path).records, size_t(b.calls));
}

TEST(MeasurementCache, AMeasuredSettingIsStillRefused) {
  const std::string path = TempPath("cache_min_seconds.jsonl");
  WriteA(path);
  TuneConfig c = Config(1);
  c.search.min_seconds *= 2;  // a sample of another length measures something else
  EXPECT_THROW(Tune(path, c, Key()), std::runtime_error);
  EXPECT_FALSE(MeasuredPart(Config(1).ToJson()) == MeasuredPart(c.ToJson()));
  EXPECT_TRUE(MeasuredPart(Config(1).ToJson()) == MeasuredPart(Config(2).ToJson()));
}

TEST(MeasurementCache, ACorruptCacheLineIsSkippedWithAMessage) {
  const std::string path = TempPath("cache_corrupt.jsonl");
  const TuneRun a = WriteA(path);
  {
    std::string text = ReadFile(path);
    const size_t second_line = text.find('\n') + 1;  // the first measurement
    text.insert(second_line, "{\"type\":\"m\",\"cell\":\n");
    text += R"({"type":"m","cell":"selu_bwd/f32/-/contig/o10","cand":"v)";  // torn
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }
  const TuneRun b = Tune(path, Config(2), Key());
  ASSERT_FALSE(b.cache_path.empty());
  EXPECT_EQ(b.cache_skipped, 2u);
  ASSERT_EQ(b.problems.size(), 2u);
  EXPECT_EQ(b.problems[0].rfind(b.cache_path + ":2: ", 0), 0u) << b.problems[0];
  EXPECT_NE(b.problems[1].find("torn last line"), std::string::npos) << b.problems[1];
  EXPECT_EQ(b.cache_available, size_t(a.calls));
  EXPECT_GT(b.res.cached, 0);
  const LogStats s = CountLog(path);
  EXPECT_EQ(s.records, size_t(b.res.measured + b.res.cached));
}

// Without a measured part (SetMeasuredPart), or without a key, any config
// difference is refused as before.
TEST(MeasurementCache, OffWithoutAMeasuredPartOrKey) {
  const std::string path = TempPath("cache_off.jsonl");
  std::string err;
  {
    MeasurementLog log;
    ASSERT_TRUE(log.Open(path, json{{"search_version", 13}}, false, &err, MeasurementLog::SyncMode::kEveryLine,
                         Key().ToJson()));
    log.Append(LogRecord{"cell", "cand", 0, 0, {10.0}, 0.001});
  }
  MeasurementLog off;
  EXPECT_FALSE(off.Open(path, json{{"search_version", 14}}, false, &err, MeasurementLog::SyncMode::kEveryLine,
                        Key().ToJson()));
  EXPECT_NE(err.find("different settings"), std::string::npos) << err;
  MeasurementLog no_key;
  no_key.SetMeasuredPart(MeasuredPart);
  EXPECT_FALSE(no_key.Open(path, json{{"search_version", 14}}, false, &err));
  MeasurementLog on;
  on.SetMeasuredPart(MeasuredPart);
  ASSERT_TRUE(on.Open(path, json{{"search_version", 14}}, false, &err, MeasurementLog::SyncMode::kEveryLine,
                      Key().ToJson()))
      << err;
  const LogRecord* c = on.TakeCached("cell", "cand", 0);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->ns[0], 10.0);
  EXPECT_EQ(on.TakeCached("cell", "cand", 0), nullptr) << "each cached sample is handed out once";
  EXPECT_EQ(on.TakeCached("cell", "cand", 1), nullptr) << "by placement";
}

}  // namespace
}  // namespace actgrad::tune::cache_test
