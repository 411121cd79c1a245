// The table a run writes (--out): the check before
// measuring and the merge into an existing table of the same machine.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/tools/tune/table_entries.h"
#include "tests/tools/tune/temp_files.h"
#include "tiling/table.h"
#include "tools/tune/out_table.h"
#include "variants/variant.h"

namespace actgrad::tune {
namespace {

namespace fs = std::filesystem;
using tables::Entry;
using tables::Layout;
using tables::Table;
using testing::TempFiles;

constexpr const char* kMachine = "genuineintel-6-143";

using testing::EntryAt;

Table Make(const std::string& machine, std::vector<Entry> entries, const std::string& date) {
  Table t;
  t.machine_id = machine;
  t.provenance = {{"date", date}, {"command", "actgrad-tune " + date}, {"cores", 2}};
  t.entries = std::move(entries);
  return t;
}

// Four cells of SELU f32 contig, octaves 10..13.
Table Base() {
  std::vector<Entry> es;
  for (int h = 10; h <= 13; ++h) es.push_back(EntryAt(Op::kSeluBwd, DType::kF32, Layout::kContig, h));
  return Make(kMachine, es, "base");
}

using testing::ReadFile;

void Save(const std::string& path, const Table& t) {
  std::string err;
  ASSERT_TRUE(tables::SaveTableFile(path, t, &err)) << err;
}

TEST(OutPlan, RefusesAPathUnderARegularFile) {
  TempFiles tmp("actgrad_out_test_");
  std::ofstream(tmp.Path("afile")) << "x";
  OutPlan plan;
  std::string err;
  EXPECT_FALSE(PlanOut(tmp.Path("afile") + "/sub/t.json", kMachine, "cpu", true, &plan, &err));
  EXPECT_NE(err.find("afile exists and is not a directory"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(tmp.Path("afile") + "/sub/t.json.tmp"));
}

TEST(OutPlan, RefusesADirectoryEvenWithForce) {
  TempFiles tmp("actgrad_out_test_");
  fs::create_directories(tmp.Path("adir"));
  OutPlan plan;
  std::string err;
  EXPECT_FALSE(PlanOut(tmp.Path("adir"), kMachine, "cpu", true, &plan, &err));
  EXPECT_NE(err.find("adir is a directory"), std::string::npos) << err;
  EXPECT_FALSE(PlanOut(tmp.Path("missing") + "/", kMachine, "cpu", true, &plan, &err));
  EXPECT_NE(err.find("names a directory"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(tmp.Path("adir.tmp")));
}

TEST(OutPlan, RefusesAFifoWithoutReadingIt) {
  TempFiles tmp("actgrad_out_test_");
  ASSERT_EQ(mkfifo(tmp.Path("fifo").c_str(), 0600), 0);
  OutPlan plan;
  std::string err;
  EXPECT_FALSE(PlanOut(tmp.Path("fifo"), kMachine, "cpu", true, &plan, &err));
  EXPECT_NE(err.find("not a regular file"), std::string::npos) << err;
}

TEST(OutPlan, NewPathInDirectoriesToBeMadeCreatesNothing) {
  TempFiles tmp("actgrad_out_test_");
  const std::string path = tmp.Path("a") + "/b/t.json";
  OutPlan plan;
  std::string err;
  ASSERT_TRUE(PlanOut(path, kMachine, "cpu", false, &plan, &err)) << err;
  EXPECT_EQ(plan.action, OutPlan::Action::kCreate);
  EXPECT_FALSE(fs::exists(tmp.Path("a")));
}

TEST(OutPlan, MergesIntoATableOfThisMachineAndBackend) {
  TempFiles tmp("actgrad_out_test_");
  Save(tmp.Path("t.json"), Base());
  OutPlan plan;
  std::string err;
  ASSERT_TRUE(PlanOut(tmp.Path("t.json"), kMachine, "cpu", false, &plan, &err)) << err;
  EXPECT_EQ(plan.action, OutPlan::Action::kMerge);
  EXPECT_EQ(plan.existing.entries.size(), 4u);
}

TEST(OutPlan, RefusesAnotherMachineBackendOrAnInvalidFileUnlessForced) {
  TempFiles tmp("actgrad_out_test_");
  Save(tmp.Path("other.json"), Make("othervendor-0-0", Base().entries, "other"));
  Table atlas = Base();
  atlas.backend = "atlas-model";
  Save(tmp.Path("atlas.json"), atlas);
  std::ofstream(tmp.Path("bad.json")) << "{\"schema\": \"actgrad-tiling-table\", \"entries\": [";
  for (const char* name : {"other.json", "atlas.json", "bad.json"}) {
    SCOPED_TRACE(name);
    OutPlan plan;
    std::string err;
    EXPECT_FALSE(PlanOut(tmp.Path(name), kMachine, "cpu", false, &plan, &err));
    EXPECT_NE(err.find("--force"), std::string::npos) << err;
    ASSERT_TRUE(PlanOut(tmp.Path(name), kMachine, "cpu", true, &plan, &err)) << err;
    EXPECT_EQ(plan.action, OutPlan::Action::kReplace);
    EXPECT_FALSE(plan.replaced.empty());
  }
}

// A near-exact run never merges into a rule table (nor the reverse): its
// cells would sit beside choices of the other class. Forced, it replaces the
// file; a file of the run's class merges, and the merged table keeps the class.
TEST(OutPlan, RefusesATableOfAnotherAccuracyClassUnlessForced) {
  TempFiles tmp("actgrad_out_test_");
  Save(tmp.Path("rule.json"), Base());
  OutPlan plan;
  std::string err;
  EXPECT_FALSE(PlanOut(tmp.Path("rule.json"), kMachine, "cpu", false, &plan, &err, AccuracyClass::kNearExact));
  EXPECT_NE(err.find("accuracy class rule (this run: near-exact)"), std::string::npos) << err;
  EXPECT_NE(err.find("--force"), std::string::npos) << err;
  ASSERT_TRUE(PlanOut(tmp.Path("rule.json"), kMachine, "cpu", true, &plan, &err, AccuracyClass::kNearExact)) << err;
  EXPECT_EQ(plan.action, OutPlan::Action::kReplace);

  Table near = Base();
  near.accuracy_class = AccuracyClass::kNearExact;
  Save(tmp.Path("near.json"), near);
  EXPECT_FALSE(PlanOut(tmp.Path("near.json"), kMachine, "cpu", false, &plan, &err));  // a rule run
  ASSERT_TRUE(PlanOut(tmp.Path("near.json"), kMachine, "cpu", false, &plan, &err, AccuracyClass::kNearExact)) << err;
  EXPECT_EQ(plan.action, OutPlan::Action::kMerge);
  Table run = Make(kMachine, {EntryAt(Op::kSeluBwd, DType::kF32, Layout::kContig, 14)}, "run");
  run.accuracy_class = AccuracyClass::kNearExact;
  WriteOutcome wrote;
  ASSERT_TRUE(WriteRunTable(tmp.Path("near.json"), run, false, &wrote, &err)) << err;
  EXPECT_EQ(wrote.action, OutPlan::Action::kMerge);
  Table back;
  ASSERT_TRUE(tables::LoadTableFile(tmp.Path("near.json"), &back, &err)) << err;
  EXPECT_EQ(back.accuracy_class, AccuracyClass::kNearExact);
  EXPECT_EQ(back.entries.size(), 5u);
  // A rule run's table over the near-exact file: refused, the file untouched.
  run.accuracy_class = AccuracyClass::kRule;
  const std::string before = ReadFile(tmp.Path("near.json"));
  EXPECT_FALSE(WriteRunTable(tmp.Path("near.json"), run, false, &wrote, &err));
  EXPECT_EQ(ReadFile(tmp.Path("near.json")), before);
}

TEST(MergeTables, RunCellsReplaceTheirCellsTheOthersAreKept) {
  Table run = Make(kMachine,
                   {EntryAt(Op::kSeluBwd, DType::kF32, Layout::kContig, 14),        // added (after the base's)
                    EntryAt(Op::kSeluBwd, DType::kF32, Layout::kContig, 11, 2)},    // replaces octave 11
                   "run");
  MergeCounts c;
  const Table m = MergeTables(Base(), run, &c);
  EXPECT_EQ(c.added, 1u);
  EXPECT_EQ(c.replaced, 1u);
  EXPECT_EQ(c.kept, 3u);
  ASSERT_EQ(m.entries.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(m.entries[i].octave, 10 + i);  // sorted by cell
  EXPECT_EQ(m.entries[1].choice.split.threads, 2);  // the run's entry
  EXPECT_EQ(m.entries[0].choice.split.threads, 1);
  EXPECT_EQ(m.machine_id, kMachine);
  EXPECT_EQ(m.provenance["date"], "run");
  ASSERT_EQ(m.provenance["merged_from"].size(), 1u);
  EXPECT_EQ(m.provenance["merged_from"][0]["date"], "base");
  EXPECT_EQ(m.provenance["merged_from"][0]["entries"], 4);
  EXPECT_EQ(m.provenance["merged_from"][0]["kept"], 3);
  EXPECT_EQ(m.provenance["merge"]["entries"], 5);

  // A second merge keeps the history, oldest first.
  const Table m2 = MergeTables(m, Make(kMachine, {EntryAt(Op::kSeluBwd, DType::kF32, Layout::kContig, 10)}, "run2"), &c);
  EXPECT_EQ(c.kept, 4u);
  ASSERT_EQ(m2.provenance["merged_from"].size(), 2u);
  EXPECT_EQ(m2.provenance["merged_from"][0]["date"], "base");
  EXPECT_EQ(m2.provenance["merged_from"][1]["date"], "run");
}

TEST(MergeTables, ARunReplacingEveryEntryHasOnlyItsOwnProvenance) {
  Table run = Base();
  run.provenance = {{"date", "run"}};
  MergeCounts c;
  const Table m = MergeTables(Base(), run, &c);
  EXPECT_EQ(c.replaced, 4u);
  EXPECT_EQ(c.kept, 0u);
  EXPECT_EQ(m.provenance, run.provenance);
}

TEST(MergeTables, CellsDifferOnlyInLayoutOrOctaveAreDistinct) {
  Table run = Make(kMachine, {EntryAt(Op::kSeluBwd, DType::kF32, Layout::kBcast, 10)}, "run");
  MergeCounts c;
  EXPECT_EQ(MergeTables(Base(), run, &c).entries.size(), 5u);
  EXPECT_EQ(c.added, 1u);
  EXPECT_EQ(c.replaced, 0u);
}

TEST(WriteRunTable, MergesIntoTheFileAndTheFileValidates) {
  TempFiles tmp("actgrad_out_test_");
  Save(tmp.Path("t.json"), Base());
  WriteOutcome w;
  std::string err;
  ASSERT_TRUE(WriteRunTable(tmp.Path("t.json"),
                            Make(kMachine, {EntryAt(Op::kSeluBwd, DType::kF32, Layout::kContig, 12, 2)}, "run"), false,
                            &w, &err))
      << err;
  EXPECT_EQ(w.action, OutPlan::Action::kMerge);
  EXPECT_EQ(w.entries, 4u);
  EXPECT_EQ(w.counts.replaced, 1u);
  EXPECT_EQ(w.counts.kept, 3u);
  Table back;
  ASSERT_TRUE(tables::LoadTableFile(tmp.Path("t.json"), &back, &err)) << err;
  EXPECT_EQ(back.entries[2].choice.split.threads, 2);
  EXPECT_FALSE(fs::exists(tmp.Path("t.json.tmp")));
}

TEST(WriteRunTable, AnEmptyRunOrAMismatchLeavesTheFileAsItWas) {
  TempFiles tmp("actgrad_out_test_");
  Save(tmp.Path("t.json"), Base());
  const std::string before = ReadFile(tmp.Path("t.json"));
  WriteOutcome w;
  std::string err;
  EXPECT_FALSE(WriteRunTable(tmp.Path("t.json"), Make(kMachine, {}, "empty"), true, &w, &err));
  EXPECT_NE(err.find("no entries"), std::string::npos) << err;
  EXPECT_FALSE(WriteRunTable(tmp.Path("t.json"), Make("othervendor-0-0", {EntryAt(Op::kSeluBwd, DType::kF32,
                                                                                Layout::kContig, 12)}, "x"),
                             false, &w, &err));
  EXPECT_EQ(ReadFile(tmp.Path("t.json")), before);
}

TEST(WriteRunTable, AnUncreatableDirectoryIsAnErrorNotAnException) {
  TempFiles tmp("actgrad_out_test_");
  std::ofstream(tmp.Path("afile")) << "x";
  WriteOutcome w;
  std::string err;
  EXPECT_FALSE(WriteRunTable(tmp.Path("afile") + "/sub/t.json", Base(), true, &w, &err));
  EXPECT_NE(err.find("not a directory"), std::string::npos) << err;
}

}  // namespace
}  // namespace actgrad::tune
