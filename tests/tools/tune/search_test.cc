// Statistics and the backend-independent search on the fake backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fake_backend.h"
#include "tools/tune/log.h"
#include "tools/tune/search.h"
#include "tools/tune/stats.h"

namespace actgrad::tune {
namespace {

using testing::FakeBackend;
using testing::FakeClock;

TEST(Stats, MedianQuantileSpread) {
  EXPECT_DOUBLE_EQ(Median({3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(Median({4, 1, 2, 3}), 2.5);
  EXPECT_DOUBLE_EQ(Quantile({1, 2, 3, 4, 5}, 0.25), 2.0);
  EXPECT_DOUBLE_EQ(SpreadPct({10, 10, 10}), 0.0);
  EXPECT_NEAR(SpreadPct({90, 95, 100, 105, 110}), 5.0, 1e-9);
  EXPECT_NEAR(GeoMean({1, 4}), 2.0, 1e-12);
}

TEST(Stats, MannWhitneyExact) {
  // All of a below all of b, 5 vs 5: p = 1 / C(10,5) = 1/252.
  EXPECT_NEAR(MannWhitneyLessP({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 1.0 / 252.0, 1e-12);
  // The other way round: no evidence at all.
  EXPECT_NEAR(MannWhitneyLessP({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 1.0, 1e-12);
  // Interleaved: about one half.
  const double p = MannWhitneyLessP({1, 3, 5, 7, 9}, {2, 4, 6, 8, 10});
  EXPECT_GT(p, 0.3);
  EXPECT_LT(p, 0.7);
  EXPECT_EQ(MannWhitneyLessP({}, {1, 2}), 1.0);
}

TEST(Stats, MannWhitneyTiesUseTheNormalApproximation) {
  // Two constant samples: the test still sees the separation.
  std::vector<double> a(10, 1.0), b(10, 1.1);
  EXPECT_LT(MannWhitneyLessP(a, b), 1e-3);
  EXPECT_GT(MannWhitneyLessP(b, a), 0.99);
  // Identical samples: no evidence.
  EXPECT_GT(MannWhitneyLessP(a, a), 0.4);
}

TEST(Search, SeededPermutationIsAPermutationAndRepeatable) {
  auto p = SeededPermutation(50, 7), q = SeededPermutation(50, 7), r = SeededPermutation(50, 8);
  EXPECT_EQ(p, q);
  EXPECT_NE(p, r);
  std::set<size_t> s(p.begin(), p.end());
  EXPECT_EQ(s.size(), 50u);
  EXPECT_EQ(*s.rbegin(), 49u);
}

Cell B(int k, const std::string& layout = "contig") {
  return Cell{Op::kGeluBwd, DType::kF32, layout, k, uint64_t(2) << (2 * k), GeluApprox::kNone};
}

TEST(Search, FindsTheBestCandidateAndBeatsTheIncumbent) {
  FakeBackend be;
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  const Cell b = B(6);  // small: one thread is best, variant (vi + 6) % 8 == 0 -> v2
  const CellOutcome o = s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9);
  EXPECT_EQ(o.chosen.cand.variant, "v2");
  EXPECT_EQ(o.chosen.cand.split.threads, 1);
  EXPECT_TRUE(o.challenger_won);
  EXPECT_LT(o.p_value, 0.05);
  ASSERT_TRUE(o.runner_up.has_value());
  EXPECT_NE(o.runner_up->cand.Key(), o.chosen.cand.Key());
  EXPECT_LE(o.chosen.median, o.runner_up->median * 1.01);
  EXPECT_FALSE(o.budget_cut);
  EXPECT_EQ(o.candidates_searched, o.candidates_total);
  // Every sample went through the log, none twice.
  EXPECT_EQ(log.appended(), size_t(o.samples_measured));
  EXPECT_EQ(be.calls, o.samples_measured);
}

// Two challengers about as fast as each other: the simpler one (lower preference)
// wins the tie, whichever drew the luckier samples; a clearly faster one is
// never given up for a simpler one.
TEST(Search, TiesGoToTheSimplerCandidate) {
  for (const double v3_extra : {0.005, 0.10}) {
    int ties = 0;
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      FakeBackend be;
      be.noise = 0.02;
      // v3 0.5 % slower than v2 (the best at octave 6): a tie; or 10 % slower.
      be.placement_factor = [&](const Choice& c, int) {
        return c.variant == "v3" ? 1.0 / (1.0 + 0.06 * 1) * (1.0 + v3_extra) : 1.0;
      };
      MeasurementLog log;
      log.OpenInMemory({});
      SearchOptions opts;
      opts.seed = seed;
      Search s(be, log, opts);
      s.preference = [](const Choice& c) { return c.variant == "v3" ? 0 : 1 + c.split.threads; };
      const Cell b = B(6);
      const CellOutcome o = s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9);
      SCOPED_TRACE(o.decision);
      EXPECT_TRUE(o.challenger_won);
      EXPECT_EQ(o.chosen.cand.variant, v3_extra < 0.01 ? "v3" : "v2");
      ties += o.decision.find("tie: the simpler v3") != std::string::npos;
    }
    // v2 draws the faster median in some runs: the tie rule is what picks v3
    // there.
    if (v3_extra < 0.01) EXPECT_GT(ties, 0);
    else EXPECT_EQ(ties, 0);
  }
}

// The margin decides ties, not significance alone: 1.5 % faster, however
// significant, does not outrank a simpler candidate.
TEST(Search, SignificantButSmallGainsAreTies) {
  FakeBackend be;
  be.noise = 0.001;
  be.placement_factor = [](const Choice& c, int) { return c.variant == "v3" ? 1.015 / 1.06 : 1.0; };
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  s.preference = [](const Choice& c) { return c.variant == "v3" ? 0 : 1 + c.split.threads; };
  const Cell b = B(6);
  const CellOutcome o = s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9);
  SCOPED_TRACE(o.decision);
  EXPECT_EQ(o.chosen.cand.variant, "v3");
  EXPECT_NE(o.decision.find("tie: the simpler v3"), std::string::npos);
  EXPECT_NE(o.decision.find("faster: below the 2% margin)"), std::string::npos);
}

TEST(Search, LargeCellsPreferThreads) {
  FakeBackend be;
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  const Cell b = B(10);  // (vi + 10) % 8 == 0 -> v6, 4 threads, default chunk
  const CellOutcome o = s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9);
  EXPECT_EQ(o.chosen.cand.variant, "v6");
  EXPECT_EQ(o.chosen.cand.split.threads, 4);
  EXPECT_EQ(o.chosen.cand.split.chunk, 0);
}

TEST(Search, TakesTheBestOfEachTraitToTheFinalRound) {
  // n = 32K: four threads win by ~10 %, so the halving's two survivors both
  // run four threads (v1, v2); the incumbent runs four too. The best
  // one-thread candidate (v1) is close enough to get the final round's
  // samples, and only it: no other trait value is missing.
  const Cell b = B(7);
  for (int extra : {0, 2}) {
    FakeBackend be;
    MeasurementLog log;
    log.OpenInMemory({});
    SearchOptions opts;
    opts.trait_finalists = extra;
    Search s(be, log, opts);
    Choice inc;
    inc.variant = "v0";
    inc.split.threads = 4;
    const CellOutcome o = s.RunCell("c", b, be.Candidates(b), inc, 1e9);
    EXPECT_EQ(o.chosen.cand.variant, "v1");
    EXPECT_EQ(o.chosen.cand.split.threads, 4);
    std::vector<std::string> one_thread_finalists;
    for (const Choice& c : be.Candidates(b))
      if (c.split.threads == 1 && log.Find("c", c.Key(), kFinalRound, 0)) one_thread_finalists.push_back(c.variant);
    if (extra == 0) {
      EXPECT_TRUE(one_thread_finalists.empty());
    } else {
      EXPECT_EQ(one_thread_finalists, std::vector<std::string>{"v1"});
    }
  }
  // Far behind the leader (n = 512K: one thread is ~3x slower): not taken.
  FakeBackend be;
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  Choice inc;
  inc.variant = "v0";
  inc.split.threads = 4;
  s.RunCell("c", B(9), be.Candidates(B(9)), inc, 1e9);
  for (const Choice& c : be.Candidates(B(9)))
    if (c.split.threads == 1) EXPECT_EQ(log.Find("c", c.Key(), kFinalRound, 0), nullptr) << c.Key();
}

TEST(Search, ScreenSurvivorsKeepTheBestOfEachTrait) {
  // Plain-store variants outrank every streaming one at the screen's size;
  // the best streaming one still survives, right behind the first `keep`.
  std::vector<std::string> order = {"p0", "p1", "p2", "n0", "p3", "n1", "n2x"};
  auto traits = [](const std::string& v) {
    return std::vector<std::string>{v[0] == 'n' ? "stores=nt" : "stores=plain"};
  };
  auto any = [](const std::string&) { return true; };
  EXPECT_EQ(KeepWithTraits(order, 3, traits, any), 4);
  EXPECT_EQ(order, (std::vector<std::string>{"p0", "p1", "p2", "n0", "p3", "n1", "n2x"}));
  order = {"p0", "p1", "p2", "p3", "n0", "n1"};
  EXPECT_EQ(KeepWithTraits(order, 2, traits, any), 3);
  EXPECT_EQ(order, (std::vector<std::string>{"p0", "p1", "n0", "p2", "p3", "n1"}));
  // Everything covered: the first `keep`, nothing moved.
  order = {"p0", "n0", "p1"};
  EXPECT_EQ(KeepWithTraits(order, 2, traits, any), 2);
  EXPECT_EQ(order, (std::vector<std::string>{"p0", "n0", "p1"}));
  // keep beyond the list.
  EXPECT_EQ(KeepWithTraits(order, 10, traits, any), 3);
  // Only eligible items, at most max_extra of them, none whose value
  // `covered` already has (the final round's trait finalists).
  auto two_traits = [](const std::string& v) {
    return std::vector<std::string>{v[0] == 'n' ? "stores=nt" : "stores=plain", v[1] == '2' ? "threads=2" : "threads=1"};
  };
  order = {"p1a", "n1a", "n2a", "n2b", "p2a"};
  EXPECT_EQ(KeepWithTraits(order, 1, two_traits, [](const std::string& v) { return v != "n1a"; }, 1), 2);
  EXPECT_EQ(order, (std::vector<std::string>{"p1a", "n2a", "n1a", "n2b", "p2a"}));
  order = {"p1a", "n1a", "p2a"};
  EXPECT_EQ(KeepWithTraits(order, 1, two_traits, any, 5, std::set<std::string>{"stores=nt"}), 2);
  EXPECT_EQ(order, (std::vector<std::string>{"p1a", "p2a", "n1a"}));
}

TEST(Search, KeepsTheIncumbentWhenTheGainIsBelowTheMargin) {
  // Variant "v1" is 1 % faster than the incumbent: real, but under min_gain.
  class Close : public FakeBackend {
   public:
    std::vector<Choice> Candidates(const Cell&) override {
      Choice a, c;
      a.variant = "v0";
      c.variant = "v1";
      return {a, c};
    }
    std::vector<double> Measure(const Cell& cell, const Choice& c, int reps, double m) override {
      auto v = FakeBackend::Measure(cell, c, reps, m);
      for (double& x : v) x = x / TrueTime(cell, c) * (c.variant == "v1" ? 99.0 : 100.0);
      return v;
    }
  } be;
  be.noise = 0.001;
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  const Cell b = B(7);
  const CellOutcome o = s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9);
  EXPECT_EQ(o.chosen.cand.variant, "v0");
  EXPECT_FALSE(o.challenger_won);
  EXPECT_NE(o.decision.find("below the 2% margin"), std::string::npos) << o.decision;
  ASSERT_TRUE(o.runner_up.has_value());
  EXPECT_EQ(o.runner_up->cand.variant, "v1");
}

TEST(Search, KeepsTheIncumbentUnderPureNoise) {
  // All candidates equal up to +-3 % noise: the incumbent stays.
  class Flat : public FakeBackend {
   public:
    std::vector<double> Measure(const Cell& cell, const Choice& c, int reps, double m) override {
      auto v = FakeBackend::Measure(cell, c, reps, m);
      for (double& x : v) x = x / TrueTime(cell, c) * 1000.0;
      return v;
    }
  } be;
  be.noise = 0.03;
  int kept = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    MeasurementLog log;
    log.OpenInMemory({});
    SearchOptions o;
    o.seed = seed;
    Search s(be, log, o);
    const Cell b = B(7);
    kept += !s.RunCell("c" + std::to_string(seed), b, be.Candidates(b), be.Default(b), 1e9).challenger_won;
  }
  EXPECT_GE(kept, 8);  // a false switch needs p < 0.05 and >= 2 % gain
}

TEST(Search, DeterministicBackendTakesOneSampleEach) {
  FakeBackend be;
  be.deterministic = true;
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  const Cell b = B(6);
  const auto cands = be.Candidates(b);
  const CellOutcome o = s.RunCell("c", b, cands, be.Default(b), 1e9);
  EXPECT_EQ(o.chosen.cand.variant, "v2");
  EXPECT_EQ(size_t(be.calls), cands.size());  // the incumbent is among the candidates
}

// 2 ms a sample on a fake clock: 0.15 s holds 75 samples, fewer than the
// full search of 16 candidates takes, so candidates are cut and the search
// stays within its budget.
TEST(Search, FitsTheBudgetByCuttingCandidates) {
  FakeBackend be;
  be.sleep_sec = 0.002;
  SearchOptions opts;
  FakeClock clock;
  clock.Use(be, &opts);
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, opts);
  const Cell b = B(10);
  const auto cands = be.Candidates(b);
  const CellOutcome o = s.RunCell("c", b, cands, be.Default(b), 0.15);
  EXPECT_TRUE(o.budget_cut);
  EXPECT_LT(o.candidates_searched, o.candidates_total);
  EXPECT_GE(o.candidates_searched, 2);
  EXPECT_NEAR(o.cost_sec, 0.002 * double(be.calls), 1e-9);  // every sample, at its fake cost
  EXPECT_LE(o.cost_sec, 0.15);
}

TEST(Search, ScreenRanksAndKeeps) {
  FakeBackend be;
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  const Cell b = B(8);
  std::vector<Choice> firsts;
  for (int v = 0; v < 8; ++v) {
    Choice c;
    c.variant = "v" + std::to_string(v);
    firsts.push_back(c);
  }
  const CellOutcome o = s.RunScreen("screen", b, firsts, 3, 1e9);
  ASSERT_EQ(o.ranking.size(), 8u);
  // (vi + 8) % 8 ranks v0 < v1 < v2 ...
  EXPECT_EQ(o.ranking[0], firsts[0]);
  EXPECT_EQ(o.ranking[1], firsts[1]);
  EXPECT_EQ(o.ranking[2], firsts[2]);
}

TEST(Search, PlacementOrderGroupsByPlacementAndKeepsTheShuffle) {
  EXPECT_EQ(PlacementOrder(std::vector<int>(20, 0), 7), SeededPermutation(20, 7));
  std::vector<int> placements;  // two items, 12 repetitions each, repetition r at r % 4
  for (int k = 0; k < 24; ++k) placements.push_back(k / 2 % 4);
  const std::vector<size_t> order = PlacementOrder(placements, 7);
  EXPECT_EQ(std::set<size_t>(order.begin(), order.end()).size(), 24u);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end(),
                             [&](size_t a, size_t b) { return placements[a] < placements[b]; }));
  EXPECT_NE(order, PlacementOrder(placements, 8));  // shuffled within the groups
  EXPECT_EQ(PlacementList(4), "0,1,2,3");
  EXPECT_EQ(PlacementList(1), "0");
}

