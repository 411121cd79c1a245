// Per series: thread counts become thread rules (FitGrains), and where
// adjacent octaves' winners differ in threads the tuner bisects the size
// between them and moves the entries' boundary there (FitSeries).
#include <gtest/gtest.h>

#include "fake_backend.h"
#include "tiling/table.h"
#include "tools/tune/series.h"
#include "tools/tune/tuner.h"
#include "variants/variant.h"

namespace actgrad::tune {
namespace {

using testing::FakeBackend;

std::vector<SeriesPoint> Points(const std::vector<int>& threads, int first_octave = 10) {
  std::vector<SeriesPoint> p;
  for (size_t i = 0; i < threads.size(); ++i) {
    const int h = first_octave + int(i);
    p.push_back({h, RepresentativeN(h, uint64_t(1) << 30), threads[i], 1e3 * double(1 << i), OctaveLo(h)});
  }
  return p;
}

TEST(Series, GrainsFromMeasuredThreadCounts) {
  // Two cores: one thread up to octave 12, both from octave 13 on, whose
  // entry serves from 11000 (a crossover moved its boundary).
  std::vector<SeriesPoint> p = Points({1, 1, 1, 2, 2, 2});
  p[3].lo = 11000;
  std::string source;
  const std::vector<uint64_t> g = FitGrains(p, 2, &source);
  EXPECT_EQ(source, "measured");
  EXPECT_EQ(g, (std::vector<uint64_t>{0, 0, 0, 5504, 5504, 5504}));  // 11000 / 2, whole cache lines
  // That rule, on 2 cores, gives the counts measured at every tuned size;
  // on 64 cores, a thread per 6016 elements.
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(ThreadRule{g[i]}.Threads(p[i].n, 2), p[i].threads);
  EXPECT_EQ(ThreadRule{g[5]}.Threads(uint64_t(1) << 24, 64), 64);
  EXPECT_EQ(ThreadRule{g[3]}.Threads(10000, 64), 1);
}

TEST(Series, FewerThreadsThanCoresKeepTheirCount) {
  // Eight cores: 2 threads won at octave 14, 8 from 15 on.
  const std::vector<SeriesPoint> p = Points({1, 1, 1, 1, 2, 8, 8});
  const std::vector<uint64_t> g = FitGrains(p, 8);
  const uint64_t first = 8192;  // octave 14's lo / 2
  EXPECT_EQ(g[4], std::max<uint64_t>(first, (p[4].n / 2 + 63) / 64 * 64));
  EXPECT_EQ(ThreadRule{g[4]}.Threads(p[4].n, 64), 2);
  EXPECT_EQ(g[5], first);
  EXPECT_EQ(g[6], first);
}

TEST(Series, NoThreadedWinnerMeansOneThreadEverywhere) {
  const std::vector<uint64_t> g = FitGrains(Points({1, 1, 1, 1}), 4);
  EXPECT_EQ(g, (std::vector<uint64_t>{0, 0, 0, 0}));
  // A one-thread winner above threaded ones keeps one thread (as measured).
  EXPECT_EQ(FitGrains(Points({1, 2, 1, 2}), 2)[2], 0u);
}

TEST(Series, OneCoreTunesUseThePrior) {
  // One core: no thread count was ever measured; a thread's share must take
  // kParallelWorthNs on one thread.
  std::vector<SeriesPoint> p = Points({1, 1});
  p[0].n = 1 << 20, p[0].median_ns = 0.1 * double(1 << 20);  // 0.1 ns per element
  p[1].n = 1 << 24, p[1].median_ns = 0.1 * double(1 << 24);
  std::string source;
  const std::vector<uint64_t> g = FitGrains(p, 1, &source);
  EXPECT_EQ(source, "prior");
  EXPECT_EQ(g[0], 40000u);  // 4000 ns / 0.1 ns, whole cache lines
  EXPECT_EQ(ThreadRule{g[1]}.Threads(uint64_t(16) << 20, 2), 2);  // 16M on two cores: both
  EXPECT_EQ(ThreadRule{g[0]}.Threads(60000, 2), 1);
}

// A schema-3 table (thread counts) gets thread rules from its own counts:
// the committed tables of machines not at hand (actgrad-tune fit-rules).
TEST(Series, FitRulesFromASchemaThreeTable) {
  nlohmann::json j = {{"schema", "actgrad-tiling-table"}, {"version", 3}, {"machine_id", "m"}, {"backend", "cpu"},
                      {"provenance", {{"omp_max_threads", 2}}}, {"entries", nlohmann::json::array()}};
  const std::string v = [] {
    for (const Variant& x : Variants())
      if (x.op == Op::kSeluBwd && x.dtype == DType::kF32) return x.name;
    return std::string();
  }();
  const int threads[] = {1, 1, 2, 2};
  for (int i = 0; i < 4; ++i)
    j["entries"].push_back({{"op", "selu_bwd"}, {"dtype", "f32"}, {"octave", 12 + i}, {"variant", v},
                            {"threads", threads[i]}, {"median_ns", 1000.0 * (1 << i)},
                            {"extra", {{"tuning", {{"n", RepresentativeN(12 + i, 1 << 26)}}}}}});
  tables::Table t;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(j.dump(), &t, &err)) << err;
  size_t fitted = 0;
  ASSERT_TRUE(FitRulesFromCounts(&t, &fitted, &err)) << err;
  EXPECT_EQ(fitted, 4u);
  EXPECT_EQ(t.entries[0].rule->grain, 0u);
  EXPECT_EQ(t.entries[1].rule->grain, 0u);
  EXPECT_EQ(t.entries[2].rule->grain, 8192u);  // octave 14 from 16384, 2 threads
  EXPECT_EQ(t.entries[3].rule->grain, 8192u);
  // The same counts at the tuned sizes, more threads on more cores.
  for (const auto& e : t.entries)
    EXPECT_EQ(e.At(e.extra["tuning"]["n"].get<uint64_t>(), 2).split.threads, e.extra["tuning"]["threads"].get<int>());
  EXPECT_EQ(t.entries[3].At(uint64_t(1) << 24, 64).split.threads, 64);
  // Written as schema 4, it loads.
  tables::Table back;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(t).dump(), &back, &err)) << err;
  EXPECT_EQ(back.entries[2].rule, t.entries[2].rule);
  // No core count: refused.
  j["provenance"] = nlohmann::json::object();
  ASSERT_TRUE(tables::ParseTable(j.dump(), &t, &err)) << err;
  EXPECT_FALSE(FitRulesFromCounts(&t, &fitted, &err));
  EXPECT_NE(err.find("no core count"), std::string::npos);
}

