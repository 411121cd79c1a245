// --verify TABLE: re-measures the table's choices against the backend's
// default and prints the speed-ups (tuner.h RunVerify, FormatVerify).
#include <chrono>
#include <cstdio>

#include "tiling/table.h"
#include "tools/tune/cmd.h"

namespace actgrad::tune::cmd {

int Verify(Context& s) {
  const Flags& f = s.flags;
  Backend& backend = *s.backend;
  tables::Table table;
  std::string err;
  if (!tables::LoadTableFile(f.verify, &table, &err, backend.Name() == "cpu")) {
    std::fprintf(stderr, "actgrad-tune: --verify: %s\n", err.c_str());
    return 2;
  }
  if (table.backend != backend.Name()) {
    std::fprintf(stderr, "actgrad-tune: --verify: the table is for backend \"%s\"; use --backend %s\n",
                 table.backend.c_str(), table.backend.c_str());
    return 2;
  }
  if (table.backend == "cpu" && table.machine_id != backend.MachineId())
    std::fprintf(stderr, "actgrad-tune: note: the table was tuned on %s, this machine is %s\n",
                 table.machine_id.c_str(), backend.MachineId().c_str());
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const int reps = f.reps > 0 ? f.reps : (f.quick ? 5 : 9);
    const auto rows = RunVerify(backend, table, s.cfg, reps, *s.progress, &StopFlag());
    std::printf("# actgrad-tune --verify %s  (%s, %s, %s)\n", f.verify.c_str(), backend.MachineId().c_str(),
                NowUtc().c_str(),
                FormatDuration(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()).c_str());
    std::printf("%s", FormatVerify(rows).c_str());
  } catch (const Interrupted&) {
    std::fprintf(stderr, "actgrad-tune: interrupted\n");
    return 130;
  }
  return 0;
}

}  // namespace actgrad::tune::cmd