// v3 is fast on placement 0 only (the layout the halving measures
// on: there it beats v2 by 10 %) and 27 % slower on the others; v2 is
// steady. The final round spreads every finalist's samples over placements
// 0..3 and picks v2; with one placement the lucky layout decides for v3.
TEST(Search, FinalRoundOverPlacementsPicksTheSteadyCandidate) {
  const Choice lucky{"v3", Split{1, 0, 0}};
  const Cell b = B(6);  // one thread wins; v2 is the best variant (1.0), v3 the next (1.06)
  for (int placements : {1, 4}) {
    SCOPED_TRACE("placements " + std::to_string(placements));
    FakeBackend be;
    be.placement_factor = [&](const Choice& c, int placement) {
      return c == lucky ? (placement == 0 ? 0.85 : 1.2) : 1.0;
    };
    MeasurementLog log;
    log.OpenInMemory({});
    SearchOptions opts;
    opts.final_placements = placements;
    Search s(be, log, opts);
    const CellOutcome o = s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9);
    ASSERT_NE(log.Find("c", lucky.Key(), kFinalRound, 0), nullptr);  // it led the halving
    EXPECT_EQ(o.chosen.cand.variant, placements == 1 ? "v3" : "v2");
    EXPECT_TRUE(o.challenger_won);
    if (placements == 1) continue;
    // The halving on placement 0; in the final round repetition r at r % 4.
    for (const Choice& c : be.Candidates(b))
      if (const LogRecord* r = log.Find("c", c.Key(), 0, 0)) EXPECT_EQ(r->placement, 0) << c.Key();
    int final_samples = 0;
    for (const Choice& c : {lucky, Choice{"v2", Split{1, 0, 0}}, be.Default(b)})
      for (int rep = 0; rep < opts.final_reps; ++rep) {
        const LogRecord* r = log.Find("c", c.Key(), kFinalRound, rep);
        ASSERT_NE(r, nullptr) << c.Key() << " rep " << rep;
        EXPECT_EQ(r->placement, rep % 4);
        ++final_samples;
      }
    EXPECT_EQ(final_samples, 3 * opts.final_reps);
    // Grouped by placement: three switches (0 -> 1 -> 2 -> 3), not one per sample.
    int switches = 0;
    for (size_t i = 1; i < be.measured_at.size(); ++i) switches += be.measured_at[i] != be.measured_at[i - 1];
    EXPECT_EQ(switches, 3);
    EXPECT_EQ(be.measured_at.back(), 3);
  }
}

