#include "tools/tune/strategy.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "tools/tune/stats.h"
#include "tools/tune/strings.h"

namespace actgrad::tune {

std::vector<double> Slot::All() const {
  std::vector<double> v;
  for (const auto& [k, x] : got) v.push_back(x);
  return v;
}

std::vector<double> Slot::Round(int r) const {
  std::vector<double> v;
  for (const auto& [k, x] : got)
    if (k.first == r) v.push_back(x);
  return v;
}

namespace {

// Sorts slot indices by `med` (ties: prior order).
template <class MedianOf>
std::vector<int> ByMedian(std::vector<int> v, MedianOf&& med) {
  std::stable_sort(v.begin(), v.end(), [&](int a, int c) { return med(a) < med(c); });
  return v;
}

// The successive halving both strategies run: two probe samples price a
// sample, the plan (candidates, base and final repetitions) is fitted to the
// budget, then rounds of doubling repetitions halve the challengers.
struct Halving {
  // keep > 0: a screen (no incumbent) that stops at `keep` survivors.
  Halving(CellSearch& run, int keep);
  void ProbeAndFit();
  void Rounds();
  // Survivors, then the eliminated, later rounds first.
  void Rank();
  double PlanCost(int c, int b0, int f) const;

  CellSearch& run;
  const SearchOptions& opts;
  const bool screen, det;
  const int keep, first_challenger, n_challengers;
  double unit_other = 0, unit_first = 0;  // a typical candidate's sample, the incumbent's (seconds)
  int finalists, target, trait_extra, base = 1, freps = 1, nc = 0;
  std::vector<int> challengers;
  std::vector<std::vector<int>> eliminated;  // per round, best first
};

Halving::Halving(CellSearch& r, int k)
    : run(r),
      opts(r.options()),
      screen(!r.has_incumbent),
      det(r.deterministic()),
      keep(k),
      first_challenger(screen ? 0 : 1),
      n_challengers(int(r.slots.size()) - first_challenger),
      finalists(std::max(2, opts.finalists)),
      target(screen ? keep : finalists - 1),
      // planned as if always taken
      trait_extra(screen || det ? 0 : std::max(0, opts.trait_finalists)) {}

// Seconds of a plan: c challengers, base reps b0, final reps f. The
// incumbent (cell mode) is measured in every round as well.
double Halving::PlanCost(int c, int b0, int f) const {
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
}

void Halving::ProbeAndFit() {
  CellOutcome& out = run.out();
  // Probes: round 0, rep 0 of the incumbent (or the first candidate) and of
  // the next candidate price a sample (their logged cost, warm-up included:
  // so a resumed run plans the same). The incumbent may be much slower than
  // the rest (e.g. threads stalled by other processes): it is priced alone.
  double before = out.cost_sec;
  run.Measure(0, 0, 0);
  const double cost0 = std::max(out.cost_sec - before, 1e-6);
  double cost1 = cost0;
  if (run.slots.size() > 1) {
    before = out.cost_sec;
    run.Measure(1, 0, 0);
    cost1 = std::max(out.cost_sec - before, 1e-6);
  }
  unit_other = 1.15 * std::min(cost0, cost1);
  unit_first = screen ? unit_other : 1.15 * cost0;

  base = std::max(1, opts.max_base_reps);
  freps = std::max(1, opts.final_reps);
  nc = n_challengers;
  const int min_nc = std::min(n_challengers, screen ? keep + 1 : target);
  auto fits = [&] { return run.Affords(PlanCost(nc, base, freps)); };
  while (!fits() && base > 1) --base;
  while (!fits() && freps > std::max(1, std::min(opts.final_reps, opts.min_final_reps))) --freps, out.budget_cut = true;
  while (!fits() && nc > min_nc) --nc, out.budget_cut = true;
  if (!fits() && !screen && finalists > 2) {  // last resort: the best challenger against the incumbent
    finalists = 2;
    target = 1;
    trait_extra = 0;
    nc = std::min(nc, 1);
    out.budget_cut = true;
  }
  if (!fits()) out.budget_cut = true;  // the minimal search overruns its share
  run.slots.resize(size_t(first_challenger + nc));
  out.candidates_searched = int(run.slots.size());
}

void Halving::Rounds() {
  challengers.resize(size_t(nc));
  std::iota(challengers.begin(), challengers.end(), first_challenger);
  const auto median_of = [&](int i) { return run.MedianOf(i); };
  if (det) {
    std::vector<int> all(run.slots.size());
    std::iota(all.begin(), all.end(), 0);
    run.MeasureRound(all, 0, 1);
    challengers = ByMedian(challengers, median_of);
    return;
  }
  for (int r = 0;; ++r) {
    if (!screen && int(challengers.size()) <= target) break;
    std::vector<int> who = challengers;
    if (!screen) who.insert(who.begin(), 0);
    run.MeasureRound(who, r, base << r);
    challengers = ByMedian(challengers, median_of);
    if (int(challengers.size()) <= target) break;
    const size_t next = size_t(std::max(target, int(challengers.size() + 1) / 2));
    eliminated.emplace_back(challengers.begin() + long(next), challengers.end());
    challengers.resize(next);
  }
}

void Halving::Rank() {
  CellOutcome& out = run.out();
  for (int i : challengers) out.ranking.push_back(run.slots[size_t(i)].cand);
  for (auto it = eliminated.rbegin(); it != eliminated.rend(); ++it)
    for (int i : *it) out.ranking.push_back(run.slots[size_t(i)].cand);
}

// How finalist a compares with c: faster by the margin (a median gain of at
// least min_gain, significant at `alpha` by the U test), or not, and whether
// only the test stood in the way (the gain was there).
struct Verdict {
  double gain = 0, p = 1;
  bool beats = false, undecided = false;
};

// The final round of HalvingUTest and its verdicts.
class FinalRound {
 public:
  explicit FinalRound(Halving& h) : h_(h), run_(h.run), opts_(h.opts) {}
  void AddTraitFinalists();
  void Measure();
  int BreakTies();
  void Decide(int best);

