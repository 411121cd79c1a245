// From a cell's search to its table entry: ToEntry (the choice, the
// one-thread choice, the runner-up, the tuning notes) and the last stage of a
// cell, the split refinements (chunk, stage tile), which the search measures
// and the table records.
#include <gtest/gtest.h>

#include <set>

#include "fake_backend.h"
#include "tiling/table.h"
#include "tools/tune/tuner.h"

namespace actgrad::tune {
namespace {

using testing::FakeBackend;

const Variant* AnyVariant(Op op, DType t) {
  for (const Variant& v : Variants())
    if (v.op == op && v.dtype == t && v.supported) return &v;
  return nullptr;
}

TEST(Entry, TunerOutcomeRoundTripsThroughTheTable) {
  CellOutcome o;
  o.cell = Cell{Op::kSoftshrinkBwd, DType::kF16, "bcast", 19, 741376, GeluApprox::kNone};
  const std::string v = AnyVariant(Op::kSoftshrinkBwd, DType::kF16)->name;
  o.chosen.cand = Choice{v, Split{2, 65536, 8192}};
  o.chosen.median = 1000;
  o.chosen.spread_pct = 0.5;
  o.incumbent = o.chosen;
  o.incumbent.cand.split = Split{2, 0, 0};
  o.incumbent.median = 1500;
  o.runner_up = o.incumbent;
  // The best-ranked one-thread challenger becomes the entry's one_thread choice.
  o.ranking = {o.chosen.cand, Choice{v, Split{1, 4096, 2048}}, Choice{v, Split{1, 0, 0}}};
  tables::Table t;
  t.machine_id = "m";
  t.entries.push_back(ToEntry(o));
  tables::Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(t).dump(), &back, &err)) << err;
  ASSERT_EQ(back.entries.size(), 1u);
  const tables::Entry& e = back.entries[0];
  EXPECT_EQ(e.choice, o.chosen.cand);
  ASSERT_TRUE(e.one_thread.has_value());
  EXPECT_EQ(*e.one_thread, (Choice{v, Split{1, 4096, 2048}}));
  ASSERT_TRUE(e.runner_up.has_value());
  EXPECT_EQ(e.runner_up->choice, o.incumbent.cand);
  EXPECT_DOUBLE_EQ(e.runner_up->median_ns, 1500);
  EXPECT_DOUBLE_EQ(e.median_ns, 1000);
  EXPECT_DOUBLE_EQ(e.extra["tuning"]["speedup_vs_default"].get<double>(), 1.5);
  EXPECT_EQ(e.extra["tuning"]["default"]["chunk"], 0);
  // Not for a backend whose callers cannot cap the threads (Atlas).
  EXPECT_FALSE(ToEntry(o, /*one_thread_fallback=*/false).one_thread.has_value());
  // A one-thread winner has no one_thread choice.
  o.chosen.cand.split.threads = 1;
  EXPECT_FALSE(ToEntry(o).one_thread.has_value());
}

// The fake backend offers chunks 4096 (3 % slower) and 65536 (8 % faster from
// octave 20 on, 3 % slower below) of a threaded winner, and stage tile 8192
// (6 % faster) of an even-numbered variant; the cells' candidates have none.
TEST(Entry, SplitRefinementsAreSearchedAndTheFasterOnesPicked) {
  TuneConfig cfg = TuneConfig::Defaults(false);
  cfg.ops = {Op::kSeluBwd};
  cfg.dtypes = {DType::kF32};
  cfg.octaves = {10, 16, 20};
  cfg.screen_keep = 3;
  cfg.budget_sec = 1e6;
  FakeBackend be;
  MeasurementLog log;
  log.OpenInMemory(cfg.ToJson());
  auto progress = Progress::Silent();
  const TuneResult r = RunTuning(be, log, cfg, *progress);
  ASSERT_EQ(r.table.entries.size(), 3u);
  for (size_t i = 0; i < r.cells.size(); ++i) {
    const CellOutcome& c = r.cells[i];
    const tables::Entry& e = r.table.entries[i];
    SCOPED_TRACE(c.key + ": " + e.choice.Key());
    EXPECT_EQ(e.choice, c.chosen.cand);
    const int vi = std::stoi(e.choice.variant.substr(1));
    // Staged (even) winners take the faster stage tile; odd ones have none.
    EXPECT_EQ(e.choice.split.stage_tile, vi % 2 == 0 ? 8192 : 0);
    // Threaded winners take chunk 65536 where it is faster, else the default.
    if (e.choice.split.threads > 1 && c.cell.octave >= 20) EXPECT_EQ(e.choice.split.chunk, 65536);
    else EXPECT_EQ(e.choice.split.chunk, 0);
    // The refinements were measured in the cell's split stages.
    const Choice unrefined{e.choice.variant, Split{e.choice.split.threads, 0, 0}};
    if (!be.SplitRefinements(c.cell, unrefined).empty())
      EXPECT_NE(log.Find(c.key + "/split", unrefined.Key(), kFinalRound, 0), nullptr);
    if (e.choice.split != Split{e.choice.split.threads, 0, 0}) {
      ASSERT_TRUE(e.runner_up.has_value());  // the unrefined winner
      EXPECT_EQ(e.runner_up->choice.variant, e.choice.variant);
      EXPECT_EQ(e.runner_up->choice.split.threads, e.choice.split.threads);
    }
  }
  EXPECT_GT(r.table.entries[2].choice.split.threads, 1);  // octave 20: threads pay off
}

