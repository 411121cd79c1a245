#include "tools/tune/quick_plan.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <tuple>

#include "tools/tune/tuner.h"

namespace actgrad::tune {

namespace {

bool Has(const MachineFacts& f, const char* feature) {
  return std::find(f.features.begin(), f.features.end(), feature) != f.features.end();
}

// Whether the two machines differ in any of `features`.
bool Differ(const MachineFacts& a, const MachineFacts& b, std::initializer_list<const char*> features) {
  for (const char* f : features)
    if (Has(a, f) != Has(b, f)) return true;
  return false;
}

bool Between(uint64_t v, uint64_t a, uint64_t b) {
  return a && b && a != b && v > std::min(a, b) && v <= std::max(a, b);
}

// 0 for octaves 12, 16, 20, 24 (4K, 64K, 1M, 16M), 1 for the other even ones, 2 for the odd.
int Level(int octave) { return octave % 4 == 0 ? 0 : octave % 2 == 0 ? 1 : 2; }

// A call's operands moved at this rate, one thread (bytes/s): well below
// any server's, so the estimate errs long.
constexpr double kModestBandwidth = 8e9;
// Samples of a minimal search: 2 probes, the final round of the incumbent
// and one challenger (2 x 4), the split and one-thread stages' (about 12).
constexpr double kMinimalSamples = 22;

}  // namespace

double Doubt(const Cell& cell, const QuickSeed& seed) {
  bool series = false, first = false;
  for (size_t i = 0; i < seed.entries.size(); ++i) {
    const tables::Entry& e = seed.entries[i];
    if (e.op != cell.op || e.dtype != cell.dtype || e.mode != cell.mode || tables::LayoutName(e.layout) != cell.layout)
      continue;
    series = true;
    first |= i >= seed.from_first.size() || seed.from_first[i];
  }
  if (!series) return 2;
  const MachineFacts &a = seed.here, &b = seed.facts;
  double doubt = first ? 0 : 1;
  if (DTypeSize(cell.dtype) == 2 &&
      Differ(a, b, {"f16c", "avx512_bf16", "avx512_fp16", "amx_bf16", "asimdhp", "fphp", "bf16", "svebf16"}))
    doubt += 1;
  if (Differ(a, b, {"avx2", "avx512f", "avx512bw", "sve", "sve2"})) doubt += 1;
  const uint64_t share = 3 * cell.n * DTypeSize(cell.dtype) / uint64_t(std::max(1L, a.cores));
  if (Between(share, a.l2, b.l2)) doubt += 1;
  if (Between(share, a.llc, b.llc)) doubt += 1;
  if (a.cores && b.cores && a.cores != b.cores) doubt += 0.5;
  return doubt;
}

double MinimalCellCost(const Cell& cell, const TuneConfig& cfg) {
  const double call = 2e-6 + 3.0 * double(cell.n) * double(DTypeSize(cell.dtype)) / kModestBandwidth;
  return kMinimalSamples * std::max(cfg.search.min_seconds, call);
}

std::vector<CellSpec> FitCellsToBudget(const std::vector<CellSpec>& cells, const TuneConfig& cfg,
                                       const QuickSeed* seed) {
  const double room = cfg.budget_sec * (1.0 - cfg.overhead_share) * (1.0 - cfg.screen_share);
  std::vector<std::tuple<int, double, size_t>> order;  // (level, -doubt, index): lower first
  for (size_t i = 0; i < cells.size(); ++i)
    order.emplace_back(Level(cells[i].cell.octave), seed ? -Doubt(cells[i].cell, *seed) : 0.0, i);
  std::stable_sort(order.begin(), order.end());
  std::vector<bool> keep(cells.size(), false);
  double planned = 0;
  for (const auto& [level, doubt, i] : order) {
    const double cost = MinimalCellCost(cells[i].cell, cfg);
    if (planned + cost > room) continue;  // a cheaper, later cell may still fit
    planned += cost;
    keep[i] = true;
  }
  std::vector<CellSpec> out;
  for (size_t i = 0; i < cells.size(); ++i)
    if (keep[i]) out.push_back(cells[i]);
  return out;
}

// Whether the run measured something that replaces seed entry e: another
// machine's entry gives way to any measured octave of its series (the
// nearest one predicts this machine better), this machine's own only to its
// own cell measured again.
bool Superseded(const QuickSeed& seed, const tables::Entry& e, const std::set<tables::SeriesKey>& series,
                const std::set<tables::CellKey>& cells) {
  return seed.own ? cells.count(tables::CellOf(e)) > 0 : series.count(tables::SeriesOf(e)) > 0;
}

size_t AddSeedEntries(const QuickSeed& seed, const std::vector<CellSpec>& cells, tables::Table* table) {
  std::set<tables::SeriesKey> measured;
  std::set<tables::CellKey> measured_cells;
  for (const auto& e : table->entries) measured.insert(tables::SeriesOf(e)), measured_cells.insert(tables::CellOf(e));
  std::set<tables::CellKey> planned;
  for (const auto& c : cells) {
    tables::Layout layout = tables::Layout::kContig;
    if (!tables::ParseLayout(c.cell.layout, &layout)) continue;
    planned.insert({int(c.cell.op), int(c.cell.dtype), int(c.cell.mode), int(layout), c.cell.octave});
  }
  size_t added = 0;
  for (const auto& e : seed.entries) {
    if (Superseded(seed, e, measured, measured_cells) || (!seed.own && !planned.count(tables::CellOf(e)))) continue;
    table->entries.push_back(e);
    ++added;
  }
  tables::ResetDisagreeingBoundaries(&table->entries);
  return added;
}

}  // namespace actgrad::tune