// Two candidates, v0 (the incumbent, 100) and v1 (90); v1's samples 1-14 (its
// final round: sample 0 is the probe) alternate 72 and 117, a median 5 %
// faster but no evidence for the U test; later samples are 90.
class SecondLook : public FakeBackend {
 public:
  SecondLook() {
    noise = 0.01;
    sample_factor = [](const Choice& c, int k) {
      return c.variant == "v1" && k >= 1 && k <= 14 ? (k % 2 ? 0.8 : 1.3) : 1.0;
    };
  }
  std::vector<Choice> Candidates(const Cell&) override { return {Choice{"v0", {}}, Choice{"v1", {}}}; }
  std::vector<double> Measure(const Cell& cell, const Choice& c, int reps, double m) override {
    auto v = FakeBackend::Measure(cell, c, reps, m);
    for (double& x : v) x = x / TrueTime(cell, c) * (c.variant == "v1" ? 90.0 : 100.0);
    return v;
  }
};

// A gain of at least the margin that fails the test only is looked at again:
// as many samples again of both, over the placements, pooled, at alpha / 2.
TEST(Search, UndecidedGainsGetASecondLook) {
  SecondLook be;
  MeasurementLog log;
  log.OpenInMemory({});
  SearchOptions opts;
  Search s(be, log, opts);
  const Cell b = B(7);
  const CellOutcome o = s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9);
  SCOPED_TRACE(o.decision);
  EXPECT_EQ(o.chosen.cand.variant, "v1");
  EXPECT_TRUE(o.challenger_won);
  EXPECT_LT(o.p_value, opts.alpha / 2);
  EXPECT_NE(o.decision.find("against the incumbent: second look (first "), std::string::npos);
  EXPECT_EQ(o.chosen.samples.size(), size_t(2 * opts.final_reps));  // the verdict's samples: both looks
  EXPECT_NEAR(o.chosen.median, 90.0, 2.0);
  for (const char* v : {"v0", "v1"})
    for (int rep = 0; rep < opts.final_reps; ++rep) {
      const LogRecord* r = log.Find("c", Choice{v, {}}.Key(), kSecondLookRound, rep);
      ASSERT_NE(r, nullptr) << v << " rep " << rep;
      EXPECT_EQ(r->placement, rep % opts.final_placements);
    }

  // Without the budget for it: the first look's verdict stands, and says so.
  SecondLook be2;
  MeasurementLog log2;
  log2.OpenInMemory({});
  Search s2(be2, log2, opts);
  const CellOutcome o2 = s2.RunCell("c", b, be2.Candidates(b), be2.Default(b), 0.0);
  SCOPED_TRACE(o2.decision);
  EXPECT_EQ(o2.chosen.cand.variant, "v0");
  EXPECT_FALSE(o2.challenger_won);
  EXPECT_NE(o2.decision.find("not significant"), std::string::npos);
  EXPECT_NE(o2.decision.find("no second look (budget)"), std::string::npos);
  EXPECT_EQ(log2.Find("c", Choice{"v1", {}}.Key(), kSecondLookRound, 0), nullptr);
}

