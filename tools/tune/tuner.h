// The tuning run: which cells, how the budget is split, screening, the
// per-cell search, the table; and --verify. Backend-independent.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "actgrad/types.h"
#include "tiling/size_cells.h"
#include "tiling/table.h"
#include "tools/tune/backend.h"
#include "tools/tune/quick_plan.h"
#include "tools/tune/log.h"
#include "tools/tune/progress.h"
#include "tools/tune/search.h"
#include "tools/tune/series.h"
#include "tools/tune/thresholds.h"

namespace actgrad::tune {

inline constexpr const char* kToolVersion = "0.1.0";

// The ops a run tunes by default (--ops all).
inline std::vector<Op> AllTunedOps() {
  return {Op::kSeluBwd, Op::kHardswishBwd, Op::kGeluBwd, Op::kSoftshrinkBwd, Op::kLogitGrad};
}

// Bump when the search changes how it walks: a log of another version is
// not resumed (its samples, keyed by round and repetition, would be asked
// for in another order); it becomes the new log's cache, whose samples are
// reused by cell, candidate and placement (MeasuredPart). The value is part
// of every log header and of every table entry the tuner writes
// (extra.tuning.search_version, tiling/freshness.h).
inline constexpr int kSearchVersion = 15;

struct TuneConfig {
  std::vector<Op> ops = AllTunedOps();
  std::vector<DType> dtypes = {DType::kF32, DType::kF16, DType::kBF16};
  std::vector<int> octaves = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26};
  std::vector<std::string> layouts = {"contig", "bcast"};
  std::vector<GeluApprox> gelu_modes = {GeluApprox::kNone, GeluApprox::kTanh};
  double budget_sec = 600;
  bool quick = false;
  uint64_t max_n = uint64_t(1) << 26;  // largest n measured (octave 26 is measured at 64M)
  int screen_keep = 6;                 // variants kept per screening size
  std::vector<int> screen_octaves = {16, 20};
  double overhead_share = 0.10;  // of the budget, left for set-up (data, warm-ups are in the samples)
  double screen_share = 0.10;    // of the measurement budget, for screening
  double refine_share = 0.20;    // of a cell's allowance, for its split refinements (RefineSplit)
  double one_thread_share = 0.10;  // of a cell's allowance, for a threaded winner's one-thread choice
  SearchOptions search;
  SeriesOptions series;  // crossovers and thread rules (tools/tune/series.h)
  // Where cells are measured: each octave's representative n (what a tuning
  // run uses), the sizes between them (2^(h+1) - 3: the top of octave h,
  // sqrt(2) past the size it was tuned at, where the dispatch switches to the
  // next octave's entry), or both. --check uses the latter two.
  enum class Points { kTuned, kBetween, kBoth };
  Points points = Points::kTuned;
  // The incumbent of every cell: unset means the backend's default; --check
  // sets the shipping dispatch's choice. `incumbent_name` names it in the log header.
  std::function<Choice(const Cell&)> incumbent;
  std::string incumbent_name = "default";
  // --check: when the search finds a choice more than confirm_above faster
  // than the incumbent, re-measure the two with confirm_reps fresh
  // interleaved samples each (CellOutcome::confirmed). 0 = off.
  int confirm_reps = 0;
  double confirm_above = kCheckTolerance;
  // --shard K/N (tools/tune/shard.h): PlanCells returns shard K's series
  // only (1-based; shard_count 0 = the whole run).
  int shard_index = 0, shard_count = 0;
  // --quick: PlanCells keeps the cells that fit the budget (FitCellsToBudget).
  bool fit_cells = false;
  // --quick on a machine without a table of its own (quick_plan.h): each
  // cell's incumbent is the fallback table's choice, the default is its
  // first challenger, and cells the budget leaves out keep its entries.
  std::shared_ptr<const QuickSeed> seed;
  // --check: the cells judge the shipping table; they make none.
  bool judging = false;

  static TuneConfig Defaults(bool quick);
  // Everything that changes the search path (the log header compares it).
  nlohmann::json ToJson() const;
};

