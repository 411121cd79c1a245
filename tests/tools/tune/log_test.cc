// The measurement log: append, reopen, torn lines, settings mismatch.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tiling/choice.h"
#include "tools/tune/log.h"
#include "tests/tools/tune/temp_files.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;

using testing::TempPath;

using testing::ReadFile;

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
  std::istringstream lines(ReadFile(p));
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

// A log with a header and one good record, then `lines` appended as they are.
std::string LogWith(const std::string& name, const nlohmann::json& cfg, const std::vector<std::string>& lines) {
  const std::string p = TempPath(name);
  fs::remove(p);
  {
    MeasurementLog log;
    std::string err;
    EXPECT_TRUE(log.Open(p, cfg, false, &err)) << err;
    log.Append(Rec(0, 10));
  }
  std::ofstream f(p, std::ios::app);
  for (const auto& line : lines) f << line << "\n";
  return p;
}

std::string Line(int rep, const std::string& field, const std::string& value) {
  nlohmann::json j = MeasurementLog::ToJson(Rec(rep, 10));
  j[field] = "@V@";
  std::string s = j.dump();
  return s.replace(s.find("\"@V@\""), 5, value);
}

// A line with "ns": [-1e300], or with wrong types that would truncate
// (round 2.5 -> 2, rep true -> 1), is not a measurement: such lines are
// skipped, each with a message naming the line.
TEST(Log, RecordsWithBadFieldsAreSkipped) {
  const nlohmann::json cfg = {{"x", 5}};
  const std::vector<std::string> bad = {
      Line(1, "ns", "[-1e300]"),     Line(2, "ns", "[1e999]"),      Line(3, "ns", "[\"x\"]"),
      Line(4, "ns", "-5"),           Line(5, "ns", "[1,-0.5]"),     Line(6, "round", "2.5"),
      Line(7, "round", "-1"),        Line(8, "rep", "true"),        Line(9, "round", "4294967296"),
      Line(10, "sec", "-1"),         Line(11, "sec", "\"1\""),      Line(12, "cell", "5"),
      Line(13, "cand", "null"),      Line(14, "type", "5"),         Line(15, "ns", "[" + std::string(100000, '[') + std::string(100000, ']') + "]"),
  };
  const std::string p = LogWith("bad_fields.jsonl", cfg, bad);
  MeasurementLog log;
  std::string err;
  ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
  EXPECT_EQ(log.loaded(), 1u);
  for (int rep = 1; rep <= 15; ++rep) EXPECT_EQ(log.Find("cell", "cand", 0, rep), nullptr) << rep;
  EXPECT_EQ(log.Find("cell", "cand", 2, 6), nullptr);
  EXPECT_EQ(log.Find("cell", "cand", 0, 1 /* true */), nullptr);
  EXPECT_EQ(log.torn_lines(), 2u);  // 1e999 and the deep line are not JSON
  EXPECT_EQ(log.rejected_lines(), 13u);
  // The first ten skipped lines, each named (line 1 is the header, 2 the good record).
  ASSERT_EQ(log.problems().size(), 10u);
  EXPECT_EQ(log.problems()[0], p + ":3: \"ns\"[0] is not a finite number > 0");
  EXPECT_EQ(log.problems()[1].rfind(p + ":4: not valid JSON", 0), 0u) << log.problems()[1];
  EXPECT_NE(log.problems()[1].find("1e999"), std::string::npos) << log.problems()[1];
  EXPECT_EQ(log.problems()[2], p + ":5: \"ns\"[0] is not a finite number > 0");
  EXPECT_EQ(log.problems()[3], p + ":6: \"ns\" is missing or not a non-empty array");
  EXPECT_EQ(log.problems()[4], p + ":7: \"ns\"[1] is not a finite number > 0");
  EXPECT_EQ(log.problems()[5], p + ":8: \"round\" is missing or not an integer in 0..2147483647");
  EXPECT_EQ(log.problems()[7], p + ":10: \"rep\" is missing or not an integer in 0..2147483647");
  EXPECT_EQ(log.problems()[9], p + ":12: \"sec\" is missing or not a finite number >= 0");
}

