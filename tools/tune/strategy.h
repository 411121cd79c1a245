// The search strategy of one cell, a replaceable unit: Search::Run sets up a
// CellSearch (the candidates as slots, the cell, its budget) and hands it to
// a Strategy, which decides what to measure and what wins. Every sample goes
// through CellSearch::MeasureRound (the measurement log: a logged sample is
// replayed, not measured again), so a strategy's decisions rest on sample
// values and logged costs only and a resumed run walks the same path.
//
// Two strategies:
//   HalvingUTest  a cell's search against its incumbent: successive halving,
//                 trait finalists, an interleaved final round over the
//                 placements, the Mann-Whitney U test with a second look and
//                 ties to the simpler candidate (search.h describes it);
//   Screen        successive halving without an incumbent, stopping once at
//                 most `keep` candidates survive; it ranks them all.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tools/tune/backend.h"
#include "tools/tune/search.h"

namespace actgrad::tune {

// One candidate of a cell's search and its samples so far.
struct Slot {
  Choice cand;
  std::map<std::pair<int, int>, double> got;  // (round, rep) -> sample (ns)
  std::vector<double> All() const;            // every round's, in (round, rep) order
  std::vector<double> Round(int r) const;
};

// A cell's search in progress: what a Strategy reads and measures through.
class CellSearch {
 public:
  CellSearch(Search& search, const std::string& key, const Cell& cell, double budget_sec, CellOutcome* out)
      : search_(search), key_(key), cell_(cell), budget_sec_(budget_sec), out_(*out) {}

  // [0] is the incumbent when the search has one; challengers follow in
  // prior order (simplest or most promising first). A strategy may drop the
  // last ones (when the budget cuts candidates).
  std::vector<Slot> slots;
  bool has_incumbent = false;

  const std::string& key() const { return key_; }  // the cell's log key
  const Cell& cell() const { return cell_; }
  double budget_sec() const { return budget_sec_; }
  // Whether the cell's budget has room for `more` seconds beyond its cost so far.
  bool Affords(double more) const { return out_.cost_sec + more <= budget_sec_; }
  CellOutcome& out() { return out_; }
  const SearchOptions& options() const;
  bool deterministic() const;
  std::vector<std::string> Traits(int slot) const;
  // Search::preference of slot i's candidate (lower = simpler); unset: none.
  bool has_preference() const;
  int Preference(int slot) const;

  // Repetitions 0..reps-1 of `round` for the slots `who` that lack them,
  // interleaved in a seeded order grouped by placement (PlacementOrder).
  void MeasureRound(const std::vector<int>& who, int round, int reps);
  // One sample: repetition `rep` of `round` of slot i.
  void Measure(int slot, int round, int rep);
  double MedianOf(int slot) const;  // over every sample so far
  CandidateStats Stats(int slot, const std::vector<double>& samples) const;

 private:
  Search& search_;
  const std::string& key_;
  const Cell& cell_;
  double budget_sec_;
  CellOutcome& out_;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  // Searches run.slots and fills run.out(): chosen, runner_up, ranking,
  // decision, the budget fields.
  virtual void Run(CellSearch& run) const = 0;
};

class HalvingUTest final : public Strategy {
 public:
  void Run(CellSearch& run) const override;
};

class Screen final : public Strategy {
 public:
  explicit Screen(int keep) : keep_(keep) {}
  void Run(CellSearch& run) const override;

 private:
  int keep_;
};

}  // namespace actgrad::tune