// The fake backend's threads (4) win from about 28K elements on: one octave
// winner runs 1 thread, the next 4, and the bisection puts the boundary
// near the true crossover of the two winners.
TEST(Series, TunerBisectsThreadCrossoversAndWritesRules) {
  TuneConfig cfg = TuneConfig::Defaults(false);
  cfg.ops = {Op::kSeluBwd};
  cfg.dtypes = {DType::kF32};
  cfg.octaves = {12, 13, 14, 15, 16, 17};
  cfg.budget_sec = 1e6;
  FakeBackend be;
  be.variants = 2;
  MeasurementLog log;
  log.OpenInMemory(cfg.ToJson());
  auto progress = Progress::Silent();
  const TuneResult r = RunTuning(be, log, cfg, *progress);
  ASSERT_EQ(r.table.entries.size(), 6u);
  ASSERT_FALSE(r.crossovers.empty());
  // Where threads change, the boundary moved to the bisected size.
  int changes = 0;
  for (size_t i = 0; i + 1 < r.cells.size(); ++i) {
    const CellOutcome &a = r.cells[i], &b = r.cells[i + 1];
    const tables::Entry &ea = r.table.entries[i], &eb = r.table.entries[i + 1];
    EXPECT_EQ(ea.Hi(), eb.Lo());
    if (a.chosen.cand.split.threads == b.chosen.cand.split.threads) continue;
    ++changes;
    const uint64_t x = eb.Lo();
    SCOPED_TRACE("crossover at " + std::to_string(x));
    EXPECT_GT(x, a.cell.n);
    EXPECT_LT(x, b.cell.n);
    // Within two bisection steps of where the two choices' true times cross.
    auto faster_b = [&](uint64_t n) {
      Cell c = a.cell;
      c.n = n, c.octave = SizeOctave(n);
      return FakeBackend::TrueTime(c, b.chosen.cand) < FakeBackend::TrueTime(c, a.chosen.cand);
    };
    EXPECT_TRUE(faster_b(uint64_t(double(x) * 1.2)));
    EXPECT_FALSE(faster_b(uint64_t(double(x) / 1.2)));
    EXPECT_TRUE(eb.extra["tuning"].contains("crossover") || ea.extra["tuning"].contains("crossover"));
  }
  EXPECT_EQ(changes, 1);
  // Every entry has a rule; one thread below the crossover, a thread per
  // crossover / 4 from it on.
  for (const auto& e : r.table.entries) {
    ASSERT_TRUE(e.rule.has_value());
    EXPECT_EQ(e.extra["tuning"]["thread_rule"], "measured");
  }
  // The table validates and the dispatch arithmetic holds.
  tables::Table back;
  std::string err;
  ASSERT_TRUE(tables::ParseTable(tables::ToJson(r.table).dump(), &back, &err, /*check_variants=*/false)) << err;
  // A resumed run replays every sample, the bisections' included, and
  // writes the same table.
  FakeBackend again;
  again.variants = 2;
  const TuneResult r2 = RunTuning(again, log, cfg, *progress);
  EXPECT_EQ(r2.measured, 0);
  EXPECT_EQ(again.calls, 0);
  EXPECT_EQ(tables::ToJson(r2.table)["entries"], tables::ToJson(r.table)["entries"]);
}

}  // namespace
}  // namespace actgrad::tune
