// The measurement budget in one place: what a run may spend on samples, how
// it is shared out (screens, cells, a cell's stages) and what is left. Every
// "spent" is the search's virtual clock (Search::spent: the logged cost of
// every sample used, replayed ones included), so a resumed run shares the
// budget out exactly as the run it resumes. Within a cell, the strategy fits
// its plan to the cell's allowance (CellSearch::budget_sec, strategy.cc).
#pragma once
#include <algorithm>
#include <cstddef>
#include <vector>

namespace actgrad::tune {

struct TuneConfig;
struct CellSpec;

// A piece of the budget: `total` seconds from `start` on the run's spending.
struct Allowance {
  double total = 0, start = 0;
  // What is left at `spent` (0 once overrun).
  double Left(double spent) const { return std::max(0.0, total - (spent - start)); }
};

// A run's budget: the measurement budget (the budget less the set-up
// overhead), each group's screens' share, and the cells' shares by weight.
class RunBudget {
 public:
  RunBudget(const TuneConfig& cfg, const std::vector<CellSpec>& cells, size_t groups, bool deterministic);

  double measurement() const { return measurement_; }
  // The static plan (what the progress display follows): a screen's share
  // when its group has `screens` of them, and a cell's.
  double ScreenPlan(size_t screens) const { return screen_per_group_ / double(screens); }
  double CellPlan(const CellSpec& cell) const;
  // What a screen may spend: its plan and half of what the run has left
  // unused so far (`done_plan`: the plan of the screens and cells done).
  static double ScreenAllowance(double plan, double done_plan, double spent) {
    return plan + 0.5 * std::max(0.0, done_plan - spent);
  }
  // What cell `index` of the run (in group `group`) may spend: its weight's
  // share of what is left, less the screens of the groups after it.
  double CellAllowance(const CellSpec& cell, size_t index, size_t group, double spent) const;

 private:
  const std::vector<CellSpec>& cells_;
  size_t groups_;
  double measurement_, screen_per_group_, total_weight_ = 0, cell_pool_;
};

// A cell's allowance over its stages: the search against the incumbent, the
// split refinements, the one-thread choice (when callers can cap threads).
// A later stage gets what the earlier ones left, the refinements less the
// one-thread stage's share.
class CellBudget {
 public:
  CellBudget(const TuneConfig& cfg, double allowance, bool one_thread, double start);
  double Search() const;
  double Refine(double spent) const;
  double OneThread(double spent) const;

 private:
  double allowance_, refine_share_, one_thread_share_, start_;
  bool one_thread_;
};

}  // namespace actgrad::tune
