// A tuning run that is killed (exception or SIGKILL) and resumed loses no
// measurement, repeats none, and ends with the table of an uninterrupted run.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "fake_backend.h"
#include "tiling/dispatch.h"
#include "tools/tune/tuner.h"
#include "tests/tools/tune/log_stats.h"
#include "tests/tools/tune/temp_files.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;
using testing::FakeBackend;
using testing::FakeClock;
using testing::SimulatedCrash;

using testing::TempPath;


TuneConfig SmallConfig() {
  TuneConfig c = TuneConfig::Defaults(false);
  c.ops = {Op::kSeluBwd, Op::kGeluBwd};
  c.dtypes = {DType::kF32};
  c.octaves = {10, 16, 20};
  c.screen_keep = 3;         // the fake has 8 variants: screening runs
  c.budget_sec = 1e6;        // the fake is fast: the budget never binds
  return c;
}

using testing::CountLog;
using testing::LogStats;

TuneResult Tune(FakeBackend& be, const std::string& path, bool fresh) {
  const TuneConfig cfg = SmallConfig();
  MeasurementLog log;
  std::string err;
  if (!log.Open(path, cfg.ToJson(), fresh, &err)) throw std::runtime_error(err);
  auto progress = Progress::Silent();
  return RunTuning(be, log, cfg, *progress);
}

void ExpectSameChoices(const tables::Table& a, const tables::Table& b) {
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    const auto &x = a.entries[i], &y = b.entries[i];
    EXPECT_EQ(int(x.op), int(y.op));
    EXPECT_EQ(int(x.mode), int(y.mode));
    EXPECT_EQ(int(x.layout), int(y.layout));
    EXPECT_EQ(x.octave, y.octave);
    EXPECT_EQ(x.choice, y.choice) << "entry " << i;
    EXPECT_EQ(x.one_thread, y.one_thread) << "entry " << i;
  }
}

class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeBackend be;
    reference_ = Tune(be, TempPath("reference.jsonl"), true);
    total_ = be.calls;
    ASSERT_GT(total_, 100);
    // cells: selu 3 + gelu 2 modes x 2 layouts x 3 = 15
    ASSERT_EQ(reference_.table.entries.size(), 15u);
    const LogStats s = CountLog(TempPath("reference.jsonl"));
    ASSERT_EQ(s.records, size_t(total_));
    ASSERT_EQ(s.distinct, size_t(total_));
  }
  TuneResult reference_;
  long total_ = 0;
};

TEST_F(Resume, AfterACrashAtAnyPointNothingIsLostOrRepeated) {
  for (long k : {0L, 1L, total_ / 7, total_ / 3, total_ / 2, total_ - 1}) {
    SCOPED_TRACE("crash after " + std::to_string(k) + " of " + std::to_string(total_));
    const std::string path = TempPath("crash" + std::to_string(k) + ".jsonl");
    FakeBackend first;
    first.crash_after = k;
    EXPECT_THROW(Tune(first, path, true), SimulatedCrash);
    EXPECT_EQ(first.calls, k);
    EXPECT_EQ(CountLog(path).records, size_t(k));
    FakeBackend second;
    const TuneResult r = Tune(second, path, false);
    EXPECT_EQ(first.calls + second.calls, total_);  // no repeated measurement
    EXPECT_EQ(r.replayed, int(k));
    const LogStats s = CountLog(path);
    EXPECT_EQ(s.records, size_t(total_));   // nothing lost
    EXPECT_EQ(s.distinct, size_t(total_));  // no duplicate
    ExpectSameChoices(reference_.table, r.table);
  }
}

TEST_F(Resume, TwoCrashesAndATornLine) {
  const std::string path = TempPath("twice.jsonl");
  FakeBackend a;
  a.crash_after = total_ / 4;
  EXPECT_THROW(Tune(a, path, true), SimulatedCrash);
  {  // power loss while writing the next line
    std::ofstream f(path, std::ios::app);
    f << R"({"type":"m","cell":"selu_bwd/f32/-/contig/o10","cand":"v)";
  }
  FakeBackend b;
  b.crash_after = total_ / 3;
  EXPECT_THROW(Tune(b, path, false), SimulatedCrash);
  FakeBackend c;
  const TuneResult r = Tune(c, path, false);
  EXPECT_EQ(a.calls + b.calls + c.calls, total_);
  const LogStats s = CountLog(path);
  EXPECT_EQ(s.records, size_t(total_));
  EXPECT_EQ(s.distinct, size_t(total_));
  ExpectSameChoices(reference_.table, r.table);
}