// The fields of a log header's config (TuneConfig::ToJson plus the backend,
// machine id and accuracy gate cmd_tune adds) that change what a sample of a
// given cell key and candidate measures: the backend, the machine, the
// sample's length (search.min_seconds) and max_n (a cell key's n). The
// others are search settings or the run's selection; a log that differs
// from the run's in those only is the run's cache
// (MeasurementLog::SetMeasuredPart).
nlohmann::json MeasuredPart(const nlohmann::json& config);

struct CellSpec {
  Cell cell;
  std::string key;
  std::string group;  // op/dtype/mode
  double weight = 1;
};

std::string CellKey(const Cell& cell);
std::string GroupKey(const Cell& cell);
// The cells of a run, grouped by (op, dtype, GELU mode), layouts and sizes
// ascending. bcast only for ops that broadcast, dtypes per op (FactsOf).
std::vector<CellSpec> PlanCells(const TuneConfig& cfg);

struct TuneResult {
  tables::Table table;
  std::vector<CellOutcome> cells;
  std::vector<std::string> notes;  // skipped cells, failures
  double spent_sec = 0;            // measurement time (logged), replayed and cached included
  int measured = 0, replayed = 0;
  int cached = 0;                  // taken from the log's cache (MeasurementLog::TakeCached)
  int budget_cut_cells = 0;
  std::vector<std::string> crossovers;  // "<series> octave h: n (why)"
};

// A cell's regret: its choice's median over the best median of the final
// round that chose it (1 = the choice was the fastest measured; > 1 when the
// incumbent was kept against a challenger not significantly faster).
double Regret(const CellOutcome& o);
// --check: the shipping choice's (the incumbent's) time over the best
// finalist's of the same final round.
double ShippingRegret(const CellOutcome& o);

// Runs (or resumes) a tuning run. Throws Interrupted when *stop is raised.
TuneResult RunTuning(Backend& backend, MeasurementLog& log, const TuneConfig& cfg, Progress& progress,
                     const std::atomic<bool>* stop = nullptr);

// one_thread_fallback: also store the best one-thread choice of a
// multi-thread winner (Backend::CallersCapThreads).
// `incumbent`: what the cell's incumbent was ("default", "fallback"), the
// name of its block in the entry's tuning notes.
tables::Entry ToEntry(const CellOutcome& o, bool one_thread_fallback = true, const std::string& incumbent = "default");

struct VerifyRow {
  Cell cell;
  Choice entry, base;  // the table's choice and the baseline's (the default, or the fallback table's)
  double entry_ns = 0, base_ns = 0, speedup = 1, p_value = 1;
  double p_slower = 1;  // one-sided U test the other way: the table's choice slower than the baseline
  bool same = false;  // the entry is the baseline's choice
  std::string note;
};

// The choice a table is verified against in a cell.
using Baseline = std::function<Choice(const Cell&)>;

// Re-measures each entry of `table` (within cfg's ops/dtypes/octaves/layouts)
// against `baseline` (empty: the backend's default), interleaved, `reps`
// samples each.
std::vector<VerifyRow> RunVerify(Backend& backend, const tables::Table& table, const TuneConfig& cfg, int reps,
                                 Progress& progress, const std::atomic<bool>* stop = nullptr,
                                 const Baseline& baseline = {});
// Per-octave speed-ups and the geometric mean per op/dtype (and layout);
// `baseline` names what the table was measured against.
std::string FormatVerify(const std::vector<VerifyRow>& rows, const std::string& baseline = "the default");
// The rows as JSON (cell, choices, medians, speed-up, p-values), for reports.
nlohmann::json VerifyJson(const std::vector<VerifyRow>& rows);

// --check: a RunTuning result whose incumbents were the shipping choices.
// Per cell: the shipping choice against the best the search found at that
// size (same interleaved final round), and whether it is within `tolerance`
// (0.05: at most 5 % slower); then the verdicts per op/dtype.
std::string FormatCheck(const TuneResult& res, double tolerance);

}  // namespace actgrad::tune
