// The tuner's search, independent of the measurement backend. Search sets
// up a cell's candidates and measures through the log; what to measure and
// what wins is a Strategy's (tools/tune/strategy.h). RunCell's strategy,
// HalvingUTest: successive halving over a cell's candidates with interleaved, shuffled (seeded)
// rounds, then a final interleaved round of the best few against the
// incumbent and a one-sided Mann-Whitney U test. The incumbent stays unless
// the challenger is faster with p < alpha and a median gain >= min_gain;
// among the challengers, the same margin decides: one that does not beat a
// simpler one (`preference`) by it yields to the simpler one. Where a gain of
// at least min_gain failed the test only, the two take a second look (as many
// samples again each, pooled, p < alpha / 2) before the verdict. RunScreen's
// strategy, Screen: the halving without an incumbent.
// The screening and halving rounds measure on placement 0 (operand layout,
// Backend::SetPlacement); the final round spreads every finalist's samples
// over placements 0..final_placements-1 alike, so that a choice never rests
// on one lucky layout.
//
// Every sample goes through the measurement log: a sample whose (cell,
// candidate, round, rep) is logged is replayed, not re-measured; one that is
// not is taken from the log's cache (another search's samples of the same
// cell, candidate and placement) while it has any, and measured only then.
// All of the
// search's decisions (including how it fits the budget) depend only on
// sample values and logged costs, so a resumed run walks the same path.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tools/inputs/placement.h"
#include "tools/tune/backend.h"
#include "tools/tune/log.h"
#include "tools/tune/thresholds.h"

namespace actgrad::tune {

class Strategy;

struct SearchOptions {
  double min_seconds = 0.0015;  // wall time of one sample (the CPU backend loops the kernel)
  int final_reps = 14;          // samples per finalist in the final round
  int min_final_reps = 5;       // ... when the budget is short
  int finalists = 3;            // candidates in the final round, the incumbent included
  int max_base_reps = 2;        // samples per candidate in round 0 when the budget allows
  // Besides the halving's survivors, at most this many more finalists: the
  // best candidate of each Backend::Traits value no finalist has, if its
  // median so far is within trait_within of the leader's.
  int trait_finalists = 2;
  double trait_within = 1.5;
  double alpha = kAlpha;        // significance level of the U test (thresholds.h)
  double min_gain = kMinGain;   // a challenger must also be this much faster (median)
  uint64_t seed = 1;
  // Placements of the final round (and of --check's confirmation round):
  // repetition r at placement r % final_placements (inputs::PlacementAt);
  // 1 = every sample on placement 0.
  int final_placements = inputs::kDefaultPlacements;
  // Seconds on a monotonic clock, read around each measured sample: its cost
  // (the budget's clock). Unset: std::chrono::steady_clock. Tests set a fake
  // clock that moves only when their fake runner says a sample took time.
  std::function<double()> clock;
};

// Samples of one candidate (ns per call at the cell's n).
struct CandidateStats {
  Choice cand;
  std::vector<double> samples;
  double median = 0;
  double spread_pct = 0;
};

struct CellOutcome {
  std::string key;  // log key of the cell
  Cell cell;
  CandidateStats chosen;
  CandidateStats incumbent;
  std::optional<CandidateStats> runner_up;
  bool challenger_won = false;
  double p_value = 1.0;
  std::string decision;
  std::vector<Choice> ranking;  // the challengers, best first (screening; the one-thread stage's candidates)
  // A threaded winner's one-thread choice (Entry::one_thread), from a screen
  // of its own (tuner.cc ChooseOneThread); unset: none was made.
  std::optional<CandidateStats> one_thread;
  int candidates_total = 0;          // offered
  int candidates_searched = 0;       // after fitting the budget
  bool budget_cut = false;           // candidates or repetitions were cut to fit
  int samples_measured = 0, samples_replayed = 0, samples_cached = 0;
  double cost_sec = 0;               // measurement time (logged) of the cell
  double budget_sec = 0;             // what it was allowed
  // --check only: fresh interleaved samples of the incumbent (the shipping
  // choice) against `chosen`, taken after the search picked it. The search's
  // own final round is what made `chosen` the best of several noisy
  // estimates, so its ratio is biased towards the challenger.
  struct Confirmation {
    double ratio = 1;   // median(incumbent) / median(chosen): > 1 = incumbent slower
    double p = 1;       // one-sided U test, chosen faster than the incumbent
    int reps = 0;
  };
  std::optional<Confirmation> confirmed;
  // --check only: fresh interleaved samples of the shipping choice against
  // the untuned default (ratio = median(shipping) / median(default): > 1 =
  // shipping slower; p: one-sided U test, the default faster). Unset where
  // the shipping choice is the default.
  std::optional<Confirmation> vs_default;
};

// Thrown when the stop flag is raised (Ctrl-C): the log keeps everything
// measured so far.
class Interrupted : public std::exception {
 public:
  const char* what() const noexcept override { return "interrupted"; }
};

class Search {
 public:
  Search(Backend& backend, MeasurementLog& log, SearchOptions opts, const std::atomic<bool>* stop = nullptr);

  // Tunes one cell. `cands` are in order of prior preference (simplest or
  // most promising first); the incumbent is added when missing and is never
  // eliminated before the final round.
  CellOutcome RunCell(const std::string& key, const Cell& cell, std::vector<Choice> cands,
                      const Choice& incumbent, double budget_sec);