TEST_F(Resume, AfterSigkill) {
  const std::string path = TempPath("sigkill.jsonl");
  fs::remove(path);
  const long k = total_ / 2;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {  // the child is killed by SIGKILL in the middle of the run
    FakeBackend be;
    be.crash_after = k;
    be.kill_instead = true;
    try {
      Tune(be, path, true);
    } catch (...) {
    }
    _exit(3);  // not reached
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_EQ(CountLog(path).records, size_t(k));
  FakeBackend be;
  const TuneResult r = Tune(be, path, false);
  EXPECT_EQ(be.calls, total_ - k);
  const LogStats s = CountLog(path);
  EXPECT_EQ(s.records, size_t(total_));
  EXPECT_EQ(s.distinct, size_t(total_));
  ExpectSameChoices(reference_.table, r.table);
}

TEST_F(Resume, AFinishedRunReplaysWithoutMeasuring) {
  const std::string path = TempPath("reference.jsonl");
  FakeBackend be;
  const TuneResult r = Tune(be, path, false);
  EXPECT_EQ(be.calls, 0);
  EXPECT_EQ(r.replayed, int(total_));
  ExpectSameChoices(reference_.table, r.table);
}

// With times that depend on the placement, a run that crashes and
// resumes replays the logged samples at their placements (final round:
// repetition r at r % 4, the rest at 0) and ends with the uninterrupted
// run's table; a log line whose placement is not the one its sample is
// asked for is refused with a message, not replayed.
TEST(ResumeWithPlacements, LoggedAndReplayedAtTheirPlacements) {
  auto placed = [] {
    FakeBackend be;
    be.placement_factor = [](const Choice& c, int placement) {
      return c.variant == "v3" ? (placement == 0 ? 0.8 : 1.25) : 1.0;
    };
    return be;
  };
  FakeBackend ref = placed();
  const TuneResult reference = Tune(ref, TempPath("placed_ref.jsonl"), true);
  EXPECT_EQ(reference.table.provenance["tuning"]["placements"], "0,1,2,3");
  size_t final_lines = 0;
  {
    std::ifstream in(TempPath("placed_ref.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
      LogRecord r;
      if (!MeasurementLog::FromJson(nlohmann::json::parse(line), &r)) continue;
      const bool spread = r.round == kFinalRound || r.round == kSecondLookRound || r.round == kConfirmRound;
      EXPECT_EQ(r.placement, spread ? r.rep % 4 : 0) << line;
      final_lines += spread;
    }
  }
  EXPECT_GT(final_lines, 0u);

  const std::string path = TempPath("placed_crash.jsonl");
  FakeBackend first = placed();
  first.crash_after = ref.calls * 2 / 3;
  EXPECT_THROW(Tune(first, path, true), SimulatedCrash);
  FakeBackend second = placed();
  const TuneResult r = Tune(second, path, false);
  EXPECT_EQ(first.calls + second.calls, ref.calls);
  ExpectSameChoices(reference.table, r.table);

  // A final-round line moved to another placement by hand.
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string log = text.str();
  const size_t at = log.find("\"placement\":1");
  ASSERT_NE(at, std::string::npos);
  log.replace(at, 13, "\"placement\":2");
  std::ofstream(path, std::ios::trunc) << log;
  FakeBackend third = placed();
  try {
    Tune(third, path, false);
    ADD_FAILURE() << "a sample logged at another placement was replayed";
  } catch (const LogMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("at placement 2, this run measures it at placement 1"), std::string::npos)
        << e.what();
  }
}

TEST(Tuning, TableFromTheFakeBackendIsValid) {
  FakeBackend be;
  const TuneResult r = Tune(be, TempPath("valid.jsonl"), true);
  const std::string text = tables::ToJson(r.table).dump(2);
  tables::Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(text, &back, &err)) << err;
  EXPECT_EQ(back.backend, "fake");
  EXPECT_EQ(back.machine_id, "fake-machine");
  EXPECT_EQ(back.provenance.value("tool_version", ""), kToolVersion);
  for (const auto& e : back.entries) {
    ASSERT_TRUE(e.runner_up.has_value());
    EXPECT_FALSE(e.runner_up->choice.variant.empty());
    EXPECT_GT(e.runner_up->median_ns, 0);
    EXPECT_GT(e.median_ns, 0);
    EXPECT_TRUE(e.extra.contains("tuning"));
  }
  // Only the ops that broadcast get bcast cells.
  for (const auto& e : back.entries)
    if (e.layout == tables::Layout::kBcast) EXPECT_EQ(int(e.op), int(Op::kGeluBwd));
}

