#include "tools/tune/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <utility>

#include "tools/inputs/hash.h"
#include "tools/tune/stats.h"
#include "tools/tune/strategy.h"
#include "tools/tune/strings.h"

namespace actgrad::tune {

using inputs::SplitMix64;

uint64_t HashKey(uint64_t seed, const std::string& key) {
  uint64_t h = inputs::Fnv1a(key, inputs::kFnvBasis ^ seed);  // FNV-1a, then mixed
  return SplitMix64(&h);
}

std::vector<size_t> SeededPermutation(size_t n, uint64_t seed) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t(0));
  uint64_t s = seed;
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[SplitMix64(&s) % i]);
  return p;
}

std::vector<size_t> PlacementOrder(const std::vector<int>& placements, uint64_t seed) {
  std::vector<size_t> order = SeededPermutation(placements.size(), seed);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return placements[a] < placements[b]; });
  return order;
}

std::string PlacementList(int count) {
  std::string s;
  for (int k = 0; k < std::max(count, 1); ++k) {
    if (k) s += ',';  // not ("," + to_string): GCC 12's -Wrestrict misfires on operator+(const char*, string&&)
    s += std::to_string(k);
  }
  return s;
}

Search::Search(Backend& backend, MeasurementLog& log, SearchOptions opts, const std::atomic<bool>* stop)
    : space_(backend), runner_(backend), identity_(backend), log_(log), opts_(opts), stop_(stop) {}