 private:
  std::vector<double> Samples(int i) const;
  Verdict Compare(int a, int c, double alpha) const;
  Verdict SecondLook(int a, int c, Verdict v, const char* what);

  Halving& h_;
  CellSearch& run_;
  const SearchOptions& opts_;
  std::vector<int> finals_;
  int final_round_ = kFinalRound;
  std::string look_notes_, tie_note_;
};

// Trait finalists: for each trait value none of the finalists (incumbent
// included) has, the best eliminated candidate that has it (later rounds
// first, by median), when it is not far behind the leader.
void FinalRound::AddTraitFinalists() {
  std::vector<int>& challengers = h_.challengers;
  if (h_.trait_extra <= 0 || challengers.empty()) return;
  const auto traits_of = [&](int i) { return run_.Traits(i); };
  const double lead = run_.MedianOf(challengers.front());
  const std::vector<std::string> incumbent_traits = traits_of(0);
  std::vector<int> order = challengers;
  for (auto it = h_.eliminated.rbegin(); it != h_.eliminated.rend(); ++it)
    order.insert(order.end(), it->begin(), it->end());
  const int top = KeepWithTraits(
      order, int(challengers.size()), traits_of,
      [&](int i) { return run_.MedianOf(i) <= lead * opts_.trait_within; }, h_.trait_extra,
      std::set<std::string>(incumbent_traits.begin(), incumbent_traits.end()));
  challengers.assign(order.begin(), order.begin() + top);
}

// The surviving challengers and the incumbent, interleaved, every
// finalist's samples spread alike over the placements (Search::PlacementFor),
// so that the medians and the U test are over all of them.
void FinalRound::Measure() {
  finals_ = h_.challengers;
  finals_.insert(finals_.begin(), 0);
  if (h_.det) final_round_ = 0;
  else run_.MeasureRound(finals_, kFinalRound, h_.freps);
  finals_ = ByMedian(finals_, [&](int i) { return Median(Samples(i)); });
}

// A finalist's final samples: the final round, and the second look's
// samples where it took one.
std::vector<double> FinalRound::Samples(int i) const {
  std::vector<double> v = run_.slots[size_t(i)].Round(final_round_);
  for (double x : run_.slots[size_t(i)].Round(kSecondLookRound)) v.push_back(x);
  return v;
}

Verdict FinalRound::Compare(int a, int c, double alpha) const {
  const std::vector<double> sa = Samples(a), sc = Samples(c);
  Verdict v;
  v.gain = 1.0 - Median(sa) / Median(sc);
  v.p = h_.det ? 0.0 : MannWhitneyLessP(sa, sc);
  v.beats = v.gain >= opts_.min_gain && v.p < alpha;
  v.undecided = !h_.det && v.gain >= opts_.min_gain && v.p >= alpha;
  return v;
}

// The second look: where a gain of at least the margin failed the test
// only, a and c get freps more samples each (round kSecondLookRound, over
// the placements as the final round), and the pooled samples decide at
// alpha / 2, so that the two looks together err at most 1.5 alpha. Once per
// cell and pair, when the cell's budget has room for it (the logged costs
// decide, so a resumed run looks again where this one did). Without it, such
// gains (5-25 % medians at p 0.1-0.6 on 14 samples over four placements)
// were kept as "not significant".
Verdict FinalRound::SecondLook(int a, int c, Verdict v, const char* what) {
  if (!v.undecided) return v;
  const CellOutcome& out = run_.out();
  const double cost = double(2 * h_.freps) * h_.unit_other;
  if (out.budget_cut || !run_.Affords(cost)) {
    look_notes_ += std::string("; ") + what + ": no second look (budget)";
    return v;
  }
  run_.MeasureRound({a, c}, kSecondLookRound, h_.freps);
  const Verdict w = Compare(a, c, opts_.alpha / 2);
  look_notes_ += std::string("; ") + what + ": second look (first " + Fmt("%.1f", 100 * v.gain) + "% faster, p=" +
                 Fmt("%.3g", v.p) + "): " + Fmt("%.1f", 100 * w.gain) + "% faster, p=" + Fmt("%.3g", w.p) +
                 " over " + std::to_string(Samples(a).size()) + " samples" +
                 (w.beats ? "" : ", not significant at " + Fmt("%.3g", opts_.alpha / 2));
  return w;
}

// Ties go to the preferred challenger (Search::preference, the backend's
// simplest): the fastest finalist outranks a simpler one only by the margin
// a challenger needs against the incumbent, significantly (U test) and by at
// least min_gain; otherwise the simpler one takes its place. Two runs then
// pick the same candidate among near-equals instead of whichever drew the
// luckier samples, at a cost below min_gain. Returns the best finalist.
int FinalRound::BreakTies() {
  int best = finals_.front();
  if (best == 0 || !run_.has_preference()) return best;
  const auto& slots = run_.slots;
  for (int i : finals_) {
    if (i == 0 || i == best || run_.Preference(i) >= run_.Preference(best)) continue;
    const Verdict v = SecondLook(best, i, Compare(best, i, opts_.alpha), "tie");
    if (v.beats) continue;
    tie_note_ = "; tie: the simpler " + slots[size_t(i)].cand.variant + " t" +
                std::to_string(slots[size_t(i)].cand.split.threads) + " over " + slots[size_t(best)].cand.variant +
                " t" + std::to_string(slots[size_t(best)].cand.split.threads) + " (" + Fmt("%.1f", 100 * v.gain) +
                "% faster: " +
                (v.gain < opts_.min_gain ? "below the " + Fmt("%.0f", 100 * opts_.min_gain) + "% margin"
                                         : "p=" + Fmt("%.3g", v.p) + ", not significant") +
                ")";
    best = i;
  }
  if (best != finals_.front()) {  // the finals' order with the tie's winner first
    std::erase(finals_, best);
    finals_.insert(finals_.begin(), best);
  }
  return best;
}

// The best finalist against the incumbent: the challenger wins by the margin.
void FinalRound::Decide(int best) {
  CellOutcome& out = run_.out();
  const bool det = h_.det;
  out.incumbent = run_.Stats(0, Samples(0));
  int chosen = 0;
  if (best == 0) {
    out.decision = "incumbent is fastest";
  } else {
    // The tie's second looks never involve the incumbent: its look is this one.
    const Verdict v = SecondLook(best, 0, Compare(best, 0, opts_.alpha), "against the incumbent");
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
  out.decision += tie_note_ + look_notes_;
  out.chosen = run_.Stats(chosen, Samples(chosen));
  for (int i : finals_)
    if (i != chosen) {
      out.runner_up = run_.Stats(i, Samples(i));
      break;
    }
}

}  // namespace

void HalvingUTest::Run(CellSearch& run) const {
  Halving h(run, 0);
  h.ProbeAndFit();
  h.Rounds();
  h.Rank();
  FinalRound final_round(h);
  final_round.AddTraitFinalists();
  final_round.Measure();
  final_round.Decide(final_round.BreakTies());
}

void Screen::Run(CellSearch& run) const {
  Halving h(run, std::max(1, keep_));
  h.ProbeAndFit();
  h.Rounds();
  h.Rank();
  CellOutcome& out = run.out();
  const int best = h.challengers.front();
  out.chosen = run.Stats(best, run.slots[size_t(best)].All());
  if (h.challengers.size() > 1)
    out.runner_up = run.Stats(h.challengers[1], run.slots[size_t(h.challengers[1])].All());
  out.decision = "screen";
}

}  // namespace actgrad::tune
