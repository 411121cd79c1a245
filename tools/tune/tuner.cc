#include "tools/tune/tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tools/inputs/views.h"
#include "tools/tune/budget.h"
#include "tools/tune/shard.h"
#include "tools/tune/stats.h"
#include "tools/tune/strings.h"

namespace actgrad::tune {

using json = nlohmann::json;

namespace {

std::string ModeName(GeluApprox m) { return m == GeluApprox::kTanh ? "tanh" : "none"; }

std::string SizeLabel(uint64_t n) {
  if (n >= (uint64_t(1) << 20) && n % (uint64_t(1) << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= 1024 && n % 1024 == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

// "variant thr2 chunk64K stage8K" (chunk and stage tile only when set).
std::string Short(const Choice& c) {
  const Split& s = c.split;
  return c.variant + " thr" + std::to_string(s.threads) + (s.chunk ? " chunk" + SizeLabel(uint64_t(s.chunk)) : "") +
         (s.stage_tile ? " stage" + SizeLabel(uint64_t(s.stage_tile)) : "");
}

// The "auto" of a zero split field in reports.
std::string SplitField(int64_t v) { return v ? SizeLabel(uint64_t(v)) : "auto"; }

}  // namespace

TuneConfig TuneConfig::Defaults(bool quick) {
  TuneConfig c;
  c.quick = quick;
  if (quick) {
    c.budget_sec = 85;
    c.screen_keep = 3;
    c.search.min_seconds = 0.001;
    c.search.final_reps = 6;
    c.search.min_final_reps = 4;
    c.search.max_base_reps = 1;
    c.series.bisect_steps = 2;
    c.fit_cells = true;
  }
  return c;
}

json TuneConfig::ToJson() const {
  json j;
  j["search_version"] = kSearchVersion;  // (tuner.h)
  std::vector<std::string> o, d, m;
  for (Op op : ops) o.emplace_back(OpName(op));
  for (DType t : dtypes) d.emplace_back(DTypeName(t));
  for (GeluApprox g : gelu_modes) m.push_back(ModeName(g));
  j["ops"] = o;
  j["dtypes"] = d;
  j["octaves"] = octaves;
  j["layouts"] = layouts;
  j["gelu_modes"] = m;
  j["budget_sec"] = budget_sec;
  j["quick"] = quick;
  j["max_n"] = max_n;
  j["screen_keep"] = screen_keep;
  j["screen_octaves"] = screen_octaves;
  j["overhead_share"] = overhead_share;
  j["screen_share"] = screen_share;
  j["refine_share"] = refine_share;
  if (points != Points::kTuned) j["points"] = points == Points::kBetween ? "between" : "both";
  if (incumbent_name != "default") j["incumbent"] = incumbent_name;
  if (confirm_reps > 0) j["confirm"] = {{"reps", confirm_reps}, {"above", confirm_above}};
  if (shard_count > 0) j["shard"] = {{"index", shard_index}, {"count", shard_count}};
  if (fit_cells) j["fit_cells"] = true;
  if (seed) j["seed"] = seed->machine_id;
  j["search"] = {{"min_seconds", search.min_seconds}, {"final_reps", search.final_reps},
                 {"min_final_reps", search.min_final_reps}, {"finalists", search.finalists},
                 {"max_base_reps", search.max_base_reps}, {"trait_finalists", search.trait_finalists},
                 {"trait_within", search.trait_within}, {"alpha", search.alpha},
                 {"min_gain", search.min_gain}, {"seed", search.seed},
                 {"final_placements", search.final_placements}};
  j["series"] = {{"bisect_steps", series.bisect_steps}, {"bisect_reps", series.bisect_reps}};
  return j;
}

json MeasuredPart(const json& config) {
  json m = json::object();
  if (!config.is_object()) return m;
  for (const char* field : {"backend", "machine_id", "max_n"})
    if (const auto it = config.find(field); it != config.end()) m[field] = *it;
  if (const auto s = config.find("search"); s != config.end() && s->is_object())
    if (const auto it = s->find("min_seconds"); it != s->end()) m["min_seconds"] = *it;
  return m;
}

std::string GroupKey(const Cell& cell) {
  return std::string(OpName(cell.op)) + "/" + std::string(DTypeName(cell.dtype)) + "/" +
         (cell.op == Op::kGeluBwd ? ModeName(cell.mode) : "-");
}

std::string CellKey(const Cell& cell) { return GroupKey(cell) + "/" + cell.layout + "/o" + std::to_string(cell.octave); }


std::vector<CellSpec> PlanCells(const TuneConfig& cfg) {
  std::vector<CellSpec> cells;
  for (Op op : cfg.ops)
    for (DType t : cfg.dtypes) {
      if (!OpHasDType(op, t)) continue;
      std::vector<GeluApprox> modes = {GeluApprox::kNone};
      if (op == Op::kGeluBwd) modes = cfg.gelu_modes;
      for (GeluApprox m : modes)
        for (const std::string& layout : cfg.layouts) {
          // A layout of the benchmarks' views: only where it applies and fits.
          inputs::ViewLayout view;
          const bool is_view = inputs::ParseViewLayout(layout, &view);
          if (is_view && !inputs::LayoutAppliesTo(view, op)) continue;
          for (int k : cfg.octaves) {
            if (is_view && inputs::FitDown(view, size_t(OctaveHi(k) - 1)) < OctaveLo(k)) continue;
            std::vector<uint64_t> ns;
            if (cfg.points != TuneConfig::Points::kBetween) ns.push_back(RepresentativeN(k, cfg.max_n));
            if (cfg.points != TuneConfig::Points::kTuned && BetweenN(k) <= cfg.max_n) ns.push_back(BetweenN(k));
            for (uint64_t n : ns) {
              CellSpec c;
              c.cell = Cell{op, t, layout, k, n, m};
              c.key = CellKey(c.cell);
              if (n != RepresentativeN(k, cfg.max_n)) (c.key += '@') += std::to_string(n);
              c.group = GroupKey(c.cell);
              // Budget weight: samples of large cells cost more (a call takes
              // longer than a sample's minimum), but beyond 8M elements no cell
              // can be searched fully in a 10-minute run: those share alike.
              c.weight = 1.0 + double(std::min<uint64_t>(c.cell.n, uint64_t(8) << 20)) / double(1 << 20);
              cells.push_back(std::move(c));
            }
          }
        }
    }
  if (cfg.shard_count > 0) cells = ShardCells(cells, cfg.shard_index, cfg.shard_count);
  return cfg.fit_cells ? FitCellsToBudget(cells, cfg, cfg.seed.get()) : cells;
}

double Regret(const CellOutcome& o) {
  double best = o.chosen.median;
  if (o.runner_up && o.runner_up->median > 0) best = std::min(best, o.runner_up->median);
  return best > 0 ? o.chosen.median / best : 1.0;
}

double ShippingRegret(const CellOutcome& o) {
  double best = std::min(o.chosen.median, o.incumbent.median);
  if (o.runner_up && o.runner_up->median > 0) best = std::min(best, o.runner_up->median);
  return best > 0 ? o.incumbent.median / best : 1.0;
}

tables::Entry ToEntry(const CellOutcome& o, bool one_thread_fallback, const std::string& incumbent) {
  tables::Entry e;
  e.op = o.cell.op;
  e.dtype = o.cell.dtype;
  e.mode = o.cell.op == Op::kGeluBwd ? o.cell.mode : GeluApprox::kNone;
  tables::ParseLayout(o.cell.layout, &e.layout);
  e.octave = o.cell.octave;
  e.choice = o.chosen.cand;
  e.median_ns = std::round(o.chosen.median * 10) / 10;
  // For callers that cap the threads at 1: the one-thread stage's choice,
  // else (no stage ran) the search's best-ranked one-thread challenger.
  if (one_thread_fallback && o.chosen.cand.split.threads > 1) {
    if (o.one_thread) {
      e.one_thread = o.one_thread->cand;
    } else {
      for (const Choice& c : o.ranking)
        if (c.split.threads == 1) {
          e.one_thread = c;
          break;
        }
    }
    // Without a one-thread stage the candidate carries the default tile; the
    // chosen one's tile (a transposed view's, measured at its thread count)
    // is about pages and cache lines per tile more than threads, so one
    // thread takes it too. The stage measured its choice with a tile of its own.
    if (e.one_thread && !o.one_thread) {
      e.one_thread->split.tile_rows = o.chosen.cand.split.tile_rows;
      e.one_thread->split.tile_cols = o.chosen.cand.split.tile_cols;
      e.one_thread->split.transpose_result = o.chosen.cand.split.transpose_result;
    }
  }
  e.spread_pct = std::round(o.chosen.spread_pct * 100) / 100;
  if (o.runner_up) e.runner_up = tables::Measured{o.runner_up->cand, std::round(o.runner_up->median * 10) / 10};
  json extra = json::object();
  const Split& d = o.incumbent.cand.split;
  extra["tuning"] = {{"n", o.cell.n},
                     {incumbent, {{"variant", o.incumbent.cand.variant},
                                  {"threads", d.threads},
                                  {"chunk", d.chunk},
                                  {"stage_tile", d.stage_tile},
                                  {"median_ns", std::round(o.incumbent.median * 10) / 10}}},
                     {"speedup_vs_" + incumbent, std::round(o.incumbent.median / o.chosen.median * 1000) / 1000},
                     {"p_value", std::round(o.p_value * 1e4) / 1e4},
                     {"regret", std::round(Regret(o) * 1e4) / 1e4},
                     {"decision", o.decision},
                     {"candidates", o.candidates_searched},
                     {"candidates_offered", o.candidates_total},
                     {"budget_cut", o.budget_cut}};
  e.extra = extra;
  return e;
}

// Counts a later stage of a cell (the split refinements, the one-thread
// screen) into the cell's outcome.
static void AddStage(const CellOutcome& r, CellOutcome* o) {
  o->candidates_total += r.candidates_total;
  o->candidates_searched += r.candidates_searched;
  o->budget_cut = o->budget_cut || r.budget_cut;
  o->samples_measured += r.samples_measured;
  o->samples_replayed += r.samples_replayed;
  o->samples_cached += r.samples_cached;
  o->cost_sec += r.cost_sec;
}

// A cell's last stages: the winner against variations of its split (chunk,
// stage tile: Backend::SplitRefinements), the winner as the incumbent, logged
// under "<cell>/split" (then "<cell>/split2": the refinements of a refined
// winner, so that both dimensions can improve). A refinement that wins
// becomes the cell's choice and the winner it beat its runner-up.
static void RefineSplit(Search& search, Backend& be, const std::string& key, double budget_sec, CellOutcome* o) {
  constexpr int kStages = 2;  // the split's dimensions beyond threads
  const Allowance budget{budget_sec, search.spent()};
  for (int stage = 1; stage <= kStages; ++stage) {
    std::vector<Choice> refinements = be.SplitRefinements(o->cell, o->chosen.cand);
    if (refinements.empty()) return;
    const CellOutcome r = search.RunCell(key + "/split" + (stage > 1 ? std::to_string(stage) : ""), o->cell,
                                         std::move(refinements), o->chosen.cand,
                                         budget.Left(search.spent()));
    o->decision += "; split: " + r.decision;
    AddStage(r, o);
    if (!r.challenger_won) return;
    o->runner_up = r.incumbent;
    o->chosen = r.chosen;
    o->challenger_won = true;
  }
}

// The best candidate of another thread count than the winner's, with its
// own split refinements ("<cell>/rival/split"), against the refined winner
// ("<cell>/rival"), within `budget_sec`. For a transposed view the tile
// weighs as much as the thread count, and the search compared the thread
// counts on their first tiles only: at 64K (genuineintel-6-167) a two-thread
// candidate lost to a one-thread one whose tile RefineSplit then improved by
// 1.6x, and the two-thread choice with its own tile was 1.5x faster again.
static void RefineRivalThreads(Search& search, Backend& be, const std::string& key, double budget_sec,
                               CellOutcome* o) {
  const Allowance budget{budget_sec, search.spent()};
  const int threads = o->chosen.cand.split.threads;
  std::optional<Choice> rival;
  for (const Choice& c : o->ranking)
    if (!rival && c.split.threads != threads) rival = c;
  if (!rival && o->incumbent.cand.split.threads != threads) rival = o->incumbent.cand;
  if (!rival) return;
  std::vector<Choice> refinements = be.SplitRefinements(o->cell, *rival);
  if (refinements.empty()) return;
  refinements.insert(refinements.begin(), *rival);
  const CellOutcome t = search.RunScreen(key + "/rival/split", o->cell, std::move(refinements), 1, 0.5 * budget_sec);
  AddStage(t, o);
  const CellOutcome r = search.RunCell(key + "/rival", o->cell, {t.chosen.cand}, o->chosen.cand,
                                       budget.Left(search.spent()));
  AddStage(r, o);
  o->decision += "; other threads: " + r.decision;
  if (!r.challenger_won) return;
  o->runner_up = r.incumbent;
  o->chosen = r.chosen;
  o->challenger_won = true;
}

// A threaded winner's one-thread choice (Entry::one_thread, what the
// dispatch runs when the caller allows one thread), in three steps logged
// under "<cell>/1t...", within what is left of the cell's allowance:
//  1. a screen of the one-thread candidates on fresh samples ("/1t"), keeping
//     two. The halving drops them in its first round on a sample or two each
//     (the threaded ones beat them all at large n), so its order among them
//     is mostly noise, off by up to a fifth on one thread. When the
//     allowance cuts candidates, the last of the search's order go first,
//     after the best of each trait value (streaming stores or not) has been
//     moved up;
//  2. the screen's best against its split refinements ("/1t/split": for a
//     transposed view the gathered tile, measured on one thread rather than
//     inherited from the threaded winner);
//  3. that winner and the screen's runner-up on fresh samples spread over the
//     placements (Search::Compare, "/1t"), the lower median taken. The screen
//     measures on placement 0 only, where one layout of the operands can
//     favour a candidate that is slower over the placements the benchmarks
//     (and callers) see.
static void ChooseOneThread(Search& search, Backend& be, const std::string& key, double budget_sec, CellOutcome* o) {
  constexpr int kKeepFirst = 2;
  if (o->chosen.cand.split.threads <= 1 || be.Deterministic()) return;
  std::vector<Choice> cands;
  for (const Choice& c : o->ranking)
    if (c.split.threads == 1) cands.push_back(c);
  if (o->incumbent.cand.split.threads == 1) cands.push_back(o->incumbent.cand);
  if (cands.size() < 2) return;
  for (Choice& c : cands) {  // measured first with the threaded winner's tile
    c.split.tile_rows = o->chosen.cand.split.tile_rows;
    c.split.tile_cols = o->chosen.cand.split.tile_cols;
    c.split.transpose_result = o->chosen.cand.split.transpose_result;
  }
  const Allowance budget{budget_sec, search.spent()};
  KeepWithTraits(cands, kKeepFirst, [&](const Choice& c) { return be.Traits(c); }, [](const Choice&) { return true; });
  const CellOutcome r = search.RunScreen(key + "/1t", o->cell, std::move(cands), 2, 0.6 * budget_sec);
  AddStage(r, o);
  CandidateStats best = r.chosen;
  std::vector<Choice> refinements = be.SplitRefinements(o->cell, best.cand);
  if (!refinements.empty()) {
    refinements.insert(refinements.begin(), best.cand);
    const CellOutcome t = search.RunScreen(key + "/1t/split", o->cell, std::move(refinements), 1, 0.5 * budget.Left(search.spent()));
    AddStage(t, o);
    best = t.chosen;
  }
  if (r.runner_up && r.runner_up->cand.Key() != best.cand.Key()) {
    const int reps = 2 * std::max(1, search.options().final_placements);
    const auto [sb, sr] = search.Compare(key + "/1t", o->cell, best.cand, r.runner_up->cand, reps);
    const double mb = Median(sb), mr = Median(sr);
    best = mr < mb ? CandidateStats{r.runner_up->cand, sr, mr, SpreadPct(sr)}
                   : CandidateStats{best.cand, sb, mb, SpreadPct(sb)};
    o->decision += "; one thread over placements: " + Fmt("%.4g", std::min(mb, mr)) + " vs " +
                   Fmt("%.4g", std::max(mb, mr)) + " ns";
  }
  o->one_thread = best;
}

// After a group's cells (res->cells from `first` on): each layout's series
// gets its crossovers and thread rules (tools/tune/series.h), written into
// the matching table entries.
static void FitGroupSeries(Search& search, Backend& be, const TuneConfig& cfg, const std::string& group,
                           TuneResult* res, size_t first, Progress& progress) {
  std::map<std::string, std::vector<size_t>> by_layout;  // indices into res->cells and res->table.entries
  for (size_t i = first; i < res->cells.size(); ++i)
    if (res->cells[i].key.find('@') == std::string::npos) by_layout[res->cells[i].cell.layout].push_back(i);
  int max_threads = 1;
  for (const auto& [layout, idx] : by_layout)
    for (size_t i : idx)
      for (const Choice& c : be.Candidates(res->cells[i].cell)) max_threads = std::max(max_threads, c.split.threads);
  SeriesOptions opts = cfg.series;
  opts.max_threads = max_threads;
  for (const auto& [layout, idx] : by_layout) {
    std::vector<const CellOutcome*> outcomes;
    std::vector<tables::Entry*> entries;
    for (size_t i : idx) {
      outcomes.push_back(&res->cells[i]);
      entries.push_back(&res->table.entries[i]);
    }
    const std::string series = group + "/" + layout;
    try {
      const SeriesFit fit = FitSeries(search, be, series, outcomes, entries, opts);
      std::string line = series + ": thread rule " + fit.rule_source;
      for (const Crossover& c : fit.crossovers) {
        line += "; o" + std::to_string(c.octave) + "/" + std::to_string(c.octave + 1) + " cross at " +
                SizeLabel(c.n) + " (" + c.why + ")";
        res->crossovers.push_back(series + " octave " + std::to_string(c.octave) + ": " + std::to_string(c.n) + " (" +
                                  c.why + ")");
      }
      progress.Line(line);
    } catch (const Interrupted&) {
      throw;
    } catch (const LogMismatch&) {
      throw;
    } catch (const std::exception& e) {
      res->notes.push_back(series + ": crossovers not fitted: " + e.what());
      progress.Line(series + ": crossovers not fitted: " + e.what());
    }
  }
}

namespace {

// A screen's order of a group's variants at one octave.
struct ScreenOrder {
  int octave;
  std::vector<std::string> variants;  // best first
  int top;                            // how many survive
};

// What the steps of a tuning run share: the run's parts, its budget and the
// progress through the budget's static plan (each screen's and cell's
// share, which drives the progress display).
struct TuningRun {
  TuningRun(Backend& b, const TuneConfig& c, Progress& p, Search& s, const std::vector<CellSpec>& cs)
      : be(b), cfg(c), progress(p), search(s), cells(cs) {}
  Backend& be;
  const TuneConfig& cfg;
  Progress& progress;
  Search& search;
  const std::vector<CellSpec>& cells;
  size_t groups = 0;
  bool det = false;
  const RunBudget* budget = nullptr;
  // Progress: the plan done so far and the piece running now.
  double done_plan = 0, cur_plan = 0, cur_allow = 1, cur_start = 0;
  std::string cur_what;

  void StartPiece(double plan, double allow, const std::string& what) {
    cur_plan = plan;
    cur_allow = allow;
    cur_start = search.spent();
    cur_what = what;
  }
};

// The octaves of cfg nearest to the screen octaves (each once).
std::vector<int> ScreenOctaves(const TuneConfig& cfg) {
  std::vector<int> out;
  for (int s : cfg.screen_octaves) {
    int best = cfg.octaves.front();
    for (int k : cfg.octaves)
      if (std::abs(k - s) < std::abs(best - s)) best = k;
    if (std::find(out.begin(), out.end(), best) == out.end()) out.push_back(best);
  }
  return out;
}

// One screen of a group (`cell`: contiguous, at a screen octave): one
// candidate per variant, halved to the screen_keep best (and the best of
// each trait value).
ScreenOrder RunScreenAt(TuningRun& run, const Cell& cell, size_t screens_in_group) {
  const TuneConfig& cfg = run.cfg;
  std::vector<Choice> firsts;
  std::set<std::string> seen;
  for (auto& c : run.be.Candidates(cell))
    if (seen.insert(c.variant).second) firsts.push_back(c);
  std::vector<std::string> order;
  if (int(firsts.size()) <= cfg.screen_keep) {
    for (const auto& c : firsts) order.push_back(c.variant);
    return {cell.octave, order, int(order.size())};
  }
  const std::string name = GroupKey(cell) + "/o" + std::to_string(cell.octave);
  const double plan = run.budget->ScreenPlan(screens_in_group);
  // The screen's share of the plan, plus half of what the run has left
  // unused so far (cells that took less than their allowance). A fixed share
  // alone cut the screens of GELU (85-194 variants) to a sample of some
  // variants and none of others in runs that used a quarter of their budget.
  run.StartPiece(plan, RunBudget::ScreenAllowance(plan, run.done_plan, run.search.spent()),
                 "screen " + GroupKey(cell) + " o" + std::to_string(cell.octave));
  const CellOutcome o = run.search.RunScreen("screen/" + name, cell, firsts, cfg.screen_keep, run.cur_allow);
  run.done_plan += plan;
  for (const Choice& c : o.ranking) order.push_back(c.variant);
  for (const auto& c : firsts)  // cut by the budget: after the ranked ones
    if (std::find(order.begin(), order.end(), c.variant) == order.end()) order.push_back(c.variant);
  // The screen runs one thread: thread counts are the cells' business.
  const int top = KeepWithTraits(
      order, cfg.screen_keep,
      [&](const std::string& variant) {
        Choice c;
        c.variant = variant;
        std::vector<std::string> t = run.be.Traits(c);
        std::erase_if(t, [](const std::string& s) { return s.rfind("threads=", 0) == 0; });
        return t;
      },
      [](const std::string&) { return true; });
  std::string names;
  for (int i = 0; i < top; ++i) names += (i ? ", " : "") + order[size_t(i)];
  run.progress.Line("screen " + GroupKey(cell) + " o" + std::to_string(cell.octave) + ": " +
                    std::to_string(firsts.size()) + " variants -> " + names + (o.budget_cut ? " (budget cut)" : ""));
  return {cell.octave, order, top};
}

// Screening of a group: one candidate per variant at a mid and a large size
// (none for a deterministic backend: its cells measure every candidate).
std::vector<ScreenOrder> RunScreens(TuningRun& run, const Cell& g0) {
  std::vector<ScreenOrder> screens;
  if (run.det) return screens;
  const std::vector<int> octaves = ScreenOctaves(run.cfg);
  for (int k : octaves) {
    const Cell cell{g0.op, g0.dtype, "contig", k, RepresentativeN(k, run.cfg.max_n), g0.mode};
    screens.push_back(RunScreenAt(run, cell, octaves.size()));
  }
  return screens;
}

// The rank of a variant for octave k: its place in the nearest screen's top,
// else after them by the other screens; -1: unranked (dropped).
int ScreenRank(const std::vector<ScreenOrder>& screens, int k, const std::string& variant) {
  if (screens.empty()) return 0;
  std::vector<size_t> idx(screens.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return std::abs(screens[a].octave - k) < std::abs(screens[b].octave - k);
  });
  int base = 0;
  for (size_t i : idx) {
    const auto& order = screens[i].variants;
    const int top = screens[i].top;
    for (int r = 0; r < top; ++r)
      if (order[size_t(r)] == variant) return base + r;
    base += top;
  }
  return -1;
}

// A cell's candidates in the order that survives a budget cut: the screen's
// variant rank, and within it the split (threads) that won the previous
// size first, then the backend's order of configurations.
std::vector<Choice> OrderCandidates(std::vector<Choice> all, const std::vector<ScreenOrder>& screens, int octave,
                                    const Choice& inc, const Choice* prev_winner) {
  std::map<std::string, int> config_index;  // per variant, in backend order
  std::vector<std::pair<int, Choice>> ranked;
  for (auto& c : all) {
    int r = ScreenRank(screens, octave, c.variant);
    if (r < 0 && c.variant == inc.variant) r = 1 << 20;  // the default's other configurations
    const int ci = config_index[c.variant]++;
    const bool same_config = prev_winner && prev_winner->split == c.split;
    if (r >= 0) ranked.push_back({r + 2 * (same_config ? 0 : 1 + ci), std::move(c)});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& c) { return a.first < c.first; });
  std::vector<Choice> cands;
  for (auto& [r, c] : ranked) cands.push_back(std::move(c));
  return cands;
}

// Ties in the final round go to the backend's simpler candidate: its order.
void PreferBackendOrder(Search& search, const std::vector<Choice>& all) {
  auto order = std::make_shared<std::map<std::string, int>>();
  for (size_t k = 0; k < all.size(); ++k) order->emplace(all[k].Key(), int(k));
  search.preference = [order](const Choice& c) {
    const auto it = order->find(c.Key());
    return it == order->end() ? std::numeric_limits<int>::max() : it->second;
  };
}

// --check: fresh samples of the incumbent against the choice where the
// search saw it slower by more than confirm_above, and of the shipping
// choice against the untuned default.
void Confirm(TuningRun& run, const CellSpec& cs, CellOutcome* o) {
  const TuneConfig& cfg = run.cfg;
  if (cfg.confirm_reps > 0 && o->chosen.cand.Key() != o->incumbent.cand.Key() &&
      o->incumbent.median > o->chosen.median * (1.0 + cfg.confirm_above)) {
    const auto [si, sc] = run.search.Compare(cs.key, cs.cell, o->incumbent.cand, o->chosen.cand, cfg.confirm_reps);
    o->confirmed = CellOutcome::Confirmation{Median(si) / Median(sc), MannWhitneyLessP(sc, si), cfg.confirm_reps};
  }
  // --check: is the shipping choice slower than not tuning at all?
  if (cfg.judging && cfg.confirm_reps > 0) {
    const Choice def = run.be.Default(cs.cell);
    if (def.Key() != o->incumbent.cand.Key()) {
      const auto [si, sd] = run.search.Compare(cs.key + "/default", cs.cell, o->incumbent.cand, def, cfg.confirm_reps);
      o->vs_default = CellOutcome::Confirmation{Median(si) / Median(sd), MannWhitneyLessP(sd, si), cfg.confirm_reps};
    }
  }
}

// Moves c to the front of cands (adds it there if absent).
void PutFirst(const Choice& c, std::vector<Choice>* cands) {
  const auto it = std::find_if(cands->begin(), cands->end(), [&](const Choice& x) { return x.Key() == c.Key(); });
  if (it != cands->end()) cands->erase(it);
  cands->insert(cands->begin(), c);
}

// "default", "fallback" or "shipping": incumbent_name up to its colon.
std::string IncumbentLabel(const TuneConfig& cfg) {
  return cfg.incumbent_name.substr(0, cfg.incumbent_name.find(':'));
}

// One cell: the search against the incumbent within most of `allowance`,
// then the split refinements, the one-thread choice and --check's
// confirmations within the rest.
CellOutcome TuneCell(TuningRun& run, const CellSpec& cs, double allowance, const std::vector<ScreenOrder>& screens,
                     const Choice* prev_winner) {
  const TuneConfig& cfg = run.cfg;
  const Cell& cell = cs.cell;
  std::vector<Choice> all = run.be.Candidates(cell);
  if (all.empty()) throw std::runtime_error("the backend offers no candidates for this cell");
  PreferBackendOrder(run.search, all);
  const Choice inc = cfg.incumbent ? cfg.incumbent(cell) : run.be.Default(cell);
  std::vector<Choice> cands = OrderCandidates(std::move(all), screens, cell.octave, inc, prev_winner);
  if (cfg.seed) PutFirst(run.be.Default(cell), &cands);  // the fallback's choice must beat not tuning
  const bool one_thread = run.be.CallersCapThreads();
  const CellBudget budget(cfg, allowance, one_thread, run.cur_start);
  CellOutcome o = run.search.RunCell(cs.key, cell, std::move(cands), inc, budget.Search());
  RefineSplit(run.search, run.be, cs.key, budget.Refine(run.search.spent()), &o);
  if (cell.layout == "transposed") RefineRivalThreads(run.search, run.be, cs.key, budget.Refine(run.search.spent()), &o);
  if (one_thread) ChooseOneThread(run.search, run.be, cs.key, budget.OneThread(run.search.spent()), &o);
  Confirm(run, cs, &o);
  return o;
}

// The progress line of a tuned cell.
std::string CellLine(const TuneConfig& cfg, const CellSpec& cs, const CellOutcome& o) {
  return cs.key + " n=" + SizeLabel(cs.cell.n) + ": " + Short(o.chosen.cand) + "  " + Fmt("%.4g", o.chosen.median) +
         " ns, x" + Fmt("%.2f", o.incumbent.median / o.chosen.median) + " vs " + IncumbentLabel(cfg) +
         (o.one_thread ? "; one thread: " + o.one_thread->cand.variant : "") + "  [" + o.decision + "; " +
         std::to_string(o.candidates_searched) + "/" + std::to_string(o.candidates_total) + " candidates, " +
         Fmt("%.1f", o.cost_sec) + " s" + (o.budget_cut ? ", budget cut" : "") + "]";
}

// A group's cells after its screens, each within its allowance: a share
// (by weight) of what is left of the budget less the later groups' screens.
void TuneGroupCells(TuningRun& run, const std::vector<const CellSpec*>& gcells, size_t gi, size_t* ci,
                    const std::vector<ScreenOrder>& screens, TuneResult* res) {
  std::map<std::string, Choice> prev_winner;  // per layout: the last octave's choice
  for (const CellSpec* cs : gcells) {
    ++*ci;
    const double allowance = run.budget->CellAllowance(*cs, *ci - 1, gi, run.search.spent());
    run.StartPiece(run.budget->CellPlan(*cs), allowance, cs->key);
    try {
      const auto pw = prev_winner.find(cs->cell.layout);
      CellOutcome o = TuneCell(run, *cs, allowance, screens, pw == prev_winner.end() ? nullptr : &pw->second);
      res->budget_cut_cells += o.budget_cut;
      run.progress.Line(CellLine(run.cfg, *cs, o));
      prev_winner[cs->cell.layout] = o.chosen.cand;
      res->table.entries.push_back(ToEntry(o, run.be.CallersCapThreads(), IncumbentLabel(run.cfg)));
      res->cells.push_back(std::move(o));
    } catch (const Interrupted&) {
      throw;
    } catch (const LogMismatch&) {  // the run's log, not this cell, is at fault
      throw;
    } catch (const std::exception& e) {
      res->notes.push_back(cs->key + ": skipped: " + e.what());
      run.progress.Line(cs->key + ": skipped: " + e.what());
    }
    run.done_plan += run.cur_plan;
  }
}

// The table's backend, machine and provenance once every cell is tuned.
void FinishTable(const TuningRun& run, TuneResult* res) {
  Backend& be = run.be;
  const TuneConfig& cfg = run.cfg;
  res->spent_sec = run.search.spent();
  res->measured = run.search.measured();
  res->replayed = run.search.replayed();
  res->cached = run.search.cached();
  res->table.machine_id = be.MachineId();
  res->table.backend = be.Name();
  std::vector<double> regrets;
  for (const auto& o : res->cells) regrets.push_back(Regret(o));
  const double regret_geomean = regrets.empty() ? 1.0 : GeoMean(regrets);
  json prov = be.Provenance();
  prov["tool_version"] = kToolVersion;
  prov["backend"] = be.Name();
  prov["budget_sec"] = cfg.budget_sec;
  prov["quick"] = cfg.quick;
  prov["tuning"] = {{"cells", run.cells.size()},
                    {"entries", res->table.entries.size()},
                    {"measurements", res->measured + res->replayed + res->cached},
                    {"measurement_sec", std::round(res->spent_sec * 10) / 10},
                    {"budget_cut_cells", res->budget_cut_cells},
                    {"regret_geomean", std::round(regret_geomean * 1e4) / 1e4},
                    {"crossovers", res->crossovers.size()},
                    {"seed", cfg.search.seed},
                    {"notes", res->notes}};
  if (cfg.seed) {
    TuneConfig whole = cfg;
    whole.fit_cells = false;
    const size_t kept = AddSeedEntries(*cfg.seed, PlanCells(whole), &res->table);
    prov["seed"] = {{"machine_id", cfg.seed->machine_id}, {"entries_kept", kept}};
    prov["tuning"]["entries"] = res->table.entries.size();
  }
  // Which operand placements the final rounds spread their samples over (a
  // deterministic backend has no final round).
  if (!run.det) prov["tuning"]["placements"] = PlacementList(cfg.search.final_placements);
  res->table.provenance = prov;
}

}  // namespace

TuneResult RunTuning(Backend& be, MeasurementLog& log, const TuneConfig& cfg, Progress& progress,
                     const std::atomic<bool>* stop) {
  TuneResult res;
  const std::vector<CellSpec> cells = PlanCells(cfg);
  std::vector<std::string> groups;
  for (const auto& c : cells)
    if (groups.empty() || groups.back() != c.group) groups.push_back(c.group);
  Search search(be, log, cfg.search, stop);
  TuningRun run(be, cfg, progress, search, cells);
  run.groups = groups.size();
  run.det = be.Deterministic();
  const RunBudget budget(cfg, cells, groups.size(), run.det);
  run.budget = &budget;
  search.on_sample = [&] {
    const double f = std::min(1.0, (search.spent() - run.cur_start) / std::max(run.cur_allow, 1e-9));
    progress.Update(run.done_plan + f * run.cur_plan, run.cur_what);
  };
  progress.Begin("actgrad-tune: backend " + be.Name() + ", " + std::to_string(cells.size()) + " cells in " +
                     std::to_string(groups.size()) + " groups, budget " + FormatDuration(cfg.budget_sec) +
                     (cfg.quick ? " (quick)" : "") + (log.loaded() ? ", resuming: " + std::to_string(log.loaded()) +
                                                                          " logged measurements" : ""),
                 budget.measurement());
  size_t ci = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const size_t group_first_cell = res.cells.size();
    std::vector<const CellSpec*> gcells;
    for (const auto& c : cells)
      if (c.group == groups[gi]) gcells.push_back(&c);
    const std::vector<ScreenOrder> screens = RunScreens(run, gcells.front()->cell);
    TuneGroupCells(run, gcells, gi, &ci, screens, &res);
    // Per series (layout) of the group: crossovers, thread rules. Not for
    // --check: its cells judge the shipping table, they make none.
    if (be.CallersCapThreads() && !cfg.judging)
      FitGroupSeries(search, be, cfg, groups[gi], &res, group_first_cell, progress);
  }
  FinishTable(run, &res);
  const std::string kept =
      cfg.seed ? ", " + std::to_string(res.table.entries.size() - res.cells.size()) + " entries kept from the " +
                     IncumbentLabel(cfg) + " " + cfg.seed->machine_id
               : "";
  progress.End("tuned " + std::to_string(res.cells.size()) + " cells" + kept + ": " + std::to_string(res.measured) +
               " measurements taken, " + std::to_string(res.replayed) + " replayed from the log, " +
               std::to_string(res.cached) + " reused from the cache, " +
               FormatDuration(res.spent_sec) + " of measurement" +
               (res.budget_cut_cells ? ", " + std::to_string(res.budget_cut_cells) + " cells cut to fit the budget"
                                     : ""));
  return res;
}

namespace {

// The entries of `table` within cfg's ops, dtypes, octaves, layouts and GELU formulas.
std::vector<const tables::Entry*> SelectedEntries(const tables::Table& table, const TuneConfig& cfg) {
  const auto has = [](const auto& list, const auto& v) { return std::find(list.begin(), list.end(), v) != list.end(); };
  std::vector<const tables::Entry*> todo;
  for (const auto& e : table.entries)
    if (has(cfg.ops, e.op) && has(cfg.dtypes, e.dtype) && has(cfg.octaves, e.octave) &&
        has(cfg.layouts, std::string(tables::LayoutName(e.layout))) &&
        (e.op != Op::kGeluBwd || has(cfg.gelu_modes, e.mode)))
      todo.push_back(&e);
  return todo;
}

// One row's interleaved samples: sample k is repetition k / 2 of the entry
// (even k) or the baseline (odd k); repetition r at placement r %
// final_placements, as in the search's final round.
void MeasureVerifyRow(Backend& be, const TuneConfig& cfg, int reps, const std::atomic<bool>* stop, VerifyRow* row) {
  std::vector<double> a, d;
  const uint64_t seed = HashKey(cfg.search.seed, "verify/" + CellKey(row->cell));
  std::vector<int> placements;
  for (int k = 0; k < 2 * reps; ++k) placements.push_back(k / 2 % std::max(1, cfg.search.final_placements));
  for (size_t k : PlacementOrder(placements, seed)) {
    if (stop && stop->load()) throw Interrupted();
    const bool entry = k % 2 == 0;
    if (row->same && !entry) continue;
    be.SetPlacement(placements[k]);
    const auto s = be.Measure(row->cell, entry ? row->entry : row->base, 1, cfg.search.min_seconds);
    (entry ? a : d).push_back(s.at(0));
  }
  row->entry_ns = Median(a);
  row->base_ns = row->same ? row->entry_ns : Median(d);
  row->speedup = row->base_ns / row->entry_ns;
  row->p_value = row->same ? 1.0 : MannWhitneyLessP(a, d);
  row->p_slower = row->same ? 1.0 : MannWhitneyLessP(d, a);
}

}  // namespace

std::vector<VerifyRow> RunVerify(Backend& be, const tables::Table& table, const TuneConfig& cfg, int reps,
                                 Progress& progress, const std::atomic<bool>* stop, const Baseline& baseline) {
  std::vector<VerifyRow> rows;
  const std::vector<const tables::Entry*> todo = SelectedEntries(table, cfg);
  progress.Begin("actgrad-tune --verify: " + std::to_string(todo.size()) + " entries, " + std::to_string(reps) +
                     " interleaved samples each of the table's choice and the baseline, on placements " +
                     PlacementList(cfg.search.final_placements),
                 double(todo.size()));
  for (size_t i = 0; i < todo.size(); ++i) {
    const tables::Entry& e = *todo[i];
    VerifyRow row;
    row.cell = Cell{e.op, e.dtype, tables::LayoutName(e.layout), e.octave, RepresentativeN(e.octave, cfg.max_n),
                    e.mode};
    row.entry = e.At(row.cell.n, be.ThreadsAvailable());
    progress.Update(double(i), CellKey(row.cell));
    try {
      row.base = baseline ? baseline(row.cell) : be.Default(row.cell);
      row.same = row.base.Key() == row.entry.Key();
      MeasureVerifyRow(be, cfg, reps, stop, &row);
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& ex) {
      row.note = ex.what();
    }
    progress.Line(CellKey(row.cell) + ": x" + Fmt("%.2f", row.speedup) + (row.note.empty() ? "" : "  " + row.note));
    rows.push_back(std::move(row));
  }
  progress.End("");
  return rows;
}

std::string FormatVerify(const std::vector<VerifyRow>& rows, const std::string& baseline) {
  std::ostringstream o;
  char line[512];
  std::snprintf(line, sizeof(line), "%-34s %-8s %-44s %5s %7s %7s %11s %11s %8s\n", "cell", "n", "table's choice",
                "thr", "chunk", "stage", "table ns", "base ns", "speedup");
  o << line;
  std::map<std::string, std::vector<double>> by_group, by_group_layout;
  std::vector<std::string> order, order_l;
  int slower = 0;
  for (const auto& r : rows) {
    if (!r.note.empty()) {
      o << CellKey(r.cell) << ": not measured: " << r.note << "\n";
      continue;
    }
    // Significant either way (one-sided U tests), or neither.
    const std::string mark = r.same                 ? " (same)"
                             : r.p_value < kAlpha   ? ""
                             : r.p_slower < kAlpha  ? " (SLOWER than " + baseline + ", p=" + Fmt("%.2g", r.p_slower) + ")"
                                                    : " (n.s.)";
    if (!r.same && r.p_slower < kAlpha) ++slower;
    std::snprintf(line, sizeof(line), "%-34s %-8s %-44s %5d %7s %7s %11.4g %11.4g %7.2fx%s\n",
                  CellKey(r.cell).c_str(), SizeLabel(r.cell.n).c_str(), r.entry.variant.c_str(), r.entry.split.threads,
                  SplitField(r.entry.split.chunk).c_str(), SplitField(r.entry.split.stage_tile).c_str(), r.entry_ns,
                  r.base_ns, r.speedup, mark.c_str());
    o << line;
    const std::string g = std::string(OpName(r.cell.op)) + " " + std::string(DTypeName(r.cell.dtype)) +
                          (r.cell.op == Op::kGeluBwd ? " " + ModeName(r.cell.mode) : "");
    const std::string gl = g + " " + r.cell.layout;
    if (!by_group.count(g)) order.push_back(g);
    if (!by_group_layout.count(gl)) order_l.push_back(gl);
    by_group[g].push_back(r.speedup);
    by_group_layout[gl].push_back(r.speedup);
  }
  o << "\ngeometric mean speed-up over " << baseline << ", per op/dtype and layout:\n";
  for (const auto& g : order_l) {
    const auto& v = by_group_layout[g];
    std::snprintf(line, sizeof(line), "  %-30s %6.2fx  (%zu octaves, min %.2fx, max %.2fx)\n", g.c_str(), GeoMean(v),
                  v.size(), *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
    o << line;
  }
  o << "per op/dtype (all layouts):\n";
  std::vector<double> all;
  for (const auto& g : order) {
    const auto& v = by_group[g];
    all.insert(all.end(), v.begin(), v.end());
    std::snprintf(line, sizeof(line), "  %-30s %6.2fx\n", g.c_str(), GeoMean(v));
    o << line;
  }
  if (!all.empty()) {
    std::snprintf(line, sizeof(line), "overall: %.2fx over %zu entries; %d significantly slower than %s\n",
                  GeoMean(all), all.size(), slower, baseline.c_str());
    o << line;
  }
  return o.str();
}

json VerifyJson(const std::vector<VerifyRow>& rows) {
  json out = json::array();
  for (const auto& r : rows) {
    json j = {{"cell", CellKey(r.cell)}, {"op", OpName(r.cell.op)}, {"dtype", DTypeName(r.cell.dtype)},
              {"gelu_approx", ModeName(r.cell.mode)}, {"layout", r.cell.layout}, {"octave", r.cell.octave},
              {"n", r.cell.n}, {"entry", Short(r.entry)}, {"base", Short(r.base)}, {"same", r.same}};
    // The verdict at the tuner's significance level (thresholds.h), as FormatVerify marks it.
    const char* verdict = r.same ? "same" : r.p_value < kAlpha ? "faster" : r.p_slower < kAlpha ? "slower" : "n.s.";
    if (r.note.empty())
      j.update({{"entry_ns", r.entry_ns}, {"base_ns", r.base_ns}, {"speedup", r.speedup}, {"p_faster", r.p_value},
                {"p_slower", r.p_slower}, {"verdict", verdict}});
    else
      j["note"] = r.note;
    out.push_back(std::move(j));
  }
  return out;
}

std::string FormatCheck(const TuneResult& res, double tolerance) {
  std::ostringstream o;
  char line[640];
  std::snprintf(line, sizeof(line), "%-40s %-9s %-50s %11s %-50s %11s %9s %9s %s\n", "cell", "n", "shipping choice",
                "ship ns", "best found", "best ns", "ship/best", "confirmed", "verdict");
  o << line;
  struct Tally {
    int cells = 0, ok = 0;
    double worst = 1;
  };
  std::map<std::string, Tally> tuned, between;
  std::vector<std::string> order;
  for (const auto& c : res.cells) {
    const bool at_tuned = c.key.find('@') == std::string::npos;
    const double search_ratio = c.incumbent.median / c.chosen.median;  // >= 1: shipping slower
    // The verdict rests on the fresh samples when there are any: slower by
    // more than the tolerance, and significantly (kAlpha).
    const double ratio = c.confirmed ? c.confirmed->ratio : search_ratio;
    const bool ok = ratio <= 1.0 + tolerance || (c.confirmed && c.confirmed->p >= kAlpha);
    std::string verdict = ok ? "ok" : "SLOWER";
    if (c.confirmed) verdict += Fmt(" (fresh p=%.2g)", c.confirmed->p);
    else if (c.challenger_won) verdict += Fmt(" (p=%.2g)", c.p_value);
    if (c.confirmed && ok && search_ratio > 1.0 + tolerance) verdict += ", not confirmed";
    std::snprintf(line, sizeof(line), "%-40s %-9s %-50s %11.4g %-50s %11.4g %8.3fx %9s %s\n", c.key.c_str(),
                  SizeLabel(c.cell.n).c_str(), Short(c.incumbent.cand).c_str(), c.incumbent.median,
                  Short(c.chosen.cand).c_str(), c.chosen.median, search_ratio,
                  c.confirmed ? Fmt("%.3fx", c.confirmed->ratio).c_str() : "-", verdict.c_str());
    o << line;
    const std::string g = GroupKey(c.cell) + "/" + c.cell.layout;
    if (!tuned.count(g) && !between.count(g)) order.push_back(g);
    Tally& t = (at_tuned ? tuned : between)[g];
    ++t.cells;
    t.ok += ok;
    t.worst = std::max(t.worst, ratio);
  }
  o << "\nper op/dtype/layout: cells where the shipping choice is within " << Fmt("%.0f", tolerance * 100)
    << " % of the best found (confirmed by fresh samples where the search saw more; worst ratio)\n";
  int all = 0, all_ok = 0;
  for (const auto& g : order) {
    std::string row = "  " + g;
    row.resize(36, ' ');
    for (auto* m : {&tuned, &between}) {
      const auto it = m->find(g);
      if (it == m->end()) continue;
      row += (m == &tuned ? "  tuned sizes " : "  between sizes ") + std::to_string(it->second.ok) + "/" +
             std::to_string(it->second.cells) + Fmt(" (worst %.3fx)", it->second.worst);
      all += it->second.cells;
      all_ok += it->second.ok;
    }
    o << row << "\n";
  }
  o << "overall: " << all_ok << " of " << all << " cells within " << Fmt("%.0f", tolerance * 100) << " %\n";
  // Regret: the shipping choice over the best finalist of the same
  // interleaved final round (tuned sizes and between them), and the cells
  // where not tuning at all would be faster, significantly (U test p <
  // kAlpha) and by more than kMinGain.
  std::vector<double> regret, regret_tuned, regret_between;
  int vs_default = 0, slower_than_default = 0;
  std::string slower_cells;
  for (const auto& c : res.cells) {
    regret.push_back(ShippingRegret(c));
    (c.key.find('@') == std::string::npos ? regret_tuned : regret_between).push_back(ShippingRegret(c));
    if (!c.vs_default) continue;
    ++vs_default;
    if (c.vs_default->p < kAlpha && c.vs_default->ratio > 1.0 + kMinGain) {
      ++slower_than_default;
      slower_cells += " " + c.key + Fmt(" (%.3fx", c.vs_default->ratio) + Fmt(", p=%.2g)", c.vs_default->p);
    }
  }
  if (!regret.empty()) {
    std::vector<double> sorted = regret;
    std::sort(sorted.begin(), sorted.end());
    o << "regret of the shipping choice (its time / the best of the same final round): geometric mean "
      << Fmt("%.4f", GeoMean(regret)) << " over " << regret.size() << " cells"
      << (regret_tuned.empty() || regret_between.empty()
              ? ""
              : Fmt(" (%.4f at the tuned sizes", GeoMean(regret_tuned)) +
                    Fmt(", %.4f between them)", GeoMean(regret_between)))
      << ", median " << Fmt("%.4f", sorted[sorted.size() / 2]) << ", worst " << Fmt("%.4f", sorted.back()) << "\n";
  }
  if (vs_default > 0)
    o << "against the untuned default (fresh interleaved samples, " << vs_default << " cells where they differ): "
      << slower_than_default << " significantly slower (p < " << Fmt("%.2g", kAlpha) << ", > "
      << Fmt("%.0f", 100 * kMinGain) << " %)" << (slower_cells.empty() ? "" : ":")
      << slower_cells << "\n";
  return o.str();
}

}  // namespace actgrad::tune
