#include "tools/tune/budget.h"

#include "tools/tune/tuner.h"

namespace actgrad::tune {

RunBudget::RunBudget(const TuneConfig& cfg, const std::vector<CellSpec>& cells, size_t groups, bool deterministic)
    : cells_(cells), groups_(groups) {
  measurement_ = cfg.budget_sec * (1.0 - cfg.overhead_share);
  // A deterministic backend screens nothing: its cells measure every candidate.
  screen_per_group_ = deterministic || groups == 0 ? 0.0 : measurement_ * cfg.screen_share / double(groups);
  for (const auto& c : cells) total_weight_ += c.weight;
  cell_pool_ = measurement_ - screen_per_group_ * double(groups);
}

double RunBudget::CellPlan(const CellSpec& cell) const { return cell_pool_ * cell.weight / total_weight_; }

double RunBudget::CellAllowance(const CellSpec& cell, size_t index, size_t group, double spent) const {
  double later_weight = 0;
  for (size_t j = index; j < cells_.size(); ++j) later_weight += cells_[j].weight;
  const double reserve = screen_per_group_ * double(groups_ - group - 1);
  return std::max(0.0, measurement_ - spent - reserve) * cell.weight / later_weight;
}

CellBudget::CellBudget(const TuneConfig& cfg, double allowance, bool one_thread, double start)
    : allowance_(allowance),
      refine_share_(cfg.refine_share),
      one_thread_share_(cfg.one_thread_share),
      start_(start),
      one_thread_(one_thread) {}

double CellBudget::Search() const {
  const double stages = refine_share_ + (one_thread_ ? one_thread_share_ : 0.0);
  return allowance_ * (1.0 - stages);
}

double CellBudget::Refine(double spent) const {
  return allowance_ * (1.0 - (one_thread_ ? one_thread_share_ : 0.0)) - (spent - start_);
}

double CellBudget::OneThread(double spent) const { return allowance_ - (spent - start_); }

}  // namespace actgrad::tune
