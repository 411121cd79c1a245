// --verify TABLE: re-measures the table's choices against the backend's
// default of the table's accuracy class (or, --against fallback, the choices
// of the table the fallback chain gives a machine without its own; --against
// FILE, the choices the library makes with that table) and prints the
// speed-ups (tuner.h RunVerify, FormatVerify; --verify-json: the rows as JSON).
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "tiling/dispatch.h"
#include "tiling/machine.h"
#include "tiling/table.h"
#include "tools/tune/cmd.h"

namespace actgrad::tune::cmd {

namespace {

// --against TABLE: the library's choices with that table (loaded as
// ACTGRAD_TILING_TABLE is); false with a message when it cannot be used.
bool UseBaselineTable(const std::string& path, std::string* name) {
  tables::Table t;
  std::string err;
  if (!tables::LoadTableFile(path, &t, &err) || t.backend != "cpu") {
    std::fprintf(stderr, "actgrad-tune: --against: %s\n", err.empty() ? (path + ": not a CPU table").c_str() : err.c_str());
    return false;
  }
  ::setenv("ACTGRAD_TILING_TABLE", path.c_str(), 1);
  ReloadTilingTable();
  if (ActiveTable().source != "env:" + path) {
    std::fprintf(stderr, "actgrad-tune: --against: the library did not take %s\n", path.c_str());
    return false;
  }
  *name = "the table " + path + " (" + t.machine_id + ", accuracy class " +
          std::string(AccuracyClassName(t.accuracy_class)) + ")";
  return true;
}

// {"machine_id", "table", "baseline", "date", "wall_sec", "rows": [...]},
// written through a temporary file and a rename.
bool WriteVerifyJson(const std::string& path, const Context& s, const tables::Table& table, const std::string& name,
                     const std::vector<VerifyRow>& rows, double wall) {
  const nlohmann::json j = {{"machine_id", s.backend->MachineId()}, {"cpu_model", CpuModelName()},
                            {"table", s.flags.verify}, {"table_machine_id", table.machine_id},
                            {"accuracy_class", std::string(AccuracyClassName(table.accuracy_class))},
                            {"baseline", name}, {"date", NowUtc()}, {"wall_sec", wall}, {"alpha", kAlpha},
                            {"rows", VerifyJson(rows)}};
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(1) << "\n";
    if (!out.flush()) {
      std::fprintf(stderr, "actgrad-tune: cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "actgrad-tune: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

}  // namespace

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
  // The backend's default (the baseline "default") is the table's class's.
  s.gate.SetClass(table.accuracy_class);
  try {
    const auto t0 = std::chrono::steady_clock::now();
    const int reps = f.reps > 0 ? f.reps : (f.quick ? 5 : 9);
    Baseline baseline;
    std::string name = "the default";
    if (f.against == "fallback") {
      ReloadTilingTable("", "", /*as_new_machine=*/true);
      name = "the fallback (" + ActiveTable().machine_id + ")";
      baseline = DispatchChoice;  // the active table is now the fallback
    } else if (f.against != "default") {
      if (!UseBaselineTable(f.against, &name)) return 2;
      baseline = DispatchChoice;  // the active table is now --against's
    }
    const auto rows = RunVerify(backend, table, s.cfg, reps, *s.progress, &StopFlag(), baseline);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("# actgrad-tune --verify %s against %s  (%s, %s, %s)\n", f.verify.c_str(), name.c_str(),
                backend.MachineId().c_str(), NowUtc().c_str(), FormatDuration(wall).c_str());
    std::printf("%s", FormatVerify(rows, name).c_str());
    if (!f.verify_json.empty() && !WriteVerifyJson(f.verify_json, s, table, name, rows, wall)) return 1;
  } catch (const Interrupted&) {
    std::fprintf(stderr, "actgrad-tune: interrupted\n");
    return 130;
  }
  return 0;
}

}  // namespace actgrad::tune::cmd
