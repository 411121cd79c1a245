// --dry-run: the cells of the run with their candidate counts and defaults,
// the log and the table it would write; nothing is measured.
#include <cstdio>
#include <set>

#include "tools/tune/cmd.h"

namespace actgrad::tune::cmd {

namespace {

std::string DescribePlan(const OutPlan& plan) {
  switch (plan.action) {
    case OutPlan::Action::kCreate: return "new";
    case OutPlan::Action::kMerge:
      return "merge into its " + std::to_string(plan.existing.entries.size()) + " entries";
    case OutPlan::Action::kReplace: return "--force: replace it; it " + plan.replaced;
  }
  return "";
}

}  // namespace

int DryRun(const Context& s, const RunPaths& paths) {
  size_t total = 0;
  for (const auto& spec : PlanCells(s.cfg)) {
    const auto cands = s.backend->Candidates(spec.cell);
    std::set<std::string> vs;
    for (const auto& x : cands) vs.insert(x.variant);
    std::printf("%-36s n=%-10llu %4zu candidates (%3zu variants), default %s\n", spec.key.c_str(),
                (unsigned long long)spec.cell.n, cands.size(), vs.size(),
                s.backend->Default(spec.cell).Key().c_str());
    ++total;
  }
  std::printf("%zu cells; log %s; table %s (%s)\n", total, paths.log.c_str(), paths.out.c_str(),
              s.flags.check ? "none: --check writes no table" : DescribePlan(paths.out_plan).c_str());
  if (!s.gate.absent().empty())
    std::printf("%zu supported variants are absent from %s (not candidates)\n", s.gate.absent().size(),
                s.gate.source().c_str());
  return 0;
}

}  // namespace actgrad::tune::cmd
