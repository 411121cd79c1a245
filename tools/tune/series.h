// A series is one op, dtype, GELU mode and layout over all its size octaves.
// Once its cells are tuned, two things are fitted over the whole series
// (docs/tuning.md "Thread rules and crossovers"):
//  - crossovers: where two adjacent octaves' winners differ in thread count
//    or store type, the size between their tuned sizes is bisected, and the
//    boundary between the two entries moves to where the upper one starts
//    to win (tables::Entry::size_lo/size_hi);
//  - thread rules: the thread counts measured per octave become grains
//    (ThreadRule: a thread per grain elements), which carry to machines with
//    more cores than the one that tuned.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "tiling/table.h"
#include "tools/tune/backend.h"
#include "tools/tune/search.h"

namespace actgrad::tune {

// What a thread rule is fitted from: one tuned octave of a series.
struct SeriesPoint {
  int octave = 0;
  uint64_t n = 0;       // the size it was tuned at
  int threads = 1;      // the winner's thread count there
  double median_ns = 0; // the winner's time at n
  uint64_t lo = 0;      // the first size the entry serves (a crossover may have moved it)
};

// Without a second core the tuner cannot see threads pay off; a one-core
// table then gives a thread a share whose one-thread time is at least this
// (measured two-core crossovers from one to two threads fall where a
// thread's share takes about 0.4-3.4 us; 4 us errs towards fewer threads).
inline constexpr double kParallelWorthNs = 4000;

// The grains of a series' entries, in the order of `points` (octaves
// ascending). max_threads is the most threads any candidate used (the
// tuner's cores). How (docs/tuning.md):
//  - max_threads 1 ("prior"): grain = the elements whose one-thread time is
//    kParallelWorthNs (points' median_ns / n), whole cache lines;
//  - else ("measured"): octaves where one thread won get grain 0 (one
//    thread) up to the first octave where more won; that octave's first size
//    (its lo) divided by its thread count is the series' grain g: octaves
//    that used every core take g, so a bigger machine runs more threads
//    there; octaves that used fewer than every core take n / threads (at
//    least g), keeping the count they measured.
// `source` (optional) receives "prior" or "measured".
std::vector<uint64_t> FitGrains(const std::vector<SeriesPoint>& points, int max_threads, std::string* source = nullptr);

struct SeriesOptions {
  int bisect_steps = 3;  // halvings of the log-size interval: 2^(1/8) = 9 % apart after 3
  int bisect_reps = 4;   // interleaved samples of each side per step (over the placements)
  int max_threads = 1;   // the most threads a candidate uses
};

struct Crossover {
  int octave = 0;        // between this octave's entry and the next one's
  uint64_t n = 0;        // the size from which the upper entry serves
  std::string why;       // "threads 1 -> 2", "stores plain -> nt"
};

struct SeriesFit {
  std::vector<Crossover> crossovers;
  std::string rule_source;  // "prior" or "measured"
};

// Fits crossovers, then thread rules, into `entries` (this series' entries,
// octaves ascending; outcomes alike). Bisection samples go through the
// search's log (cell "<series>/x<octave>@<n>"), so a resumed run replays them.
SeriesFit FitSeries(Search& search, Backend& backend, const std::string& series,
                    const std::vector<const CellOutcome*>& outcomes, const std::vector<tables::Entry*>& entries,
                    const SeriesOptions& opts);

// For a table tuned before thread rules (schema 3 and before: absolute thread
// counts): thread rules fitted from its entries' counts and medians with
// FitGrains, per series, `max_threads` the cores it was tuned with (its
// provenance: omp_max_threads, else cores). Crossovers cannot be bisected
// without the machine, so boundaries stay at the powers of two. Entries that
// already have a rule are left alone. Returns the entries given a rule;
// `error` when the provenance names no core count.
bool FitRulesFromCounts(tables::Table* table, size_t* fitted, std::string* error);

}  // namespace actgrad::tune