TEST(Tuning, PlanCellsFollowsTheSpec) {
  TuneConfig c;  // all ops, f32/f16/bf16, 17 octaves (1K..64M), both layouts, both GELU modes
  const auto cells = PlanCells(c);
  // selu, hardswish, logit: 3 x 3 x 17 contig; gelu 2 modes x 3 x 2 x 17; softshrink 3 x 2 x 17
  EXPECT_EQ(cells.size(), size_t(3 * 3 * 17 + 2 * 3 * 2 * 17 + 3 * 2 * 17));
  for (const auto& cell : cells) {
    EXPECT_GE(cell.cell.n, uint64_t(1) << cell.cell.octave);
    EXPECT_LT(cell.cell.n, uint64_t(1) << (cell.cell.octave + 1));
    EXPECT_EQ(SizeOctave(cell.cell.n), cell.cell.octave);
    EXPECT_EQ(cell.cell.n % 64, 0u);
  }
  EXPECT_EQ(RepresentativeN(16, uint64_t(1) << 26), uint64_t(92672));  // 2^16 * sqrt(2), a multiple of 64
  EXPECT_EQ(RepresentativeN(10, uint64_t(1) << 26), uint64_t(1472));
  EXPECT_EQ(RepresentativeN(26, uint64_t(1) << 26), uint64_t(1) << 26);
  c.dtypes = {DType::kI32};
  for (const auto& cell : PlanCells(c)) EXPECT_EQ(int(cell.cell.op), int(Op::kSeluBwd));
}

// Every sample costs 1 ms of a fake clock: the run fits 0.5 s (within the
// minimal search's overrun), whatever else runs on the machine.
TEST(Tuning, BudgetIsRespectedRoughly) {
  FakeBackend be;
  be.sleep_sec = 0.001;
  TuneConfig cfg = SmallConfig();
  cfg.budget_sec = 0.5;
  FakeClock clock;
  clock.Use(be, &cfg.search);
  MeasurementLog log;
  log.OpenInMemory({});
  auto progress = Progress::Silent();
  const TuneResult r = RunTuning(be, log, cfg, *progress);
  EXPECT_EQ(r.table.entries.size(), 15u);
  EXPECT_DOUBLE_EQ(r.spent_sec, clock.now);  // the budget's clock is the search's
  EXPECT_NEAR(r.spent_sec, 0.001 * double(be.calls), 1e-9);
  EXPECT_LT(r.spent_sec, cfg.budget_sec * 1.5);
  EXPECT_EQ(be.unprepared_measures, 0);  // every cell's data was set up before (outside) its samples
  EXPECT_EQ(be.prepared.size(), 15u);  // (the screens run at cells' sizes)
  EXPECT_GT(r.budget_cut_cells, 0);
}

// The progress lines of a run, for the screens' verdicts.
class LinesProgress : public Progress {
 public:
  std::vector<std::string> lines;
  void Begin(const std::string&, double) override {}
  void Update(double, const std::string&) override {}
  void Line(const std::string& text) override { lines.push_back(text); }
  void End(const std::string&) override {}
};

// A screen gets its share of the plan plus half of what the cells before it
// left unused: the first group's screen is cut (its share, 0.18 s, is short
// of the 96 samples of 2 ms that halving 24 variants down to 3 takes),
// the later groups' are not, since the cells (three screened variants each,
// about 0.3 s) take far less than their allowance (1.6 s).
TEST(Tuning, ScreensTakeWhatTheCellsLeft) {
  FakeBackend be;
  be.variants = 24;
  be.sleep_sec = 0.002;
  TuneConfig cfg = TuneConfig::Defaults(false);
  cfg.ops = {Op::kSeluBwd, Op::kHardswishBwd, Op::kLogitGrad};
  cfg.dtypes = {DType::kF32};
  cfg.octaves = {16};
  cfg.screen_keep = 3;
  cfg.budget_sec = 6;
  FakeClock clock;  // 2 ms a sample, exactly
  clock.Use(be, &cfg.search);
  MeasurementLog log;
  log.OpenInMemory({});
  LinesProgress progress;
  const TuneResult r = RunTuning(be, log, cfg, progress);
  EXPECT_EQ(r.table.entries.size(), 3u);
  std::vector<std::string> screens;
  for (const std::string& l : progress.lines)
    if (l.rfind("screen ", 0) == 0) screens.push_back(l);
  ASSERT_EQ(screens.size(), 3u);
  EXPECT_NE(screens[0].find("(budget cut)"), std::string::npos) << screens[0];
  EXPECT_EQ(screens[1].find("(budget cut)"), std::string::npos) << screens[1];
  EXPECT_EQ(screens[2].find("(budget cut)"), std::string::npos) << screens[2];
  EXPECT_LT(r.spent_sec, cfg.budget_sec);
}

