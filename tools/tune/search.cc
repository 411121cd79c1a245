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

struct Search::Slot {
  Choice cand;
  std::map<std::pair<int, int>, double> got;  // (round, rep) -> sample
  std::vector<double> All() const {
    std::vector<double> v;
    for (const auto& [k, x] : got) v.push_back(x);
    return v;
  }
  std::vector<double> Round(int r) const {
    std::vector<double> v;
    for (const auto& [k, x] : got)
      if (k.first == r) v.push_back(x);
    return v;
  }
};

Search::Search(Backend& backend, MeasurementLog& log, SearchOptions opts, const std::atomic<bool>* stop)
    : backend_(backend), log_(log), opts_(opts), stop_(stop) {}

int Search::PlacementFor(int round, int rep) const {
  const bool spread = round == kFinalRound || round == kSecondLookRound || round == kConfirmRound;
  return spread ? rep % std::max(1, opts_.final_placements) : 0;
}

double Search::Sample(const std::string& cell, const Cell& b, const Choice& c, int round, int rep,
                      CellOutcome* out) {
  const std::string key = c.Key();
  const int placement = PlacementFor(round, rep);
  if (const LogRecord* r = log_.Find(cell, key, round, rep); r && !r->ns.empty()) {
    // The settings (placements included) match the log's header, so only a
    // log edited by hand or written by another tuner version gets here.
    if (r->placement != placement)
      throw LogMismatch("log: " + cell + " " + key + " round " + std::to_string(round) + " rep " +
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
  if (stop_ && stop_->load()) throw Interrupted();
  if (prepared_cell_ != cell || prepared_placement_ != placement) {  // untimed: set-up is not a sample's cost
    backend_.SetPlacement(placement);
    backend_.Prepare(b);
    prepared_cell_ = cell;
    prepared_placement_ = placement;
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<double> ns = backend_.Measure(b, c, 1, opts_.min_seconds);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (ns.empty() || !(ns[0] > 0) || !std::isfinite(ns[0]))
    throw std::runtime_error("backend " + backend_.Name() + " returned no valid sample for " + key + " in " + cell);
  LogRecord rec{cell, key, round, rep, ns, sec, placement};
  log_.Append(rec);
  spent_ += sec;
  out->cost_sec += sec;
  ++measured_;
  ++out->samples_measured;
  if (on_sample) on_sample();
  return ns[0];
}

std::pair<std::vector<double>, std::vector<double>> Search::Compare(const std::string& cell, const Cell& b,
                                                                    const Choice& a, const Choice& c,
                                                                    int reps) {
  CellOutcome scratch;
  std::vector<double> sa(size_t(std::max(reps, 0))), sc(sa.size());
  std::vector<int> placements;
  for (size_t k = 0; k < 2 * sa.size(); ++k) placements.push_back(PlacementFor(kConfirmRound, int(k / 2)));
  for (size_t k : PlacementOrder(placements, HashKey(opts_.seed, cell + "#confirm"))) {
    const size_t rep = k / 2;
    if (k % 2 == 0) sa[rep] = Sample(cell, b, a, kConfirmRound, int(rep), &scratch);
    else sc[rep] = Sample(cell, b, c, kConfirmRound, int(rep), &scratch);
  }
  return {sa, sc};
}

CellOutcome Search::RunCell(const std::string& cell, const Cell& b, std::vector<Choice> cands,
                            const Choice& incumbent, double budget_sec) {
  return Run(cell, b, std::move(cands), incumbent, 0, budget_sec);
}

CellOutcome Search::RunScreen(const std::string& cell, const Cell& b, std::vector<Choice> cands, int keep,
                              double budget_sec) {
  return Run(cell, b, std::move(cands), std::nullopt, std::max(1, keep), budget_sec);
}

CellOutcome Search::Run(const std::string& cell, const Cell& b, std::vector<Choice> cands,
                        std::optional<Choice> incumbent, int keep, double budget_sec) {
  CellOutcome out;
  out.key = cell;
  out.cell = b;
  out.budget_sec = budget_sec;
  const bool screen = !incumbent.has_value();

  // Slots: [0] is the incumbent (cell mode); challengers follow in prior order.
  std::vector<Slot> slots;
  if (!screen) slots.push_back(Slot{*incumbent, {}});
  for (auto& c : cands) {
    bool dup = false;
    for (const auto& s : slots) dup = dup || s.cand.Key() == c.Key();
    if (!dup) slots.push_back(Slot{std::move(c), {}});
  }
  out.candidates_total = int(slots.size());
  if (slots.empty()) throw std::runtime_error("no candidates for " + cell);
  const int first_challenger = screen ? 0 : 1;
  const int n_challengers = int(slots.size()) - first_challenger;

  // Probes: round 0, rep 0 of the incumbent (or the first candidate) and of
  // the next candidate price a sample (their logged cost, warm-up included:
  // so a resumed run plans the same). The incumbent may be much slower than
  // the rest (e.g. threads stalled by other processes): it is priced alone.
  double before = out.cost_sec;
  slots[0].got[{0, 0}] = Sample(cell, b, slots[0].cand, 0, 0, &out);
  const double cost0 = std::max(out.cost_sec - before, 1e-6);
  double cost1 = cost0;
  if (slots.size() > 1) {
    before = out.cost_sec;
    slots[1].got[{0, 0}] = Sample(cell, b, slots[1].cand, 0, 0, &out);
    cost1 = std::max(out.cost_sec - before, 1e-6);
  }
  const double unit_other = 1.15 * std::min(cost0, cost1);  // a typical candidate's sample
  const double unit_first = screen ? unit_other : 1.15 * cost0;  // the incumbent's

  const bool det = backend_.Deterministic();
  int finalists = std::max(2, opts_.finalists);
  int target = screen ? keep : finalists - 1;  // challengers left when halving stops
  int trait_extra = screen || det ? 0 : std::max(0, opts_.trait_finalists);  // planned as if always taken

  // Seconds of a plan: c challengers, base reps b0, final reps f. The
  // incumbent (cell mode) is measured in every round as well.
  auto plan_cost = [&](int c, int b0, int f) {
    if (det) return double(c + first_challenger) * unit_other;
    double ch = 0, inc = 0;
    int r = 0;
    if (screen) {
      for (;; ++r) {
        ch += double(c) * double(b0 << r);
        if (c <= target) break;
        c = std::max(target, (c + 1) / 2);
      }
      return ch * unit_other;
    }
    while (c > target) {
      ch += double(c) * double(b0 << r);
      inc += double(b0 << r);
      c = std::max(target, (c + 1) / 2);
      ++r;
    }
    ch += double(c + trait_extra) * double(f);
    inc += double(f);
    return ch * unit_other + inc * unit_first;
  };
  int base = std::max(1, opts_.max_base_reps), freps = std::max(1, opts_.final_reps);
  int nc = n_challengers;
  const int min_nc = std::min(n_challengers, screen ? keep + 1 : target);
  const double spent_probes = out.cost_sec;
  auto fits = [&] { return spent_probes + plan_cost(nc, base, freps) <= budget_sec; };
  while (!fits() && base > 1) --base;
  while (!fits() && freps > std::max(1, std::min(opts_.final_reps, opts_.min_final_reps))) --freps, out.budget_cut = true;
  while (!fits() && nc > min_nc) --nc, out.budget_cut = true;
  if (!fits() && !screen && finalists > 2) {  // last resort: the best challenger against the incumbent
    finalists = 2;
    target = 1;
    trait_extra = 0;
    nc = std::min(nc, 1);
    out.budget_cut = true;
  }
  if (!fits()) out.budget_cut = true;  // the minimal search overruns its share
  slots.resize(size_t(first_challenger + nc));
  out.candidates_searched = int(slots.size());

  auto median_of = [&](int i) { return Median(slots[size_t(i)].All()); };
  auto measure_round = [&](const std::vector<int>& who, int round, int reps) {
    std::vector<std::pair<int, int>> pairs;
    std::vector<int> placements;
    for (int i : who)
      for (int rep = 0; rep < reps; ++rep)
        if (!slots[size_t(i)].got.count({round, rep})) {
          pairs.push_back({i, rep});
          placements.push_back(PlacementFor(round, rep));
        }
    for (size_t k : PlacementOrder(placements, HashKey(opts_.seed, cell + "#" + std::to_string(round)))) {
      const auto [i, rep] = pairs[k];
      slots[size_t(i)].got[{round, rep}] = Sample(cell, b, slots[size_t(i)].cand, round, rep, &out);
    }
  };
  // Sorts indices by median (ties: prior order).
  auto by_median = [&](std::vector<int> v, auto&& med) {
    std::stable_sort(v.begin(), v.end(), [&](int a, int c) { return med(a) < med(c); });
    return v;
  };

  std::vector<int> challengers(static_cast<size_t>(nc));
  std::iota(challengers.begin(), challengers.end(), first_challenger);
  std::vector<std::vector<int>> eliminated;  // per round, best first

  if (det) {
    std::vector<int> all(slots.size());
    std::iota(all.begin(), all.end(), 0);
    measure_round(all, 0, 1);
    challengers = by_median(challengers, median_of);
  } else {
    for (int r = 0;; ++r) {
      if (!screen && int(challengers.size()) <= target) break;
      std::vector<int> who = challengers;
      if (!screen) who.insert(who.begin(), 0);
      measure_round(who, r, base << r);
      challengers = by_median(challengers, median_of);
      if (int(challengers.size()) <= target) break;
      const size_t next = size_t(std::max(target, int(challengers.size() + 1) / 2));
      eliminated.emplace_back(challengers.begin() + long(next), challengers.end());
      challengers.resize(next);
    }
  }

  // Ranking: survivors, then the eliminated, later rounds first.
  for (int i : challengers) out.ranking.push_back(slots[size_t(i)].cand);
  for (auto it = eliminated.rbegin(); it != eliminated.rend(); ++it)
    for (int i : *it) out.ranking.push_back(slots[size_t(i)].cand);

  auto stats = [&](int i, const std::vector<double>& samples) {
    CandidateStats s;
    s.cand = slots[size_t(i)].cand;
    s.samples = samples;
    s.median = Median(samples);
    s.spread_pct = SpreadPct(samples);
    return s;
  };

  if (screen) {
    const int best = challengers.front();
    out.chosen = stats(best, slots[size_t(best)].All());
    if (challengers.size() > 1) out.runner_up = stats(challengers[1], slots[size_t(challengers[1])].All());
    out.decision = "screen";
    return out;
  }

  // Trait finalists: for each trait value none of the finalists (incumbent
  // included) has, the best eliminated candidate that has it (later rounds
  // first, by median), when it is not far behind the leader.
  if (trait_extra > 0 && !challengers.empty()) {
    const auto traits_of = [&](int i) { return backend_.Traits(slots[size_t(i)].cand); };
    const double lead = median_of(challengers.front());
    const std::vector<std::string> incumbent_traits = traits_of(0);
    std::vector<int> order = challengers;
    for (auto it = eliminated.rbegin(); it != eliminated.rend(); ++it) order.insert(order.end(), it->begin(), it->end());
    const int top = KeepWithTraits(
        order, int(challengers.size()), traits_of, [&](int i) { return median_of(i) <= lead * opts_.trait_within; },
        trait_extra, std::set<std::string>(incumbent_traits.begin(), incumbent_traits.end()));
    challengers.assign(order.begin(), order.begin() + top);
  }

  // Final round: the surviving challengers and the incumbent, interleaved,
  // every finalist's samples spread alike over the placements (PlacementFor),
  // so that the medians and the U test below are over all of them.
  std::vector<int> finals = challengers;
  finals.insert(finals.begin(), 0);
  int final_round = kFinalRound;
  if (det) {
    final_round = 0;
  } else {
    measure_round(finals, kFinalRound, freps);
  }
  // A finalist's final samples: the final round, and the second look's
  // samples where it took one.
  auto final_samples = [&](int i) {
    std::vector<double> v = slots[size_t(i)].Round(final_round);
    for (double x : slots[size_t(i)].Round(kSecondLookRound)) v.push_back(x);
    return v;
  };
  auto final_median = [&](int i) { return Median(final_samples(i)); };
  finals = by_median(finals, final_median);
  // How finalist a compares with c: faster by the margin (a median gain of
  // at least min_gain, significant at `alpha` by the U test), or not, and
  // whether only the test stood in the way (the gain was there).
  struct Verdict {
    double gain = 0, p = 1;
    bool beats = false, undecided = false;
  };
  auto verdict = [&](int a, int c, double alpha) {
    const std::vector<double> sa = final_samples(a), sc = final_samples(c);
    Verdict v;
    v.gain = 1.0 - Median(sa) / Median(sc);
    v.p = det ? 0.0 : MannWhitneyLessP(sa, sc);
    v.beats = v.gain >= opts_.min_gain && v.p < alpha;
    v.undecided = !det && v.gain >= opts_.min_gain && v.p >= alpha;
    return v;
  };
  // The second look: where a gain of at least the margin failed the test
  // only, a and c get freps more samples each (round kSecondLookRound,
  // over the placements as the final round), and the pooled samples decide
  // at alpha / 2, so that the two looks together err at most 1.5 alpha.
  // Once per cell and pair, when the cell's budget has room for it (the
  // logged costs decide, so a resumed run looks again where this one did).
  // Before it, such a gain (Zen 4's table: 53 of 891 decisions with 5-25 %
  // median gains, p 0.1-0.6) was kept as "not significant" on 14 samples
  // spread over four placements.
  std::string look_notes;
  auto second_look = [&](int a, int c, Verdict v, const char* what) {
    if (!v.undecided) return v;
    const double cost = double(2 * freps) * unit_other;
    if (out.budget_cut || out.cost_sec + cost > budget_sec) {
      look_notes += std::string("; ") + what + ": no second look (budget)";
      return v;
    }
    measure_round({a, c}, kSecondLookRound, freps);
    const Verdict w = verdict(a, c, opts_.alpha / 2);
    look_notes += std::string("; ") + what + ": second look (first " + Fmt("%.1f", 100 * v.gain) + "% faster, p=" +
                  Fmt("%.3g", v.p) + "): " + Fmt("%.1f", 100 * w.gain) + "% faster, p=" + Fmt("%.3g", w.p) +
                  " over " + std::to_string(final_samples(a).size()) + " samples" +
                  (w.beats ? "" : ", not significant at " + Fmt("%.3g", opts_.alpha / 2));
    return w;
  };
  int best = finals.front();
  // Ties go to the preferred challenger (the backend's simplest, `preference`):
  // the fastest finalist outranks a simpler one only by the margin a
  // challenger needs against the incumbent, significantly (U test) and by at
  // least min_gain; otherwise the simpler one takes its place. Two runs then
  // pick the same candidate among near-equals instead of whichever drew the
  // luckier samples, at a cost below min_gain.
  std::string tie_note;
  if (best != 0 && preference) {
    for (int i : finals) {
      if (i == 0 || i == best || preference(slots[size_t(i)].cand) >= preference(slots[size_t(best)].cand)) continue;
      const Verdict v = second_look(best, i, verdict(best, i, opts_.alpha), "tie");
      if (v.beats) continue;
      tie_note = "; tie: the simpler " + slots[size_t(i)].cand.variant + " t" +
                 std::to_string(slots[size_t(i)].cand.split.threads) + " over " + slots[size_t(best)].cand.variant +
                 " t" + std::to_string(slots[size_t(best)].cand.split.threads) + " (" + Fmt("%.1f", 100 * v.gain) +
                 "% faster: " +
                 (v.gain < opts_.min_gain ? "below the " + Fmt("%.0f", 100 * opts_.min_gain) + "% margin"
                                          : "p=" + Fmt("%.3g", v.p) + ", not significant") +
                 ")";
      best = i;
    }
    if (best != finals.front()) {  // the finals' order with the tie's winner first
      std::erase(finals, best);
      finals.insert(finals.begin(), best);
    }
  }
  out.incumbent = stats(0, final_samples(0));
  int chosen = 0;
  if (best == 0) {
    out.decision = "incumbent is fastest";
  } else {
    // The tie's second looks never involve the incumbent: its look is this one.
    const Verdict v = second_look(best, 0, verdict(best, 0, opts_.alpha), "against the incumbent");
    out.p_value = v.p;
    if (v.beats) {
      chosen = best;
      out.challenger_won = true;
      out.decision = "challenger wins: " + Fmt("%.1f", 100 * v.gain) + "% faster" +
                     (det ? std::string() : ", p=" + Fmt("%.3g", out.p_value));
    } else if (!det && v.gain >= opts_.min_gain) {
      out.decision = "incumbent kept: challenger " + Fmt("%.1f", 100 * v.gain) + "% faster, p=" +
                     Fmt("%.3g", out.p_value) + ", not significant";
    } else {
      out.decision = "incumbent kept: challenger " + Fmt("%.1f", 100 * v.gain) + "% faster, below the " +
                     Fmt("%.0f", 100 * opts_.min_gain) + "% margin" +
                     (det ? std::string() : " (p=" + Fmt("%.3g", out.p_value) + ")");
    }
  }
  out.decision += tie_note + look_notes;
  out.chosen = stats(chosen, final_samples(chosen));
  for (int i : finals)
    if (i != chosen) {
      out.runner_up = stats(i, final_samples(i));
      break;
    }
  return out;
}

}  // namespace actgrad::tune