  // Screening: successive halving without an incumbent, stopping once at
  // most `keep` candidates survive; `ranking` orders all candidates.
  CellOutcome RunScreen(const std::string& key, const Cell& cell, std::vector<Choice> cands, int keep,
                        double budget_sec);

  // `reps` fresh samples each of a and c, interleaved in a seeded order,
  // logged (round kConfirmRound) so that a resumed run replays them.
  std::pair<std::vector<double>, std::vector<double>> Compare(const std::string& key, const Cell& cell,
                                                              const Choice& a, const Choice& c, int reps);

  // Virtual clock: the summed logged cost of every sample this Search used.
  double spent() const { return spent_; }
  int measured() const { return measured_; }
  int replayed() const { return replayed_; }
  int cached() const { return cached_; }  // taken from the log's cache
  const SearchOptions& options() const { return opts_; }

  // Called after every sample (for progress displays).
  std::function<void()> on_sample;
  // Lower = simpler (the backend's order of candidates: the default first,
  // fewer threads before more); the final round gives a tie to the simpler
  // finalist (Run). Unset: the fastest median wins ties.
  std::function<int(const Choice&)> preference;

 private:
  friend class CellSearch;
  // Sets up the cell's slots (the incumbent first, duplicates dropped) and
  // lets `strategy` search them (tools/tune/strategy.h).
  CellOutcome Run(const Strategy& strategy, const std::string& key, const Cell& cell, std::vector<Choice> cands,
                  std::optional<Choice> incumbent, double budget_sec);
  double Sample(const std::string& key, const Cell& cell, const Choice& c, int round, int rep,
                CellOutcome* out);
  // Where repetition `rep` of `round` is measured: the final round, its
  // second look and the confirmation rounds cycle through the placements,
  // the others use 0.
  int PlacementFor(int round, int rep) const;
  double Now() const;  // SearchOptions::clock

  // The backend's parts: the space's traits pick trait finalists, the
  // runner measures, the identity names the backend in errors.
  const SearchSpace& space_;
  Runner& runner_;
  const Identity& identity_;
  MeasurementLog& log_;
  SearchOptions opts_;
  const std::atomic<bool>* stop_;
  double spent_ = 0;
  int measured_ = 0, replayed_ = 0, cached_ = 0;
  std::string prepared_key_;  // the cell Runner::Prepare last ran for ...
  int prepared_placement_ = 0;  // ... and the placement
};

// The log key of the final round (rounds of the halving count from 0).
inline constexpr int kFinalRound = 100;
inline constexpr int kConfirmRound = 101;  // Search::Compare
// The final round's second look (Search::Run): more samples of two
// finalists whose gain failed the U test only.
inline constexpr int kSecondLookRound = 102;

// Deterministic shuffle (Fisher-Yates over a splitmix64 stream): the same
// seed and key give the same order on every platform.
uint64_t HashKey(uint64_t seed, const std::string& key);

// Survivors that cover every trait value: the first `keep` of `order` (best
// first) and, moved up right behind them, the best-ranked item of each trait
// value (`traits(item)`, e.g. "stores=nt") that neither they nor `covered`
// have, at most `max_extra` of them and only items `eligible` accepts.
// Returns how many lead `order` now. Used for a screen's survivors (a screen
// at cache-resident sizes ranks every streaming-store variant low, but the
// cells past the last-level cache need one) and for the final round's trait
// finalists.
template <class T, class TraitsOf, class Eligible>
int KeepWithTraits(std::vector<T>& order, int keep, TraitsOf&& traits, Eligible&& eligible,
                   int max_extra = std::numeric_limits<int>::max(), std::set<std::string> covered = {}) {
  int top = std::min<int>(std::max(keep, 0), int(order.size()));
  for (int r = 0; r < top; ++r)
    for (const auto& t : traits(order[size_t(r)])) covered.insert(t);
  for (size_t r = size_t(top); r < order.size() && max_extra > 0; ++r) {
    const std::vector<std::string> t = traits(order[r]);
    if (std::all_of(t.begin(), t.end(), [&](const std::string& s) { return covered.count(s) > 0; })) continue;
    if (!eligible(order[r])) continue;
    covered.insert(t.begin(), t.end());
    std::rotate(order.begin() + top, order.begin() + long(r), order.begin() + long(r) + 1);
    ++top;
    --max_extra;
  }
  return top;
}
std::vector<size_t> SeededPermutation(size_t n, uint64_t seed);

// The order of an interleaved round whose sample k is taken at placement
// placements[k]: a seeded shuffle (SeededPermutation), then grouped by
// placement, ascending, the shuffle kept within each group. A placement
// switch costs the CPU backend a copy of its operands and fresh warm-ups, so
// a round over P placements switches P times instead of at nearly every
// sample; within a group all the round's candidates are interleaved, so
// drift still hits them alike. With one placement it is
// SeededPermutation(n, seed).
std::vector<size_t> PlacementOrder(const std::vector<int>& placements, uint64_t seed);

// "0,1,2,3": the placements 0..count-1, for provenance and reports.
std::string PlacementList(int count);

}  // namespace actgrad::tune