// Each line records the placement its sample was taken at; lines
// without one (logs before search_version 9) read as placement 0, and a
// placement that is no index is a bad field like the others.
TEST(Log, PlacementIsRecordedAndOptional) {
  const nlohmann::json cfg = {{"x", 6}};
  LogRecord at3 = Rec(1, 12);
  at3.placement = 3;
  EXPECT_EQ(MeasurementLog::ToJson(at3).at("placement"), 3);
  nlohmann::json old = MeasurementLog::ToJson(Rec(2, 13));
  old.erase("placement");
  const std::string p = LogWith("placement.jsonl", cfg,
                                {MeasurementLog::ToJson(at3).dump(), old.dump(), Line(3, "placement", "-1"),
                                 Line(4, "placement", "1.5"), Line(5, "placement", "\"2\"")});
  MeasurementLog log;
  std::string err;
  ASSERT_TRUE(log.Open(p, cfg, false, &err)) << err;
  EXPECT_EQ(log.loaded(), 3u);
  ASSERT_NE(log.Find("cell", "cand", 0, 1), nullptr);
  EXPECT_EQ(log.Find("cell", "cand", 0, 1)->placement, 3);
  ASSERT_NE(log.Find("cell", "cand", 0, 2), nullptr);
  EXPECT_EQ(log.Find("cell", "cand", 0, 2)->placement, 0);
  EXPECT_EQ(log.rejected_lines(), 3u);
  ASSERT_EQ(log.problems().size(), 3u);
  EXPECT_EQ(log.problems()[0], p + ":5: \"placement\" is missing or not an integer in 0..2147483647");
}

// A header whose fields have the wrong type (it threw out of Open) or whose
// config is nested very deep (copying it overflowed the stack) is no header.
TEST(Log, MalformedHeaderIsAnErrorNotACrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  for (const std::string& header :
       {std::string(R"({"type":5,"config":{"x":6}})"), R"({"type":"header","config":)" + deep + "}",
        std::string(R"({"type":["header"],"config":{"x":6}})")}) {
    const std::string p = TempPath("bad_header.jsonl");
    std::ofstream(p, std::ios::trunc) << header << "\n";
    MeasurementLog log;
    std::string err;
    EXPECT_FALSE(log.Open(p, {{"x", 6}}, false, &err));
    EXPECT_NE(err.find("no header"), std::string::npos) << err;
    EXPECT_EQ(ReadFile(p), header + "\n");  // not truncated
  }
}

// A file that is not a tuner log at all is never cut to nothing.
TEST(Log, OneLineThatIsNotALogIsKept) {
  const std::string p = TempPath("not_a_log.jsonl");
  std::ofstream(p, std::ios::trunc) << "{\"a\":1}\n";
  MeasurementLog log;
  std::string err;
  EXPECT_FALSE(log.Open(p, {{"x", 7}}, false, &err));
  EXPECT_NE(err.find("no header"), std::string::npos) << err;
  EXPECT_EQ(ReadFile(p), "{\"a\":1}\n");
}

// A config the header cannot hold (a path that is not UTF-8) is an error
// before anything is touched, not a json::type_error out of Open.
TEST(Log, ConfigThatIsNotUtf8IsAnError) {
  const std::string p = TempPath("utf8.jsonl");
  fs::remove(p);
  MeasurementLog log;
  std::string err;
  EXPECT_FALSE(log.Open(p, {{"accuracy", "/data/\xff.json"}}, false, &err));
  EXPECT_NE(err.find("cannot write the header"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(p));
}

// A FIFO or directory given as the log is refused (reading a FIFO blocks).
TEST(Log, LogThatIsNotARegularFileIsRefused) {
  const std::string fifo = TempPath("fifo.jsonl");
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  MeasurementLog log;
  std::string err;
  EXPECT_FALSE(log.Open(fifo, {{"x", 8}}, false, &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
  const std::string dir = TempPath("dir.jsonl");
  fs::create_directories(dir);
  EXPECT_FALSE(log.Open(dir, {{"x", 8}}, false, &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
}

// The log's candidate keys read back into the Choice that wrote them (the one
// parser: ParseChoiceKey, also the Atlas model's), and nothing else reads.
TEST(LogKeys, ChoiceKeysRoundTrip) {
  Choice plain{"selu_bwd.f32.none.exact.u4.avx3", Split{2, 65536, 0}};
  Choice tiled{"gelu_bwd.bf16.tanh.u2.avx2.nt", Split{1, 0, 8192}};
  tiled.split.tile_rows = 1024;
  tiled.split.tile_cols = 64;
  tiled.split.transpose_result = true;
  for (const Choice& c : {plain, tiled}) {
    Choice back;
    ASSERT_TRUE(ParseChoiceKey(c.Key(), &back)) << c.Key();
    EXPECT_EQ(back, c) << c.Key();
  }
  Choice out;
  for (const char* bad : {"", "v", "v|t1|c0", "v|t1|c0|s", "v|tx|c0|s0", "v|t1|c0|s0|zz", "|t1|c0|s0",
                          "v|t1|c0|s0|tr|tr", "v|t1|c0|s0|r8", "v|t1 |c0|s0"})
    EXPECT_FALSE(ParseChoiceKey(bad, &out)) << bad;
}

}  // namespace
}  // namespace actgrad::tune
