// The quick pass's plan (tools/tune/quick_plan.h): which cells fit the
// budget and in what priority, how much a cell is doubted, and the fallback
// entries kept where nothing was measured.
#include "tools/tune/quick_plan.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tools/tune/tuner.h"

namespace actgrad::tune {
namespace {

constexpr uint64_t kMiB = uint64_t(1) << 20;

MachineFacts Facts(std::vector<std::string> features, uint64_t l2, uint64_t llc, long cores) {
  MachineFacts f;
  f.features = VectorFeatures(features);
  f.l2 = l2, f.llc = llc, f.cores = cores;
  return f;
}

tables::Entry SeedEntry(Op op, DType dtype, tables::Layout layout, int octave) {
  tables::Entry e;
  e.op = op, e.dtype = dtype, e.layout = layout, e.octave = octave;
  e.choice.variant = "seed";
  return e;
}

QuickSeed Seed() {
  QuickSeed s;
  s.machine_id = "genuineintel-6-143";
  s.facts = Facts({"avx512f", "avx512_bf16", "avx512_fp16"}, 2 * kMiB, 105 * kMiB, 2);
  s.here = s.facts;
  s.entries = {SeedEntry(Op::kSeluBwd, DType::kF32, tables::Layout::kContig, 16),
               SeedEntry(Op::kSeluBwd, DType::kF16, tables::Layout::kContig, 16)};
  return s;
}

Cell At(Op op, DType dtype, int octave, const char* layout = "contig") {
  return Cell{op, dtype, layout, octave, RepresentativeN(octave, uint64_t(1) << 26)};
}

TEST(QuickPlan, DoubtNamesWhatDiffers) {
  QuickSeed s = Seed();
  EXPECT_EQ(Doubt(At(Op::kSeluBwd, DType::kF32, 16), s), 0);
  EXPECT_EQ(Doubt(At(Op::kSeluBwd, DType::kF32, 16, "strided"), s), 2);  // the fallback has no such series
  s.here = Facts({"avx512f", "avx512_bf16"}, 2 * kMiB, 105 * kMiB, 2);  // no AVX512-FP16 here
  EXPECT_EQ(Doubt(At(Op::kSeluBwd, DType::kF16, 16), s), 1);
  EXPECT_EQ(Doubt(At(Op::kSeluBwd, DType::kF32, 16), s), 0);
  s.here = Facts({"avx512f", "avx512_bf16", "avx512_fp16"}, 1 * kMiB, 105 * kMiB, 2);  // half the L2
  // A thread's share at octave 16 (92,672 f32 x 3 / 2 threads = 556 KB) fits both L2s.
  EXPECT_EQ(Doubt(At(Op::kSeluBwd, DType::kF32, 16), s), 0);
  Cell between = At(Op::kSeluBwd, DType::kF32, 16);
  between.n = 250000;  // 1.5 MB per thread: within the 2 MiB L2 there, beyond the 1 MiB here
  EXPECT_EQ(Doubt(between, s), 1);
  s.here.cores = 64;
  EXPECT_EQ(Doubt(At(Op::kSeluBwd, DType::kF32, 16), s), 0.5);
}

std::vector<CellSpec> AllCells(const TuneConfig& cfg) {
  TuneConfig whole = cfg;
  whole.fit_cells = false;
  return PlanCells(whole);
}

double Cost(const std::vector<CellSpec>& cells, const TuneConfig& cfg) {
  double c = 0;
  for (const auto& s : cells) c += MinimalCellCost(s.cell, cfg);
  return c;
}

TEST(QuickPlan, FitsTheBudgetCoarseOctavesFirst) {
  TuneConfig cfg = TuneConfig::Defaults(/*quick=*/true);
  const auto all = AllCells(cfg);
  const auto fit = FitCellsToBudget(all, cfg, nullptr);
  ASSERT_FALSE(fit.empty());
  EXPECT_LT(fit.size(), all.size());
  EXPECT_LE(Cost(fit, cfg), cfg.budget_sec);
  std::set<int> octaves;
  for (const auto& c : fit) octaves.insert(c.cell.octave);
  for (int k : {12, 16, 20, 24}) EXPECT_TRUE(octaves.count(k)) << k;
  // In the planned order (groups, layouts, sizes ascending), a subsequence of it.
  size_t j = 0;
  for (const auto& c : all)
    if (j < fit.size() && fit[j].key == c.key) ++j;
  EXPECT_EQ(j, fit.size());
  // A budget that holds everything keeps everything.
  cfg.budget_sec = 1e6;
  EXPECT_EQ(FitCellsToBudget(all, cfg, nullptr).size(), all.size());
  EXPECT_EQ(PlanCells(cfg).size(), all.size());
}

TEST(QuickPlan, DoubtedCellsComeFirst) {
  TuneConfig cfg = TuneConfig::Defaults(/*quick=*/true);
  cfg.ops = {Op::kSeluBwd};
  cfg.dtypes = {DType::kF32};
  cfg.layouts = {"contig", "strided"};
  const auto all = AllCells(cfg);
  cfg.budget_sec = 0;
  for (const auto& c : all) cfg.budget_sec += MinimalCellCost(c.cell, cfg);
  cfg.budget_sec *= 0.4 / ((1 - cfg.overhead_share) * (1 - cfg.screen_share));  // room for 40 %
  const QuickSeed s = Seed();  // no strided series: every strided cell doubted (2)
  size_t strided = 0;
  for (const auto& c : FitCellsToBudget(all, cfg, &s)) strided += c.cell.layout == "strided";
  size_t strided_without = 0;
  for (const auto& c : FitCellsToBudget(all, cfg, nullptr)) strided_without += c.cell.layout == "strided";
  EXPECT_GT(strided, strided_without);
}

TEST(QuickPlan, SeedEntriesFillOnlyUnmeasuredSeriesOfThePlan) {
  TuneConfig cfg = TuneConfig::Defaults(/*quick=*/true);
  cfg.ops = {Op::kSeluBwd};
  cfg.dtypes = {DType::kF32, DType::kBF16};
  cfg.layouts = {"contig"};
  QuickSeed s = Seed();
  s.entries.push_back(SeedEntry(Op::kSeluBwd, DType::kF32, tables::Layout::kContig, 18));
  s.entries.push_back(SeedEntry(Op::kSeluBwd, DType::kBF16, tables::Layout::kContig, 18));
  tables::Table t;
  t.entries.push_back(SeedEntry(Op::kSeluBwd, DType::kF32, tables::Layout::kContig, 18));
  t.entries.back().choice.variant = "tuned";
  // bf16 o18 only: f32 was measured (its o16 takes the nearest measured octave), f16 is outside the plan.
  EXPECT_EQ(AddSeedEntries(s, AllCells(cfg), &t), 1u);
  ASSERT_EQ(t.entries.size(), 2u);
  EXPECT_EQ(t.entries[0].choice.variant, "tuned");
  EXPECT_EQ(t.entries[1].dtype, DType::kBF16);
  EXPECT_EQ(t.entries[1].choice.variant, "seed");
}

// A seed of this machine's own table (a near-exact pass): its entries stay
// in every cell the run did not measure, in the measured series and outside
// the run's selection alike; a measured cell takes the run's entry.
TEST(QuickPlan, OwnTableSeedKeepsEveryCellTheRunDidNotMeasure) {
  TuneConfig cfg = TuneConfig::Defaults(/*quick=*/true);
  cfg.ops = {Op::kSeluBwd};
  cfg.dtypes = {DType::kF32};
  cfg.layouts = {"contig"};
  QuickSeed s = Seed();
  s.own = true;
  s.entries = {SeedEntry(Op::kSeluBwd, DType::kF32, tables::Layout::kContig, 16),
               SeedEntry(Op::kSeluBwd, DType::kF32, tables::Layout::kContig, 18),
               SeedEntry(Op::kHardswishBwd, DType::kF16, tables::Layout::kStrided, 18)};
  tables::Table t;
  t.entries.push_back(SeedEntry(Op::kSeluBwd, DType::kF32, tables::Layout::kContig, 18));
  t.entries.back().choice.variant = "tuned";
  EXPECT_EQ(AddSeedEntries(s, AllCells(cfg), &t), 2u);
  ASSERT_EQ(t.entries.size(), 3u);
  std::map<std::pair<Op, int>, std::string> by_cell;
  for (const auto& e : t.entries) by_cell[std::make_pair(e.op, e.octave)] = e.choice.variant;
  EXPECT_EQ(by_cell[std::make_pair(Op::kSeluBwd, 16)], "seed");
  EXPECT_EQ(by_cell[std::make_pair(Op::kSeluBwd, 18)], "tuned");
  EXPECT_EQ(by_cell[std::make_pair(Op::kHardswishBwd, 18)], "seed");
  // Another machine's table: the measured series and the cells outside the plan keep nothing.
  s.own = false;
  tables::Table u;
  u.entries.push_back(SeedEntry(Op::kSeluBwd, DType::kF32, tables::Layout::kContig, 18));
  EXPECT_EQ(AddSeedEntries(s, AllCells(cfg), &u), 0u);
}

}  // namespace
}  // namespace actgrad::tune