// A transposed view's tile weighs as much as its thread count: here one
// thread beats four on the first tile (100 against 110 us) and gains 40 % from
// its own tile, four threads gain 64 % from theirs. The search compares the
// thread counts on the first tile, so the cell's choice is four threads with
// their tile only because the best candidate of the other thread count gets
// its own refinements and meets the refined winner (RefineRivalThreads). A
// contiguous cell has no such stage.
class TiledBackend : public FakeBackend {
 public:
  std::vector<Choice> SplitRefinements(const Cell& cell, const Choice& best) override {
    if (cell.layout != "transposed" || best.split.tile_rows > 0) return {};
    Choice tiled = best;
    tiled.split.tile_rows = 256, tiled.split.tile_cols = 64;
    return {tiled};
  }
};

TEST(Entry, TransposedCellsRefineTheOtherThreadCountsTileToo) {
  TuneConfig cfg = TuneConfig::Defaults(false);
  cfg.ops = {Op::kSeluBwd};
  cfg.dtypes = {DType::kF32};
  cfg.octaves = {16};
  cfg.layouts = {"contig", "transposed"};
  cfg.budget_sec = 1e6;
  TiledBackend be;
  be.variants = 2;
  be.true_time = [](const Cell&, const Choice& c) {
    const bool tiled = c.split.tile_rows > 0;
    const double t = c.split.threads > 1 ? (tiled ? 40.0 : 110.0) : (tiled ? 60.0 : 100.0);
    return 1000.0 * t * (c.variant == "v0" ? 1.0 : 1.2);
  };
  MeasurementLog log;
  log.OpenInMemory(cfg.ToJson());
  auto progress = Progress::Silent();
  const TuneResult r = RunTuning(be, log, cfg, *progress);
  ASSERT_EQ(r.cells.size(), 2u);
  for (const CellOutcome& c : r.cells) {
    SCOPED_TRACE(c.key);
    if (c.cell.layout == "transposed") {
      EXPECT_EQ(c.chosen.cand, (Choice{"v0", Split{4, 0, 0, 256, 64}})) << c.chosen.cand.Key() << "; " << c.decision;
      EXPECT_NE(c.decision.find("other threads"), std::string::npos) << c.decision;
    } else {
      EXPECT_EQ(c.decision.find("other threads"), std::string::npos) << c.decision;
    }
  }
}

// The three one-thread tests below: SELU f32 at octave 20 (threads win it),
// an unbounded budget.
TuneConfig OneCellConfig() {
  TuneConfig cfg = TuneConfig::Defaults(false);
  cfg.ops = {Op::kSeluBwd};
  cfg.dtypes = {DType::kF32};
  cfg.octaves = {20};
  cfg.budget_sec = 1e6;
  return cfg;
}

TuneResult RunInMemory(FakeBackend& be, const TuneConfig& cfg, MeasurementLog& log) {
  log.OpenInMemory(cfg.ToJson());
  auto progress = Progress::Silent();
  return RunTuning(be, log, cfg, *progress);
}

