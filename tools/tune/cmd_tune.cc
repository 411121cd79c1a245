// The tuning run (and --check, which runs the same search with the shipping
// choices as incumbents): plans where to read and write, opens the
// measurement log (resuming it), runs the search (tuner.h RunTuning) and
// writes the table with its provenance.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <unistd.h>

#include "tiling/dispatch.h"
#include "tiling/table.h"
#include "tiling/freshness.h"
#include "tools/tune/cmd.h"
#include "tools/tune/log.h"
#include "tools/tune/measurement_key.h"
#include "tools/tune/shard.h"
#include "tools/tune/stats.h"

namespace actgrad::tune::cmd {

namespace fs = std::filesystem;

namespace {

// A table could not be written at the end of a run: where its measurements
// are and how to get the table from them.
void SayHowToWriteFromTheLog(const MeasurementLog& log, const std::string& log_path) {
  std::fprintf(stderr,
               "actgrad-tune: no table written. The %zu measurements of this run are in %s: run the same command "
               "again (without --fresh; with another --out or --force if needed) and the log replays them, writing "
               "the table without measuring again\n",
               log.loaded() + log.appended(), log_path.c_str());
}

// A selection without cells is a usage error (said before anything else).
int CheckSelection(const TuneConfig& cfg) {
  if (cfg.shard_count > 0 && PlanCells(cfg).empty()) {
    TuneConfig whole = cfg;
    whole.shard_count = 0;
    const size_t series = AssignSeries(PlanCells(whole), 1).series.front().size();
    if (series > 0) {
      std::fprintf(stderr,
                   "actgrad-tune: --shard %d/%d has no series: the selection has %zu series (every octave of an "
                   "op/dtype/mode/layout), so use at most %zu shards\n",
                   cfg.shard_index, cfg.shard_count, series, series);
      return 2;
    }
  }
  if (PlanCells(cfg).empty()) {
    std::fprintf(stderr,
                 "actgrad-tune: the selection has no cells (i32 and i8 are SELU only; bcast is GELU and Softshrink "
                 "only): nothing to measure, no table written\n");
    return 2;
  }
  return 0;
}

// The table's and the log's paths (defaults from the machine id, backend,
// settings and shard) and the log header's config.
int PlanPaths(const Context& s, RunPaths* paths) {
  const TuneConfig& cfg = s.cfg;
  const Backend& backend = *s.backend;
  const std::string id = s.backend->MachineId();
  std::error_code ec;
  // A shard's table is not a table to compile in (tiling/tables/ is): it
  // goes next to its log until `actgrad-tune merge` joins the shards.
  const std::string shard_tag =
      cfg.shard_count > 0 ? "-shard" + std::to_string(cfg.shard_index) + "of" + std::to_string(cfg.shard_count) : "";
  paths->out = s.flags.out;
  if (paths->out.empty() && cfg.shard_count > 0) paths->out = "build/tune/" + id + shard_tag + ".json";
  // Emulator times make no table to compile in: not into tiling/tables/.
  if (paths->out.empty() && backend.Name() == "atlas-device(emulator)")
    paths->out = "build/tune/" + id + "-atlas-device-emulator.json";
  // The compiled-in tables keep the rule (actgrad-tablegen refuses others).
  if (paths->out.empty() && s.gate.accuracy_class() != AccuracyClass::kRule)
    paths->out = "build/tune/" + id + "-" + std::string(AccuracyClassName(s.gate.accuracy_class())) + ".json";
  if (paths->out.empty())
    paths->out = fs::is_directory("tiling/tables", ec) ? "tiling/tables/" + id + ".json" : id + ".json";
  // Checked before measuring, so that a run never ends with nowhere to write
  // (it is checked again when writing: the file may change meanwhile).
  std::string err;
  if (!s.flags.check &&
      !PlanOut(paths->out, id, backend.Name(), s.flags.force, &paths->out_plan, &err, s.gate.accuracy_class())) {
    std::fprintf(stderr, "actgrad-tune: --out %s\n", err.c_str());
    return 2;
  }
  paths->header = cfg.ToJson();
  paths->header["backend"] = backend.Name();
  paths->header["machine_id"] = id;
  if (s.flags.backend == "cpu") paths->header["accuracy_gate"] = s.flags.no_gate ? "off" : s.gate.source();
  // A search setting, not part of what a sample measures (MeasuredPart): a
  // rule run's log serves a near-exact run as its cache.
  if (s.gate.accuracy_class() != AccuracyClass::kRule)
    paths->header["accuracy_class"] = std::string(AccuracyClassName(s.gate.accuracy_class()));
  paths->log = s.flags.log;
  if (paths->log.empty()) {
    char hash[20];
    std::snprintf(hash, sizeof(hash), "%08llx",
                  (unsigned long long)(HashKey(0, paths->header.dump()) & 0xffffffffull));
    paths->log = "build/tune/" + id + "-" + backend.Name() + "-" + hash + shard_tag + ".log.jsonl";
  }
  return 0;
}

// Opens (or resumes) the measurement log and says what it found.
int OpenLog(const Context& s, const RunPaths& paths, const MeasurementKey& key, MeasurementLog* log) {
  std::string err;
  const auto sync = s.flags.fsync_each ? MeasurementLog::SyncMode::kEveryLine : MeasurementLog::SyncMode::kBackground;
  log->SetMeasuredPart(MeasuredPart);
  if (!log->Open(paths.log, paths.header, s.flags.fresh, &err, sync, key.ToJson())) {
    std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
    return 2;
  }
  if (!log->stale_note().empty()) std::fprintf(stderr, "actgrad-tune: %s\n", log->stale_note().c_str());
  if (!log->cache_note().empty()) std::fprintf(stderr, "actgrad-tune: %s\n", log->cache_note().c_str());
  if (log->cache_skipped_lines())
    std::fprintf(stderr, "actgrad-tune: skipped %zu torn or bad line(s) in the cache %s\n", log->cache_skipped_lines(),
                 log->cache_path().c_str());
  if (log->torn_lines())
    std::fprintf(stderr, "actgrad-tune: ignored %zu torn line(s) in %s (an interrupted write)\n", log->torn_lines(),
                 paths.log.c_str());
  if (log->rejected_lines())
    std::fprintf(stderr, "actgrad-tune: skipped %zu bad record(s) in %s; what they held is measured again\n",
                 log->rejected_lines(), paths.log.c_str());
  for (const std::string& p : log->problems()) std::fprintf(stderr, "actgrad-tune:   %s\n", p.c_str());
  LogNote() = "the measurements taken are in " + paths.log;
  std::fprintf(stderr, "actgrad-tune: log %s%s%s\n", paths.log.c_str(),
               log->loaded() ? (" (resuming: " + std::to_string(log->loaded()) + " measurements)").c_str() : "",
               log->cache_path().empty() ? ""
                                         : (", cache " + log->cache_path() + " (" +
                                            std::to_string(log->cache_available()) + " samples left)").c_str());
  return 0;
}

// The run's provenance in its table: the key, the tool, the wall time, the
// load, the command.
void AddProvenance(const Context& s, const RunPaths& paths, const MeasurementKey& key, double wall,
                   const double load_start[3], tables::Table* table) {
  const TuneConfig& cfg = s.cfg;
  table->provenance["git_commit"] = key.git_commit;
  table->provenance["measurement_key"] = key.ToJson();
  if (cfg.shard_count > 0) table->provenance["shard"] = ShardProvenance(cfg, cfg.shard_index, cfg.shard_count);
  table->provenance["date"] = NowUtc();
  table->provenance["tool_version"] = kToolVersion;
  table->provenance["wall_sec"] = std::round(wall * 10) / 10;
  table->provenance["log"] = paths.log;
  double load_end[3] = {0, 0, 0};
  getloadavg(load_end, 3);
  table->provenance["load_average"] = {{"start", std::round(load_start[0] * 100) / 100},
                                       {"end", std::round(load_end[0] * 100) / 100}};
  table->provenance["command"] = s.flags.command;
  if (s.flags.backend == "cpu") {
    table->provenance["accuracy_gate"] = s.flags.no_gate ? "off" : s.gate.source();
    table->provenance["accuracy_absent_variants"] = s.gate.absent().size();
    RecordTunedAmong(table, kSearchVersion, table->provenance["date"].get<std::string>(),
                     [](const Variant& v) { return v.supported; });
  }
}

// The notes of a run, grouped by reason (e.g. a layout the backend does not offer).
void PrintNotes(const std::vector<std::string>& notes) {
  std::map<std::string, std::vector<std::string>> by_reason;
  std::vector<std::string> reasons;
  for (const auto& n : notes) {
    const auto p = n.find(": ");
    const std::string key = n.substr(0, p), why = p == std::string::npos ? n : n.substr(p + 2);
    if (!by_reason.count(why)) reasons.push_back(why);
    by_reason[why].push_back(key);
  }
  for (const auto& why : reasons) {
    const auto& cells = by_reason[why];
    std::printf("note: %zu cell(s) %s: %s%s\n", cells.size(), why.c_str(), cells.front().c_str(),
                cells.size() > 1 ? (" ... " + cells.back()).c_str() : "");
  }
}

// What was written, and the speed-up of the choices over the default per
// op/dtype/layout.
void PrintSummary(const Context& s, const RunPaths& paths, const TuneResult& res, const WriteOutcome& wrote,
                  double wall) {
  std::map<std::string, std::vector<double>> speedups;
  std::vector<std::string> order;
  for (const auto& c : res.cells) {
    const std::string g = GroupKey(c.cell) + " " + c.cell.layout;
    if (!speedups.count(g)) order.push_back(g);
    speedups[g].push_back(c.incumbent.median / c.chosen.median);
  }
  std::string how;
  if (wrote.action == OutPlan::Action::kMerge)
    how = ": " + std::to_string(wrote.counts.added) + " added, " + std::to_string(wrote.counts.replaced) +
          " replaced, " + std::to_string(wrote.counts.kept) + " kept";
  else if (wrote.action == OutPlan::Action::kReplace)
    how = "; --force replaced the file, which " + wrote.replaced;
  std::printf("wrote %s (%zu entries%s) in %s wall time (%s of measurement; budget %s)\n", paths.out.c_str(),
              wrote.entries, how.c_str(), FormatDuration(wall).c_str(), FormatDuration(res.spent_sec).c_str(),
              FormatDuration(s.cfg.budget_sec).c_str());
  if (wall > s.cfg.budget_sec * 1.05)
    std::printf("note: the run took longer than the budget (the minimal search of some cells overran its share)\n");
  std::printf("geometric-mean speed-up over the default (tuning samples):\n");
  for (const auto& g : order) std::printf("  %-32s %.2fx\n", g.c_str(), GeoMean(speedups[g]));
  PrintNotes(res.notes);
  std::printf("check it with: actgrad-tune --verify %s\n", paths.out.c_str());
}

// Writes the run's table (merged into --out's per its plan) and the summary.
int WriteTable(Context& s, const RunPaths& paths, const MeasurementLog& log, TuneResult& res, double wall) {
  if (res.table.entries.empty()) {
    for (const auto& n : res.notes) std::fprintf(stderr, "actgrad-tune: %s\n", n.c_str());
    std::fprintf(stderr, "actgrad-tune: no cell was tuned; no table written\n");
    return 1;
  }
  WriteOutcome wrote;
  std::string err;
  if (!WriteRunTable(paths.out, res.table, s.flags.force, &wrote, &err)) {
    std::fprintf(stderr, "actgrad-tune: cannot write the table: %s\n", err.c_str());
    SayHowToWriteFromTheLog(log, paths.log);
    return 1;
  }
  PrintSummary(s, paths, res, wrote, wall);
  return 0;
}

// --install: this machine's table in the user cache (UserTableCacheDir),
// whose directory is made before measuring, so that a run does not end with
// nowhere to install.
int PrepareInstall(const Context& s, std::string* path) {
  const std::string dir = UserTableCacheDir();
  if (dir.empty()) {
    std::fprintf(stderr, "actgrad-tune: --install: no user cache directory (ACTGRAD_TABLE_CACHE, XDG_CACHE_HOME and "
                         "HOME are unset)\n");
    return 2;
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    std::fprintf(stderr, "actgrad-tune: --install: cannot create the directory %s: %s\n", dir.c_str(),
                 ec ? ec.message().c_str() : "it is not a directory");
    return 2;
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    std::fprintf(stderr, "actgrad-tune: --install: cannot write in %s\n", dir.c_str());
    return 2;
  }
  *path = dir + "/" + s.backend->MachineId() + ".json";
  return 0;
}

// Copies the table written to `out` (validated again) to `path` atomically
// (tables::SaveTableFile: a temporary file in the directory, fsync, rename).
int Install(const std::string& out, const std::string& path) {
  tables::Table t;
  std::string err;
  if (!tables::LoadTableFile(out, &t, &err) || !tables::SaveTableFile(path, t, &err)) {
    std::fprintf(stderr, "actgrad-tune: --install: cannot install the table: %s\n", err.c_str());
    return 1;
  }
  std::printf("installed %s: the library uses it on this machine without a rebuild (before the compiled-in tables; "
              "ACTGRAD_TILING_TABLE still overrides)\n",
              path.c_str());
  return 0;
}

}  // namespace

int Tune(Context& s) {
  if (const int rc = CheckSelection(s.cfg)) return rc;
  RunPaths paths;
  if (const int rc = PlanPaths(s, &paths)) return rc;
  if (s.flags.dry_run) return DryRun(s, paths);
  std::string install;
  if (s.flags.install)
    if (const int rc = PrepareInstall(s, &install)) return rc;

  const MeasurementKey key = MeasurementKey::Current(GitCommit(), s.backend->MachineId());
  MeasurementLog log;
  if (const int rc = OpenLog(s, paths, key, &log)) return rc;
  // Other processes on the cores make multi-threaded candidates look slow
  // (a parallel region waits for its descheduled threads): say so.
  double load_start[3] = {0, 0, 0};
  if (getloadavg(load_start, 3) == 3 && s.backend->Name() == "cpu" && load_start[0] > 0.5)
    std::fprintf(stderr,
                 "actgrad-tune: note: load average %.2f: other processes share the cores; multi-threaded candidates "
                 "will look slower than on an idle machine (tune on a quiet machine for a table to ship)\n",
                 load_start[0]);
  const auto t0 = std::chrono::steady_clock::now();
  TuneResult res;
  try {
    res = RunTuning(*s.backend, log, s.cfg, *s.progress, &StopFlag());
  } catch (const Interrupted&) {
    std::fprintf(stderr,
                 "\nactgrad-tune: interrupted; %zu measurements are in %s. Run the same command again to resume.\n",
                 log.loaded() + log.appended(), paths.log.c_str());
    return 130;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nactgrad-tune: failed: %s\n(the log %s keeps the measurements taken)\n", e.what(),
                 paths.log.c_str());
    return 1;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (s.flags.check) {
    PrintCheck(s, res, wall, load_start);
    return 0;
  }
  res.table.accuracy_class = s.gate.accuracy_class();
  if (!s.gate.absent().empty()) {
    std::fprintf(stderr, "actgrad-tune: warning: %zu supported variants are absent from %s and were not candidates "
                 "(stale results? rerun actgrad-accuracy, or pass --check-missing)\n",
                 s.gate.absent().size(), s.gate.source().c_str());
  }
  AddProvenance(s, paths, key, wall, load_start, &res.table);
  if (const int rc = WriteTable(s, paths, log, res, wall)) return rc;
  return install.empty() ? 0 : Install(paths.out, install);
}

}  // namespace actgrad::tune::cmd