// The tie rule asks the same: a fastest finalist whose gain over a simpler
// one failed the test only is looked at again before the tie goes to the
// simpler one; and the note says why a tie was a tie.
TEST(Search, TiesLookAgainAndSayWhy) {
  SecondLook be;
  MeasurementLog log;
  log.OpenInMemory({});
  Search s(be, log, SearchOptions{});
  // The incumbent v9 (100) and two challengers: v0 (100, the simpler) and
  // v1 (90, its final round noisy).
  s.preference = [](const Choice& c) { return c.variant == "v0" ? 0 : 1; };
  const Cell b = B(7);
  const CellOutcome o = s.RunCell("c", b, be.Candidates(b), Choice{"v9", {}}, 1e9);
  SCOPED_TRACE(o.decision);
  EXPECT_EQ(o.chosen.cand.variant, "v1");
  EXPECT_TRUE(o.challenger_won);
  EXPECT_EQ(o.decision.find("tie: the simpler"), std::string::npos);
  EXPECT_NE(o.decision.find("; tie: second look"), std::string::npos);
  EXPECT_NE(log.Find("c", Choice{"v0", {}}.Key(), kSecondLookRound, 0), nullptr);
}

TEST(Search, StopFlagInterrupts) {
  FakeBackend be;
  MeasurementLog log;
  log.OpenInMemory({});
  std::atomic<bool> stop{true};
  Search s(be, log, SearchOptions{}, &stop);
  const Cell b = B(6);
  EXPECT_THROW(s.RunCell("c", b, be.Candidates(b), be.Default(b), 1e9), Interrupted);
  EXPECT_EQ(be.calls, 0);
}

}  // namespace
}  // namespace actgrad::tune