TEST(Check, BetweenCellsAndTheShippingIncumbent) {
  TuneConfig cfg = SmallConfig();
  cfg.points = TuneConfig::Points::kBoth;
  const auto cells = PlanCells(cfg);
  size_t between = 0;
  for (const auto& c : cells) {
    if (c.key.find('@') == std::string::npos) {
      EXPECT_EQ(c.cell.n, RepresentativeN(c.cell.octave, cfg.max_n));
      continue;
    }
    ++between;
    // The top of octave h, sqrt(2) past the size the octave was tuned at.
    EXPECT_EQ(c.cell.n, (uint64_t(1) << (c.cell.octave + 1)) - 3);
    EXPECT_EQ(SizeOctave(c.cell.n), c.cell.octave);
  }
  EXPECT_EQ(between * 2, cells.size());
  cfg.points = TuneConfig::Points::kBetween;
  EXPECT_EQ(PlanCells(cfg).size(), between);
  // The largest octave has no between point above max_n.
  cfg.octaves = {26};
  EXPECT_TRUE(PlanCells(cfg).empty());

  // With a poor shipping choice (v7 on one thread) as the incumbent, the check
  // finds the better candidates and reports the shipping choice as slower.
  cfg = SmallConfig();
  cfg.points = TuneConfig::Points::kBoth;
  cfg.incumbent = [](const Cell&) {
    Choice c;
    c.variant = "v7";
    return c;
  };
  cfg.incumbent_name = "shipping:test";
  cfg.confirm_reps = 4;
  EXPECT_NE(cfg.ToJson().dump(), SmallConfig().ToJson().dump());  // its own log
  FakeBackend be;
  MeasurementLog log;
  log.OpenInMemory(cfg.ToJson());
  auto progress = Progress::Silent();
  const TuneResult r = RunTuning(be, log, cfg, *progress);
  ASSERT_EQ(r.cells.size(), cells.size());
  int confirmed = 0;
  for (const auto& c : r.cells) {
    EXPECT_EQ(c.incumbent.cand.variant, "v7");
    // Cells where the search saw the shipping choice >5 % slower were
    // re-measured: 4 fresh samples each, logged in the confirmation round.
    if (c.incumbent.median > 1.05 * c.chosen.median) {
      ASSERT_TRUE(c.confirmed.has_value()) << c.key;
      EXPECT_EQ(c.confirmed->reps, 4);
      EXPECT_GT(c.confirmed->ratio, 1.05) << c.key;  // the fake has little noise: the gap holds
      EXPECT_NE(log.Find(c.key, c.chosen.cand.Key(), kConfirmRound, 3), nullptr);
      EXPECT_NE(log.Find(c.key, c.incumbent.cand.Key(), kConfirmRound, 3), nullptr);
      ++confirmed;
    } else {
      EXPECT_FALSE(c.confirmed.has_value()) << c.key;
    }
  }
  EXPECT_GT(confirmed, 0);
  const std::string report = FormatCheck(r, 0.05);
  EXPECT_NE(report.find("SLOWER (fresh p="), std::string::npos) << report;
  EXPECT_NE(report.find("between sizes"), std::string::npos) << report;
  EXPECT_NE(report.find("overall: "), std::string::npos) << report;
}

TEST(Verify, ReportMarksEachCellFasterSlowerOrNotSignificant) {
  auto row = [](double entry_ns, double base_ns, double p, double p_slower) {
    VerifyRow r;
    r.cell.op = Op::kSeluBwd;
    r.cell.dtype = DType::kF32;
    r.cell.layout = "contig";
    r.cell.octave = 14;
    r.cell.n = 23168;
    r.entry.variant = "v1";
    r.entry.split.threads = 2;
    r.base.variant = "v0";
    r.entry_ns = entry_ns, r.base_ns = base_ns, r.speedup = base_ns / entry_ns;
    r.p_value = p, r.p_slower = p_slower;
    return r;
  };
  EXPECT_EQ(FormatVerify({row(100, 150, 0.001, 0.999)}).find("(n.s.)"), std::string::npos);
  EXPECT_NE(FormatVerify({row(100, 101, 0.4, 0.6)}).find("(n.s.)"), std::string::npos);
  const std::string slower = FormatVerify({row(160, 100, 0.999, 0.001)});
  EXPECT_NE(slower.find("0.62x (SLOWER than the default, p=0.001)"), std::string::npos) << slower;
  EXPECT_NE(slower.find("1 significantly slower than the default"), std::string::npos) << slower;
}

}  // namespace
}  // namespace actgrad::tune