// A threaded winner's one-thread choice comes from a screen of the one-thread
// candidates on fresh samples ("<cell>/1t"), not from the halving's first
// round, where they lose to the threaded ones on a sample or two each. Here
// the fastest one-thread variant (v4 at octave 20: TrueTime) has two slow
// first samples, as a noisy neighbour would make them.
TEST(Entry, OneThreadChoiceIsScreenedOnFreshSamples) {
  TuneConfig cfg = OneCellConfig();
  cfg.screen_keep = 8;
  FakeBackend be;
  be.sample_factor = [](const Choice& c, int k) {
    return c.variant == "v4" && c.split.threads == 1 && k < 2 ? 1.5 : 1.0;
  };
  MeasurementLog log;
  const TuneResult r = RunInMemory(be, cfg, log);
  ASSERT_EQ(r.table.entries.size(), 1u);
  const CellOutcome& c = r.cells[0];
  const tables::Entry& e = r.table.entries[0];
  ASSERT_GT(e.choice.split.threads, 1);
  // The halving ranked v4 behind other one-thread candidates ...
  std::vector<std::string> one_thread_order;
  for (const Choice& ch : c.ranking)
    if (ch.split.threads == 1) one_thread_order.push_back(ch.variant);
  ASSERT_FALSE(one_thread_order.empty());
  EXPECT_NE(one_thread_order.front(), "v4");
  // ... the one-thread screen measured it again and picked it.
  ASSERT_TRUE(e.one_thread.has_value());
  EXPECT_EQ(e.one_thread->variant, "v4");
  EXPECT_EQ(e.one_thread->split.threads, 1);
  ASSERT_TRUE(c.one_thread.has_value());
  EXPECT_NE(log.Find(c.key + "/1t", Choice{"v4", Split{1, 0, 0}}.Key(), 0, 0), nullptr);
}

// The one-thread screen measures on placement 0 only; its best and its
// runner-up then meet on samples spread over the placements. Here the
// fastest one-thread variant at octave 20 (v4, TrueTime) is fast at
// placement 0 only, 1.5x slower at the others: the runner-up (v5, 6 %
// slower everywhere) is the one-thread choice.
TEST(Entry, OneThreadChoiceHoldsOverPlacements) {
  const TuneConfig cfg = OneCellConfig();
  ASSERT_GE(cfg.search.final_placements, 2);
  FakeBackend be;
  be.placement_factor = [](const Choice& c, int placement) {
    return c.variant == "v4" && c.split.threads == 1 && placement != 0 ? 1.5 : 1.0;
  };
  MeasurementLog log;
  const TuneResult r = RunInMemory(be, cfg, log);
  ASSERT_EQ(r.table.entries.size(), 1u);
  const CellOutcome& c = r.cells[0];
  const tables::Entry& e = r.table.entries[0];
  ASSERT_GT(e.choice.split.threads, 1);
  ASSERT_TRUE(e.one_thread.has_value());
  EXPECT_EQ(e.one_thread->variant, "v5");
  EXPECT_EQ(e.one_thread->split.threads, 1);
  // The comparison was logged (a resumed run replays it), at every placement.
  std::set<int> placements;
  for (int rep = 0; rep < 2 * cfg.search.final_placements; ++rep) {
    const LogRecord* rec = log.Find(c.key + "/1t", e.one_thread->Key(), kConfirmRound, rep);
    ASSERT_NE(rec, nullptr) << "rep " << rep;
    placements.insert(rec->placement);
  }
  EXPECT_EQ(int(placements.size()), cfg.search.final_placements);
}

// The one-thread screen's best meets its own split refinements on one
// thread: v4 (even: a "staged" variant in the fake backend) is 6 % faster
// with stage tile 8192, and the entry's one-thread choice carries it,
// not the threaded winner's split.
TEST(Entry, OneThreadChoiceGetsItsOwnSplit) {
  FakeBackend be;
  MeasurementLog log;
  const TuneResult r = RunInMemory(be, OneCellConfig(), log);
  ASSERT_EQ(r.table.entries.size(), 1u);
  const tables::Entry& e = r.table.entries[0];
  ASSERT_GT(e.choice.split.threads, 1);
  ASSERT_TRUE(e.one_thread.has_value());
  EXPECT_EQ(e.one_thread->variant, "v4");
  EXPECT_EQ(e.one_thread->split.threads, 1);
  EXPECT_EQ(e.one_thread->split.stage_tile, 8192);
  EXPECT_NE(log.Find(r.cells[0].key + "/1t/split", e.one_thread->Key(), 0, 0), nullptr);
}

}  // namespace
}  // namespace actgrad::tune
