// What a table was tuned among (tiling/freshness.h): the tuner's records
// per entry, their merge, and the cells that have candidates a table never
// measured, for parsed and compiled-in tables.
#include <gtest/gtest.h>

#include <string>

#include "tiling/dispatch.h"
#include "tiling/freshness.h"
#include "tiling/table.h"
#include "tests/tiling/posed_machines.h"

namespace actgrad {
namespace {

tables::Entry Cell(Op op, DType dtype, int octave) {
  tables::Entry e;
  e.op = op, e.dtype = dtype, e.octave = octave;
  e.choice.variant = DefaultVariant(op, dtype)->name;
  return e;
}

tables::Table TwoSeries() {
  tables::Table t;
  t.machine_id = "test-machine";
  t.provenance["date"] = "2026-12-01T10:00:00Z";
  for (int o : {12, 16, 20}) t.entries.push_back(Cell(Op::kSeluBwd, DType::kF16, o));
  t.entries.push_back(Cell(Op::kLogitGrad, DType::kF32, 16));
  return t;
}

bool RunsHere(const Variant& v) { return v.supported; }

TEST(Freshness, ATableTunedAmongWhatRunsNowHasNoStaleCell) {
  tables::Table t = TwoSeries();
  RecordTunedAmong(&t, 15, "2026-12-01T10:00:00Z", RunsHere);
  const Freshness f = FreshnessOf(RecordsOf(t), RunsHere);
  EXPECT_EQ(f.cells, 4u);
  EXPECT_EQ(f.stale_cells, 0u);
  EXPECT_EQ(f.unrecorded_cells, 0u);
  EXPECT_EQ(f.candidates_tuned, f.candidates_now);
  EXPECT_EQ(f.candidates_now, SeriesCandidates(Op::kSeluBwd, DType::kF16, GeluApprox::kNone, RunsHere).size() +
                                  SeriesCandidates(Op::kLogitGrad, DType::kF32, GeluApprox::kNone, RunsHere).size());
  EXPECT_EQ(f.search_version_min, 15);
  EXPECT_EQ(f.tuned_first, "2026-12-01");
  EXPECT_EQ(f.Summary(), "tuned among " + std::to_string(f.candidates_now) + " of " +
                             std::to_string(f.candidates_now) +
                             " candidates now available; 0 of 4 cells have new candidates; tuned 2026-12-01");
}

// Tuned before the SELU f16 family's first variant existed: that series'
// three cells have a new candidate, named; LogitGrad's cell does not.
TEST(Freshness, CellsWhoseSeriesGrewAreStaleAndTheNewCandidatesNamed) {
  const std::vector<std::string> selu = SeriesCandidates(Op::kSeluBwd, DType::kF16, GeluApprox::kNone, RunsHere);
  ASSERT_GE(selu.size(), 2u);
  const std::string late = selu.back();
  tables::Table t = TwoSeries();
  RecordTunedAmong(&t, 14, "2026-11-29T10:00:00Z", [&](const Variant& v) { return v.supported && v.name != late; });
  // Through the file format: the records survive a save and a load.
  const std::string path = ::testing::TempDir() + "freshness_" + std::to_string(getpid()) + ".json";
  std::string error;
  ASSERT_TRUE(tables::SaveTableFile(path, t, &error)) << error;
  tables::Table read;
  ASSERT_TRUE(tables::LoadTableFile(path, &read, &error)) << error;
  std::remove(path.c_str());
  const Freshness f = FreshnessOf(RecordsOf(read), RunsHere);
  EXPECT_EQ(f.stale_cells, 3u);
  EXPECT_EQ(f.unrecorded_cells, 0u);
  EXPECT_EQ(f.candidates_tuned + 1, f.candidates_now);
  ASSERT_EQ(f.new_candidates.size(), 1u);
  EXPECT_EQ(f.new_candidates.begin()->first, "selu_bwd f16");
  EXPECT_EQ(f.new_candidates.begin()->second, std::vector<std::string>{late});
  EXPECT_NE(f.Summary().find("3 of 4 cells have new candidates; tuned 2026-11-29"), std::string::npos) << f.Summary();
}

TEST(Freshness, EntriesWithoutARecordCountAsStale) {
  const tables::Table t = TwoSeries();
  const Freshness f = FreshnessOf(RecordsOf(t), RunsHere);
  EXPECT_EQ(f.stale_cells, 4u);
  EXPECT_EQ(f.unrecorded_cells, 4u);
  EXPECT_EQ(f.tuned_first, "2026-12-01");  // the run's date stands in
  EXPECT_NE(f.Summary().find("candidate sets not recorded"), std::string::npos) << f.Summary();
}

// A merge keeps the sets its entries still name, from both sides, and no other.
TEST(Freshness, MergeKeepsTheSetsItsEntriesName) {
  tables::Table base = TwoSeries(), run = TwoSeries();
  RecordTunedAmong(&base, 14, "2026-11-29T10:00:00Z", [](const Variant& v) { return v.supported && v.unroll != 8; });
  RecordTunedAmong(&run, 15, "2026-12-05T10:00:00Z", RunsHere);
  run.entries.resize(1);  // the run re-tuned SELU f16 at octave 12 only
  std::vector<tables::Entry> merged = base.entries;
  merged[0] = run.entries[0];
  const nlohmann::json sets = MergedCandidateSets(base, run, merged);
  for (const tables::Entry& e : merged) EXPECT_TRUE(sets.contains(e.extra["tuning"]["candidate_set"].get<std::string>()));
  tables::Table only_run = run;
  only_run.provenance["candidate_sets"] = MergedCandidateSets(base, run, run.entries);
  EXPECT_EQ(only_run.provenance["candidate_sets"].size(), 1u);
}

// The committed tables, each as its own machine: the dispatch's count of
// cells matches the table's, and what it reports is what FreshnessOf says.
TEST(Freshness, CommittedTablesReportTheirCells) {
  for (const tables::CompiledTable* t : PosedTables()) {
    if (t->count == 0) continue;
    ::testing::internal::CaptureStderr();
    PoseAsMachine(CompiledTableFacts(*t));
    ::testing::internal::GetCapturedStderr();
    ASSERT_EQ(ActiveTable().machine_id, t->machine_id);
    const Freshness& f = ActiveTableFreshness();
    EXPECT_EQ(f.cells, t->count) << t->machine_id;
    EXPECT_LE(f.stale_cells, f.cells);
    EXPECT_LE(f.candidates_tuned, f.candidates_now);
    EXPECT_FALSE(f.tuned_first.empty()) << t->machine_id;
  }
  ReloadTilingTable();
}

}  // namespace
}  // namespace actgrad
