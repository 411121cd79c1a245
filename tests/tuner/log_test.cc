// The measurement log: append, reopen, torn lines, settings mismatch.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tiling/tuner/log.h"
#include "tests/tuner/temp_files.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;

testing::TempFiles temp_files("actgrad_tuner_test_");
std::string TempPath(const std::string& name) { return temp_files.Path(name); }

std::string Slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

LogRecord Rec(int rep, double ns) { return LogRecord{"cell", "cand", 0, rep, {ns}, 0.001}; }

TEST(Log, AppendReopenReplay) {
  const std::string p = TempPath("a.jsonl");
  fs::remove(p);
  const nlohmann::json cfg = {{"x", 1}};
  {
    MeasurementLog log;
    std::string err;
    ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
    EXPECT_EQ(log.loaded(), 0u);
    log.Append(Rec(0, 10));
    log.Append(Rec(1, 11));
    EXPECT_EQ(log.appended(), 2u);
  }
  MeasurementLog log;
  std::string err;
  ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
  EXPECT_EQ(log.loaded(), 2u);
  ASSERT_NE(log.Find("cell", "cand", 0, 1), nullptr);
  EXPECT_EQ(log.Find("cell", "cand", 0, 1)->ns[0], 11.0);
  EXPECT_EQ(log.Find("cell", "cand", 0, 2), nullptr);
  EXPECT_EQ(log.Find("cell", "cand", 1, 0), nullptr);
}

TEST(Log, TornLastLineIsIgnoredAndCut) {
  const std::string p = TempPath("torn.jsonl");
  fs::remove(p);
  const nlohmann::json cfg = {{"x", 2}};
  {
    MeasurementLog log;
    std::string err;
    ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
    log.Append(Rec(0, 10));
  }
  {  // power loss in the middle of the next line
    std::ofstream f(p, std::ios::app);
    f << R"({"type":"m","cell":"cell","cand":"cand","round":0,"rep":1,"ns":[1)";
  }
  {
    MeasurementLog log;
    std::string err;
    ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
    EXPECT_EQ(log.loaded(), 1u);
    EXPECT_EQ(log.torn_lines(), 1u);
    EXPECT_EQ(log.Find("cell", "cand", 0, 1), nullptr);
    log.Append(Rec(1, 12));
  }
  // The new line starts on a line boundary: every line parses.
  std::istringstream lines(Slurp(p));
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    EXPECT_FALSE(nlohmann::json::parse(line, nullptr, false).is_discarded()) << line;
    ++n;
  }
  EXPECT_EQ(n, 3);  // header + 2 records
  MeasurementLog log;
  std::string err;
  ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
  EXPECT_EQ(log.loaded(), 2u);
  EXPECT_EQ(log.torn_lines(), 0u);
}

TEST(Log, TornHeaderStartsOver) {
  const std::string p = TempPath("torn_header.jsonl");
  {
    std::ofstream f(p, std::ios::trunc);
    f << R"({"type":"header","form)";
  }
  MeasurementLog log;
  std::string err;
  ASSERT_TRUE(log.Open(p, {{"x", 3}}, false, &err)) << err;
  EXPECT_EQ(log.loaded(), 0u);
}

TEST(Log, DifferentSettingsAreRefusedUnlessFresh) {
  const std::string p = TempPath("settings.jsonl");
  fs::remove(p);
  {
    MeasurementLog log;
    std::string err;
    ASSERT_TRUE(log.Open(p, {{"budget", 600}}, false, &err)) << err;
    log.Append(Rec(0, 10));
  }
  {
    MeasurementLog log;
    std::string err;
    EXPECT_FALSE(log.Open(p, {{"budget", 300}}, false, &err));
    EXPECT_NE(err.find("different settings"), std::string::npos) << err;
    EXPECT_NE(err.find("--fresh"), std::string::npos) << err;
  }
  MeasurementLog log;
  std::string err;
  ASSERT_TRUE(log.Open(p, {{"budget", 300}}, true, &err)) << err;
  EXPECT_EQ(log.loaded(), 0u);
  EXPECT_TRUE(fs::exists(p + ".old"));
}

TEST(Log, DuplicateLinesCountOnce) {
  const std::string p = TempPath("dup.jsonl");
  fs::remove(p);
  const nlohmann::json cfg = {{"x", 4}};
  {
    MeasurementLog log;
    std::string err;
    ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
    log.Append(Rec(0, 10));
  }
  {
    std::ofstream f(p, std::ios::app);
    f << MeasurementLog::ToJson(Rec(0, 99)).dump() << "\n";
  }
  MeasurementLog log;
  std::string err;
  ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
  EXPECT_EQ(log.loaded(), 1u);
  EXPECT_EQ(log.duplicate_lines(), 1u);
  EXPECT_EQ(log.Find("cell", "cand", 0, 0)->ns[0], 10.0);  // the first one wins
}

}  // namespace
}  // namespace actgrad::tune