double Search::Now() const {
  if (opts_.clock) return opts_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int Search::PlacementFor(int round, int rep) const {
  const bool spread = round == kFinalRound || round == kSecondLookRound || round == kConfirmRound;
  return spread ? rep % std::max(1, opts_.final_placements) : 0;
}

double Search::Sample(const std::string& key, const Cell& cell, const Choice& c, int round, int rep,
                      CellOutcome* out) {
  const std::string cand_key = c.Key();
  const int placement = PlacementFor(round, rep);
  if (const LogRecord* r = log_.Find(key, cand_key, round, rep); r && !r->ns.empty()) {
    // The settings (placements included) match the log's header, so only a
    // log edited by hand or written by another tuner version gets here.
    if (r->placement != placement)
      throw LogMismatch("log: " + key + " " + cand_key + " round " + std::to_string(round) + " rep " +
                        std::to_string(rep) + " was measured at placement " + std::to_string(r->placement) +
                        ", this run measures it at placement " + std::to_string(placement) +
                        " (a log of another tuner version? use --fresh)");
    spent_ += r->sec;
    out->cost_sec += r->sec;
    ++replayed_;
    ++out->samples_replayed;
    if (on_sample) on_sample();
    return r->ns[0];
  }
  // Not in this run's log: a sample of another search's log under the same
  // measurement key (MeasurementLog's cache), recorded as this run's own.
  if (const LogRecord* c = log_.TakeCached(key, cand_key, placement)) {
    LogRecord rec{key, cand_key, round, rep, c->ns, c->sec, placement, true};
    log_.Append(rec);
    spent_ += rec.sec;
    out->cost_sec += rec.sec;
    ++cached_;
    ++out->samples_cached;
    if (on_sample) on_sample();
    return rec.ns[0];
  }
  if (stop_ && stop_->load()) throw Interrupted();
  if (prepared_key_ != key || prepared_placement_ != placement) {  // untimed: set-up is not a sample's cost
    runner_.SetPlacement(placement);
    runner_.Prepare(cell);
    prepared_key_ = key;
    prepared_placement_ = placement;
  }
  const double t0 = Now();
  std::vector<double> ns = runner_.Measure(cell, c, 1, opts_.min_seconds);
  const double sec = Now() - t0;
  if (ns.empty() || !(ns[0] > 0) || !std::isfinite(ns[0]))
    throw std::runtime_error("backend " + identity_.Name() + " returned no valid sample for " + cand_key + " in " + key);
  LogRecord rec{key, cand_key, round, rep, ns, sec, placement};
  log_.Append(rec);
  spent_ += sec;
  out->cost_sec += sec;
  ++measured_;
  ++out->samples_measured;
  if (on_sample) on_sample();
  return ns[0];
}

std::pair<std::vector<double>, std::vector<double>> Search::Compare(const std::string& key, const Cell& cell,
                                                                    const Choice& a, const Choice& c,
                                                                    int reps) {
  CellOutcome scratch;
  std::vector<double> sa(size_t(std::max(reps, 0))), sc(sa.size());
  std::vector<int> placements;
  for (size_t k = 0; k < 2 * sa.size(); ++k) placements.push_back(PlacementFor(kConfirmRound, int(k / 2)));
  for (size_t k : PlacementOrder(placements, HashKey(opts_.seed, key + "#confirm"))) {
    const size_t rep = k / 2;
    if (k % 2 == 0) sa[rep] = Sample(key, cell, a, kConfirmRound, int(rep), &scratch);
    else sc[rep] = Sample(key, cell, c, kConfirmRound, int(rep), &scratch);
  }
  return {sa, sc};
}

CellOutcome Search::RunCell(const std::string& key, const Cell& cell, std::vector<Choice> cands,
                            const Choice& incumbent, double budget_sec) {
  return Run(HalvingUTest(), key, cell, std::move(cands), incumbent, budget_sec);
}

CellOutcome Search::RunScreen(const std::string& key, const Cell& cell, std::vector<Choice> cands, int keep,
                              double budget_sec) {
  return Run(Screen(std::max(1, keep)), key, cell, std::move(cands), std::nullopt, budget_sec);
}

CellOutcome Search::Run(const Strategy& strategy, const std::string& key, const Cell& cell, std::vector<Choice> cands,
                        std::optional<Choice> incumbent, double budget_sec) {
  CellOutcome out;
  out.key = key;
  out.cell = cell;
  out.budget_sec = budget_sec;
  CellSearch run(*this, key, cell, budget_sec, &out);
  run.has_incumbent = incumbent.has_value();
  if (run.has_incumbent) run.slots.push_back(Slot{*incumbent, {}});
  for (auto& c : cands) {
    bool dup = false;
    for (const auto& s : run.slots) dup = dup || s.cand.Key() == c.Key();
    if (!dup) run.slots.push_back(Slot{std::move(c), {}});
  }
  out.candidates_total = int(run.slots.size());
  if (run.slots.empty()) throw std::runtime_error("no candidates for " + key);
  strategy.Run(run);
  return out;
}

const SearchOptions& CellSearch::options() const { return search_.opts_; }
bool CellSearch::deterministic() const { return search_.runner_.Deterministic(); }
std::vector<std::string> CellSearch::Traits(int slot) const { return search_.space_.Traits(slots[size_t(slot)].cand); }
bool CellSearch::has_preference() const { return bool(search_.preference); }
int CellSearch::Preference(int slot) const { return search_.preference(slots[size_t(slot)].cand); }

void CellSearch::Measure(int slot, int round, int rep) {
  Slot& s = slots[size_t(slot)];
  s.got[{round, rep}] = search_.Sample(key_, cell_, s.cand, round, rep, &out_);
}

void CellSearch::MeasureRound(const std::vector<int>& who, int round, int reps) {
  std::vector<std::pair<int, int>> pairs;  // (slot, rep)
  std::vector<int> placements;
  for (int i : who)
    for (int rep = 0; rep < reps; ++rep)
      if (!slots[size_t(i)].got.count({round, rep})) {
        pairs.push_back({i, rep});
        placements.push_back(search_.PlacementFor(round, rep));
      }
  for (size_t k : PlacementOrder(placements, HashKey(search_.opts_.seed, key_ + "#" + std::to_string(round))))
    Measure(pairs[k].first, round, pairs[k].second);
}

double CellSearch::MedianOf(int slot) const { return Median(slots[size_t(slot)].All()); }

CandidateStats CellSearch::Stats(int slot, const std::vector<double>& samples) const {
  CandidateStats s;
  s.cand = slots[size_t(slot)].cand;
  s.samples = samples;
  s.median = Median(samples);
  s.spread_pct = SpreadPct(samples);
  return s;
}

}  // namespace actgrad::tune
