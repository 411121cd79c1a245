// --check's report: the shipping table's choices against the best the
// search found at the tuned sizes and between them (tuner.h FormatCheck).
#include <cstdio>

#include "tiling/dispatch.h"
#include "tools/tune/cmd.h"

namespace actgrad::tune::cmd {

void PrintCheck(const Context& s, const TuneResult& res, double wall, const double load_start[3]) {
  double load_end[3] = {0, 0, 0};
  getloadavg(load_end, 3);
  std::printf(
      "# actgrad-tune --check: shipping table %s (%s), %s, %s wall, load average %.2f -> %.2f, placements %s\n",
      ActiveTableName().c_str(), ActiveTable().reason.c_str(), NowUtc().c_str(), FormatDuration(wall).c_str(),
      load_start[0], load_end[0], PlacementList(s.cfg.search.final_placements).c_str());
  std::printf("%s", FormatCheck(res, s.flags.tolerance_pct / 100.0).c_str());
}

}  // namespace actgrad::tune::cmd
