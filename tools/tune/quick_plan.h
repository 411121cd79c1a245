// The quick pass (--quick): a plan that fits its budget, spent where the
// table a new machine falls back to (tiling/new_machine.h) is most likely
// wrong, and a table that keeps the fallback's choices where it measured
// nothing. docs/tuner-search.md, "The quick pass".
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tiling/fallback.h"
#include "tiling/table.h"
#include "tools/tune/backend.h"

namespace actgrad::tune {

struct TuneConfig;
struct CellSpec;

// What a quick pass starts from on a machine without a table of its own.
struct QuickSeed {
  std::string machine_id;              // the fallback table's
  std::vector<tables::Entry> entries;  // its entries, and those of the series it lacks from the next tables
  std::vector<bool> from_first;        // per entry: the fallback table's own (empty: all)
  MachineFacts facts;                  // its machine's facts
  MachineFacts here;                   // this machine's
  // This machine's own table: its entries are kept in every cell the run
  // did not measure, outside the run's selection too, since the run's table
  // replaces it in the user cache.
  bool own = false;
};

// How likely the fallback's choice for `cell` is wrong here, from the facts
// the choice depends on (0: nothing differs): no table of the chain has the
// cell's series (2), or only a table after the fallback's (1); 16-bit cells where the 16-bit features differ (1);
// the SIMD width differs (1); a thread's share of the call lies between the
// two machines' L2 sizes (1) or last-level caches (1); the core counts
// differ (0.5).
double Doubt(const Cell& cell, const QuickSeed& seed);

// Seconds the minimal search of a cell is expected to take (its probes, the
// final round of one challenger against the incumbent, the split and
// one-thread stages), from the sample's minimum length and the time of a
// call moving three operands at a modest bandwidth.
double MinimalCellCost(const Cell& cell, const TuneConfig& cfg);

// The cells, in their planned order, that fit the cells' share of the
// budget, chosen coarse to fine (octaves 12, 16, 20, 24 first, then the
// other even ones, then the odd ones), within a level the most doubted first
// (seed may be null: no doubt).
std::vector<CellSpec> FitCellsToBudget(const std::vector<CellSpec>& cells, const TuneConfig& cfg,
                                       const QuickSeed* seed);

// Adds to `table` the seed's entries of the series (op, dtype, GELU
// formula, layout) of `cells` (the run's whole plan) it measured nothing of:
// where it measured some octaves of a series, the others take the nearest
// measured octave (as the dispatch does for any gap), which predicts this
// machine better than another machine's entry. A seed of this machine's own
// table adds every entry whose cell the run did not measure, outside `cells`
// as well. Then moves disagreeing boundaries back to powers of two. Returns
// how many it added.
size_t AddSeedEntries(const QuickSeed& seed, const std::vector<CellSpec>& cells, tables::Table* table);

}  // namespace actgrad::tune
