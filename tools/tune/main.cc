// actgrad-tune: tunes the tiling table of this machine (docs/tuning.md).
//
//   actgrad-tune [--budget 10m] [--quick] [--ops ...] [--dtypes ...] [--sizes 1K-64M]
//   actgrad-tune --verify tiling/tables/<machine-id>.json
//   actgrad-tune --check [--check-points both] [--budget 10m]
//   actgrad-tune --shard K/N [...]             (shard.h; docs/tuning.md "Tuning a fleet")
//   actgrad-tune merge --out TABLE [--allow-partial] SHARD_TABLE...
//   actgrad-tune fit-rules TABLE [--out NEW]   (a schema-3 table's thread counts -> thread rules)
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "tiling/dispatch.h"
#include "tiling/machine.h"
#include "tiling/table.h"
#include "tools/tune/accuracy_gate.h"
#include "tools/tune/cpu_backend.h"
#include "tools/tune/log.h"
#include "tools/tune/measurement_key.h"
#include "tools/tune/out_table.h"
#include "tools/tune/progress.h"
#include "tools/tune/search.h"
#include "tools/tune/shard.h"
#include "tools/tune/stats.h"
#include "tools/tune/series.h"
#include "tools/tune/tuner.h"

#ifdef ACTGRAD_TUNER_HAVE_ATLAS
#include "atlas/tune/atlas_backend.h"
#endif
#ifdef ACTGRAD_TUNER_HAVE_ACCURACY_LIB
#include "tools/accuracy/check.h"
#endif

#ifndef ACTGRAD_TUNER_SOURCE_DIR
#define ACTGRAD_TUNER_SOURCE_DIR ""
#endif
#ifndef ACTGRAD_TUNER_GIT_COMMIT
#define ACTGRAD_TUNER_GIT_COMMIT "unknown"
#endif

using namespace actgrad;
using namespace actgrad::tune;
namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_stop{false};
// Set once the log is open: what main says if anything escapes after that.
std::string g_log_note;

void OnSignal(int sig) {
  g_stop.store(true);
  std::signal(sig, SIG_DFL);  // a second Ctrl-C kills at once (the log is safe either way)
}

std::vector<std::string> Split(const std::string& s, char sep = ',') {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// "10m", "90s", "1h30m", "1.5m", "600" (seconds).
bool ParseDuration(const std::string& s, double* out) {
  double total = 0, num = 0, frac = 0;
  bool have = false, in_frac = false;
  for (char c : s) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      if (in_frac) frac /= 10, num += (c - '0') * frac;
      else num = num * 10 + (c - '0');
      have = true;
    } else if (c == '.') {
      in_frac = true, frac = 1;
    } else {
      double unit = c == 's' ? 1 : c == 'm' ? 60 : c == 'h' ? 3600 : -1;
      if (unit < 0 || !have) return false;
      total += num * unit;
      num = 0, have = false, in_frac = false;
    }
  }
  if (have) total += num;
  *out = total;
  return total > 0;
}

// A size with an optional K/M/G suffix (powers of 2), or an octave index (< 48, no suffix).
bool ParseOctave(const std::string& s, int* k) {
  if (s.empty()) return false;
  size_t i = 0;
  uint64_t v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) v = v * 10 + uint64_t(s[i++] - '0');
  if (i == 0) return false;
  if (i == s.size()) {
    if (v <= uint64_t(kMaxOctaveIndex)) return *k = int(v), true;
    return *k = SizeOctave(v), true;
  }
  const char u = char(std::toupper(static_cast<unsigned char>(s[i])));
  if (i + 1 != s.size() || (u != 'K' && u != 'M' && u != 'G')) return false;
  v <<= (u == 'K' ? 10 : u == 'M' ? 20 : 30);
  *k = SizeOctave(v);
  return true;
}

bool ParseSizes(const std::string& spec, std::vector<int>* out, std::string* err) {
  out->clear();
  for (const std::string& tok : Split(spec)) {
    std::string a = tok, b = tok;
    if (auto p = tok.find(".."); p != std::string::npos) a = tok.substr(0, p), b = tok.substr(p + 2);
    else if (auto q = tok.find('-'); q != std::string::npos) a = tok.substr(0, q), b = tok.substr(q + 1);
    int ka, kb;
    if (!ParseOctave(a, &ka) || !ParseOctave(b, &kb)) return *err = "cannot read size \"" + tok + "\"", false;
    if (ka > kb) std::swap(ka, kb);
    for (int k = ka; k <= kb; ++k) {
      if (k < kMinOctave || k > kMaxOctave)
        return *err = "size octave " + std::to_string(k) + " is outside 10 (1K) .. 26 (64M)", false;
      if (std::find(out->begin(), out->end(), k) == out->end()) out->push_back(k);
    }
  }
  std::sort(out->begin(), out->end());
  if (out->empty()) return *err = "no sizes", false;
  return true;
}

bool ParseOps(const std::string& spec, std::vector<Op>* out, std::string* err) {
  out->clear();
  for (const std::string& tok : Split(spec)) {
    if (tok == "all") {
      *out = TuneConfig{}.ops;
      continue;
    }
    bool found = false;
    for (int i = 0; i < kNumOps && !found; ++i) {
      const std::string name(OpName(Op(i)));
      if (name == tok || name.rfind(tok, 0) == 0) {  // prefix: "gelu" -> gelu_bwd
        if (std::find(out->begin(), out->end(), Op(i)) == out->end()) out->push_back(Op(i));
        found = true;
      }
    }
    if (!found) return *err = "unknown op \"" + tok + "\"", false;
  }
  return !out->empty() || (*err = "no ops", false);
}

bool ParseDTypes(const std::string& spec, std::vector<DType>* out, std::string* err) {
  out->clear();
  for (const std::string& tok : Split(spec)) {
    DType t;
    if (!ParseDType(tok, &t)) return *err = "unknown dtype \"" + tok + "\"", false;
    if (std::find(out->begin(), out->end(), t) == out->end()) out->push_back(t);
  }
  return !out->empty() || (*err = "no dtypes", false);
}

std::string NowUtc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string Run(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[256];
    while (fgets(buf, sizeof(buf), p)) out += buf;
    if (pclose(p) != 0) return "";
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string GitCommit() {
  const std::string src = ACTGRAD_TUNER_SOURCE_DIR;
  if (!src.empty() && fs::exists(fs::path(src) / ".git")) {
    const std::string c = Run("git -C '" + src + "' describe --always --dirty --abbrev=12 2>/dev/null");
    if (!c.empty()) return c;
  }
  return ACTGRAD_TUNER_GIT_COMMIT;
}

// A path relative to the current directory when it exists there, else
// relative to the source tree the tool was built from.
std::string FindDefault(const std::string& rel) {
  if (fs::exists(rel)) return rel;
  const std::string src = ACTGRAD_TUNER_SOURCE_DIR;
  if (!src.empty() && fs::exists(fs::path(src) / rel)) return (fs::path(src) / rel).string();
  return rel;
}

std::unique_ptr<Backend> MakeBackend(const std::string& name, const std::string& soc, int device,
                                     const AccuracyGate* gate, int threads, std::string* err) {
  if (name == "cpu") {
    CpuBackendOptions o;
    o.max_threads = threads;
    return std::make_unique<CpuBackend>(gate, o);
  }
#ifdef ACTGRAD_TUNER_HAVE_ATLAS
  const std::string soc_path = soc.empty() ? FindDefault("atlas/soc/ascend910b.json") : soc;
  try {
    if (name == "atlas-model") return actgrad::atlas::MakeAtlasModelBackend(soc_path);
    // On an NPU with a CANN build; else the kernels on the AscendC emulator
    // (backend "atlas-device(emulator)", atlas/tune/atlas_device_backend.cc).
    if (name == "atlas-device") return actgrad::atlas::MakeAtlasDeviceBackend(soc_path, device);
  } catch (const std::exception& e) {
    *err = e.what();
    return nullptr;
  }
#else
  (void)soc, (void)device;
  if (name == "atlas-model" || name == "atlas-device") {
    *err = "this actgrad-tune was built without the Atlas backends (ACTGRAD_BUILD_ATLAS=OFF)";
    return nullptr;
  }
#endif
  *err = "unknown backend \"" + name + "\" (cpu, atlas-model, atlas-device)";
  return nullptr;
}

// A table could not be written at the end of a run: where its measurements
// are and how to get the table from them.
void SayHowToWriteFromTheLog(const MeasurementLog& log, const std::string& log_path) {
  std::fprintf(stderr,
               "actgrad-tune: no table written. The %zu measurements of this run are in %s: run the same command "
               "again (without --fresh; with another --out or --force if needed) and the log replays them, writing "
               "the table without measuring again\n",
               log.loaded() + log.appended(), log_path.c_str());
}

std::string DescribePlan(const OutPlan& plan) {
  switch (plan.action) {
    case OutPlan::Action::kCreate: return "new";
    case OutPlan::Action::kMerge:
      return "merge into its " + std::to_string(plan.existing.entries.size()) + " entries";
    case OutPlan::Action::kReplace: return "--force: replace it; it " + plan.replaced;
  }
  return "";
}

int Main(int argc, char** argv) {
  CLI::App app{"actgrad-tune: tunes the tiling table (variant and split: threads, chunk, stage tile; per op x dtype x size octave x layout)"};
  std::string budget_s, ops_s = "all", dtypes_s = "f32,f16,bf16", sizes_s = "1K-64M", layouts_s = "contig,bcast,strided,transposed";
  std::string modes_s, out_path, log_path, accuracy_path, backend_name = "cpu", soc_path, verify_path;
  bool quick = false, fresh = false, plain = false, dry_run = false, no_gate = false, check_missing = false;
  bool fsync_each = false, check = false, force = false;
  std::string check_points = "both";
  double tolerance_pct = 5;
  uint64_t seed = 1;
  int threads = 0, reps = 0, placements = 0, device = 0;
  double min_ms = 0;
  app.add_option("--budget", budget_s, "Time budget, e.g. 10m, 90s, 1h (default 10m; 85s with --quick)");
  app.add_flag("--quick", quick, "Fast, coarser run (fewer variants kept by the screen, fewer repetitions)");
  app.add_option("--ops", ops_s, "Ops (comma list, prefixes allowed: gelu,logit) or all");
  app.add_option("--dtypes", dtypes_s, "Dtypes: f32,f16,bf16 (i32,i8 for SELU)");
  app.add_option("--sizes", sizes_s, "Size octaves: 10-26, 1K-64M, 1K..64M, 64K,1M (octave h holds [2^h, 2^(h+1)))");
  app.add_option("--layouts", layouts_s,
                 "contig,bcast,strided,transposed: the API on the benchmarks' views (tools/inputs/views.h; bcast only for "
                 "ops that broadcast: gelu_bwd, softshrink_bwd; transposed from 16K elements)");
  app.add_option("--gelu-modes", modes_s,
                 "GELU formulas to tune: none (erf),tanh (default both; only none for non-CPU backends)");
  app.add_option("--out", out_path,
                 "Table to write (default tiling/tables/<machine-id>.json); a table of this machine there is merged "
                 "into: the run's cells replace theirs, the other entries are kept");
  app.add_flag("--force", force,
               "Replace an --out file that is not a valid table of this machine and backend (default: refuse)");
  app.add_option("--log", log_path, "Measurement log (default build/tune/<machine-id>-<backend>-<settings hash>.log.jsonl)");
  app.add_flag("--fsync-each", fsync_each,
               "fdatasync every log line before the next measurement (default: a background thread syncs)");
  app.add_flag("--fresh", fresh, "Start a new log instead of resuming (the old one is kept as .old)");
  app.add_option("--accuracy", accuracy_path, "Accuracy results (default docs/accuracy.json)");
  app.add_flag("--check-missing", check_missing, "Run the accuracy check now for variants absent from the results");
  app.add_flag("--no-accuracy-gate", no_gate, "Experiments only: let every variant compete, accurate or not");
  app.add_option("--backend", backend_name,
                 "Measurement backend: cpu, atlas-model (the cost model), atlas-device (ACL events on an NPU; in a "
                 "build without CANN the kernels on the AscendC emulator: emulator times, a table never to compile in)");
  app.add_option("--soc", soc_path, "SoC description for the atlas backends (atlas/soc/ascend910b.json)");
  app.add_option("--device", device, "NPU device id for --backend atlas-device (default 0)");
  app.add_option("--seed", seed, "Seed of the shuffled measurement order");
  app.add_option("--threads", threads, "Most threads to try (default: all cores)");
  app.add_option("--min-ms", min_ms, "Wall time of one sample in ms (default 1.5; 1 with --quick)");
  app.add_option("--verify", verify_path, "Re-measure TABLE's choices against the default and print the speed-ups");
  app.add_option("--reps", reps, "Samples per side in --verify (default 9; 5 with --quick)");
  app.add_option("--placements", placements,
                 "Operand placements (0..N-1, tools/inputs/placement.h) the final round, --check's confirmation and "
                 "--verify spread their samples over (default 4 for the cpu backend, 1 for others; 1 = placement 0 "
                 "only)");
  app.add_flag("--check", check,
               "Search again at the tuned sizes and between them with the shipping choice (the table the library "
               "uses: compiled-in or ACTGRAD_TILING_TABLE) as the incumbent; report how far it is from the best "
               "found. Writes no table");
  app.add_option("--check-points", check_points, "With --check: tuned, between or both (default both)");
  app.add_option("--tolerance", tolerance_pct, "With --check: % the shipping choice may be slower (default 5)");
  app.add_flag("--plain", plain, "Plain progress lines even on a terminal");
  app.add_flag("--dry-run", dry_run, "Print the cells and candidate counts, measure nothing");
  std::string shard_s;
  app.add_option("--shard", shard_s,
                 "K/N: tune only shard K (1..N) of the run's series (every octave of an op/dtype/mode/layout), so "
                 "that N identical machines split the work; join the tables with `actgrad-tune merge`");
  std::string merge_out;
  std::vector<std::string> merge_inputs;
  bool allow_partial = false;
  CLI::App* merge_cmd = app.add_subcommand(
      "merge", "Join the tables of shards (--shard K/N) into one table (refuses shards of another machine id, "
               "measurement key, backend or N, duplicate indices, overlapping cells, and missing shards)");
  merge_cmd->add_option("--out", merge_out, "The merged table (written atomically)")->required();
  merge_cmd->add_option("tables", merge_inputs, "The shard tables")->required();
  merge_cmd->add_flag("--allow-partial", allow_partial,
                      "Write a table even when shards are missing (its provenance lists them)");
  std::string fit_in, fit_out;
  CLI::App* fit_cmd = app.add_subcommand(
      "fit-rules", "Give a table tuned before thread rules (schema 3: absolute thread counts) thread rules fitted "
                   "from its own counts (docs/tuning.md), without measuring");
  fit_cmd->add_option("table", fit_in, "The table")->required();
  fit_cmd->add_option("--out", fit_out, "Where to write it (default: in place, atomically)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is 0; a bad command line is a usage error like the others
  }
  if (merge_cmd->parsed()) {
    MergeSummary ms;
    std::string merr;
    if (!MergeShardFiles(merge_out, merge_inputs, allow_partial, &ms, &merr)) {
      std::fprintf(stderr, "actgrad-tune: %s; nothing written\n", merr.c_str());
      return 2;
    }
    std::string missing;
    for (int k : ms.missing) missing += (missing.empty() ? "" : ",") + std::to_string(k);
    std::printf("wrote %s (%zu entries from %zu of %d shards%s)\n", merge_out.c_str(), ms.entries, ms.merged.size(),
                ms.count, missing.empty() ? "" : ("; missing " + missing).c_str());
    return 0;
  }

  if (fit_cmd->parsed()) {
    tables::Table t;
    std::string ferr;
    size_t fitted = 0;
    if (!tables::LoadTableFile(fit_in, &t, &ferr) || !FitRulesFromCounts(&t, &fitted, &ferr)) {
      std::fprintf(stderr, "actgrad-tune: %s%s; nothing written\n", ferr.rfind(fit_in, 0) == 0 ? "" : (fit_in + ": ").c_str(),
                   ferr.c_str());
      return 2;
    }
    t.provenance["thread_rules"] = "fitted by actgrad-tune fit-rules from the schema-" +
                                   std::to_string(t.source_version) + " thread counts (no crossovers bisected)";
    const std::string out = fit_out.empty() ? fit_in : fit_out;
    if (!tables::SaveTableFile(out, t, &ferr)) {
      std::fprintf(stderr, "actgrad-tune: %s\n", ferr.c_str());
      return 2;
    }
    std::printf("wrote %s: %zu of %zu entries given a thread rule\n", out.c_str(), fitted, t.entries.size());
    return 0;
  }

  TuneConfig cfg = TuneConfig::Defaults(quick);
  std::string err;
  if (!budget_s.empty() && !ParseDuration(budget_s, &cfg.budget_sec)) {
    std::fprintf(stderr, "actgrad-tune: cannot read --budget \"%s\" (e.g. 10m, 90s, 1h)\n", budget_s.c_str());
    return 2;
  }
  if (!ParseOps(ops_s, &cfg.ops, &err) || !ParseDTypes(dtypes_s, &cfg.dtypes, &err) ||
      !ParseSizes(sizes_s, &cfg.octaves, &err)) {
    std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
    return 2;
  }
  cfg.layouts = Split(layouts_s);
  for (const auto& l : cfg.layouts) {
    tables::Layout parsed;
    if (!tables::ParseLayout(l, &parsed)) {
      std::fprintf(stderr, "actgrad-tune: unknown layout \"%s\" (contig, bcast, strided, transposed)\n", l.c_str());
      return 2;
    }
  }
  // Atlas tables are tuned for the erf form; the host tiling lends its tilings to
  // the tanh form (docs/atlas.md). --gelu-modes tanh tunes the tanh kernels too.
  if (modes_s.empty()) modes_s = backend_name == "cpu" ? "none,tanh" : "none";
  cfg.gelu_modes.clear();
  for (const auto& m : Split(modes_s)) {
    if (m == "none" || m == "erf") cfg.gelu_modes.push_back(GeluApprox::kNone);
    else if (m == "tanh") cfg.gelu_modes.push_back(GeluApprox::kTanh);
    else {
      std::fprintf(stderr, "actgrad-tune: unknown GELU mode \"%s\" (none, tanh)\n", m.c_str());
      return 2;
    }
  }
  cfg.search.seed = seed;
  if (!shard_s.empty()) {
    if (!verify_path.empty()) {
      std::fprintf(stderr, "actgrad-tune: --shard splits a tuning run; --verify takes the whole table\n");
      return 2;
    }
    if (!ParseShard(shard_s, &cfg.shard_index, &cfg.shard_count, &err)) {
      std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
      return 2;
    }
  }
  if (check) {
    if (check_points == "tuned") cfg.points = TuneConfig::Points::kTuned;
    else if (check_points == "between") cfg.points = TuneConfig::Points::kBetween;
    else if (check_points == "both") cfg.points = TuneConfig::Points::kBoth;
    else {
      std::fprintf(stderr, "actgrad-tune: --check-points must be tuned, between or both (got \"%s\")\n",
                   check_points.c_str());
      return 2;
    }
    if (backend_name != "cpu") {
      std::fprintf(stderr, "actgrad-tune: --check needs the cpu backend (it times the library's own dispatch)\n");
      return 2;
    }
    // The incumbent of every cell is what the library would run at that n.
    cfg.incumbent = [](const Cell& b) {
      tables::Layout layout = tables::Layout::kContig;
      tables::ParseLayout(b.layout, &layout);  // checked with the options
      Choice c = TableChoice(b.op, b.dtype, b.mode, b.n, layout);
      if (c.variant.empty()) throw std::runtime_error("the dispatch has no kernel for this cell");
      return c;
    };
    cfg.incumbent_name = "shipping:" + ActiveTableName();
    // A cell the search calls slower is re-measured with fresh samples
    // before it counts as a miss (the best of many noisy estimates is biased).
    cfg.confirm_reps = std::max(cfg.search.final_reps, 10);
    cfg.confirm_above = tolerance_pct / 100.0;
  }
  if (min_ms > 0) cfg.search.min_seconds = min_ms / 1000.0;
  // Where the operands sit matters to host buffers only: other backends
  // ignore placements, so their tables do not claim any by default.
  if (placements == 0) placements = backend_name == "cpu" ? inputs::kDefaultPlacements : 1;
  if (placements < 1 || placements > 64) {
    std::fprintf(stderr, "actgrad-tune: --placements must be 1..64 (got %d)\n", placements);
    return 2;
  }
  cfg.search.final_placements = placements;

  // Accuracy gate (CPU backend: only variants that pass are candidates).
  AccuracyGate gate;
  if (backend_name == "cpu") {
    if (no_gate) {
      gate.AllowAll();
      std::fprintf(stderr, "actgrad-tune: --no-accuracy-gate: every variant competes; do not ship this table\n");
    } else {
      if (accuracy_path.empty()) accuracy_path = FindDefault("docs/accuracy.json");
      if (!gate.Load(accuracy_path, &err))
        std::fprintf(stderr,
                     "actgrad-tune: warning: no accuracy results (%s): only the default variants can be chosen "
                     "(threads, chunk and stage tile are still tuned)\n",
                     err.c_str());
#ifdef ACTGRAD_TUNER_HAVE_ACCURACY_LIB
      if (check_missing)
        gate.SetChecker([](const Variant& v) { return actgrad::acc::CheckVariant(v).pass; });
#else
      if (check_missing) std::fprintf(stderr, "actgrad-tune: --check-missing needs the accuracy library; ignored\n");
#endif
    }
  }

  std::unique_ptr<Backend> backend = MakeBackend(backend_name, soc_path, device, &gate, threads, &err);
  if (!backend) {
    std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
    return 2;
  }
  auto progress = Progress::Make(stderr, plain);

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);

  // ---------------------------------------------------------------- verify
  if (!verify_path.empty()) {
    tables::Table table;
    if (!tables::LoadTableFile(verify_path, &table, &err, backend->Name() == "cpu")) {
      std::fprintf(stderr, "actgrad-tune: --verify: %s\n", err.c_str());
      return 2;
    }
    if (table.backend != backend->Name()) {
      std::fprintf(stderr, "actgrad-tune: --verify: the table is for backend \"%s\"; use --backend %s\n",
                   table.backend.c_str(), table.backend.c_str());
      return 2;
    }
    if (table.backend == "cpu" && table.machine_id != backend->MachineId())
      std::fprintf(stderr, "actgrad-tune: note: the table was tuned on %s, this machine is %s\n",
                   table.machine_id.c_str(), backend->MachineId().c_str());
    try {
      const auto t0 = std::chrono::steady_clock::now();
      const auto rows = RunVerify(*backend, table, cfg, reps > 0 ? reps : (quick ? 5 : 9), *progress, &g_stop);
      std::printf("# actgrad-tune --verify %s  (%s, %s, %s)\n", verify_path.c_str(), backend->MachineId().c_str(),
                  NowUtc().c_str(),
                  FormatDuration(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()).c_str());
      std::printf("%s", FormatVerify(rows).c_str());
    } catch (const Interrupted&) {
      std::fprintf(stderr, "actgrad-tune: interrupted\n");
      return 130;
    }
    return 0;
  }

  // ---------------------------------------------------------------- tune
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
  const std::string id = backend->MachineId();
  std::error_code ec;
  // A shard's table is not a table to compile in (tiling/tables/ is): it
  // goes next to its log until `actgrad-tune merge` joins the shards.
  const std::string shard_tag =
      cfg.shard_count > 0 ? "-shard" + std::to_string(cfg.shard_index) + "of" + std::to_string(cfg.shard_count) : "";
  if (out_path.empty() && cfg.shard_count > 0) out_path = "build/tune/" + id + shard_tag + ".json";
  // Emulator times make no table to compile in: not into tiling/tables/.
  if (out_path.empty() && backend->Name() == "atlas-device(emulator)")
    out_path = "build/tune/" + id + "-atlas-device-emulator.json";
  if (out_path.empty())
    out_path = fs::is_directory("tiling/tables", ec) ? "tiling/tables/" + id + ".json" : id + ".json";
  // Checked before measuring, so that a run never ends with nowhere to write
  // (it is checked again when writing: the file may change meanwhile).
  OutPlan out_plan;
  if (!check && !PlanOut(out_path, id, backend->Name(), force, &out_plan, &err)) {
    std::fprintf(stderr, "actgrad-tune: --out %s\n", err.c_str());
    return 2;
  }
  nlohmann::json header = cfg.ToJson();
  header["backend"] = backend->Name();
  header["machine_id"] = id;
  if (backend_name == "cpu") header["accuracy_gate"] = no_gate ? "off" : gate.source();
  if (log_path.empty()) {
    char hash[20];
    std::snprintf(hash, sizeof(hash), "%08llx", (unsigned long long)(HashKey(0, header.dump()) & 0xffffffffull));
    log_path = "build/tune/" + id + "-" + backend->Name() + "-" + hash + shard_tag + ".log.jsonl";
  }

  if (dry_run) {
    size_t total = 0;
    for (const auto& c : PlanCells(cfg)) {
      const auto cands = backend->Candidates(c.cell);
      std::set<std::string> vs;
      for (const auto& x : cands) vs.insert(x.variant);
      std::printf("%-36s n=%-10llu %4zu candidates (%3zu variants), default %s\n", c.key.c_str(),
                  (unsigned long long)c.cell.n, cands.size(), vs.size(), backend->Default(c.cell).Key().c_str());
      ++total;
    }
    std::printf("%zu cells; log %s; table %s (%s)\n", total, log_path.c_str(), out_path.c_str(),
                check ? "none: --check writes no table" : DescribePlan(out_plan).c_str());
    if (!gate.absent().empty())
      std::printf("%zu supported variants are absent from %s (not candidates)\n", gate.absent().size(),
                  gate.source().c_str());
    return 0;
  }

  const MeasurementKey key = MeasurementKey::Current(GitCommit(), id);
  MeasurementLog log;
  if (!log.Open(log_path, header, fresh, &err,
                fsync_each ? MeasurementLog::SyncMode::kEveryLine : MeasurementLog::SyncMode::kBackground,
                key.ToJson())) {
    std::fprintf(stderr, "actgrad-tune: %s\n", err.c_str());
    return 2;
  }
  if (!log.stale_note().empty()) std::fprintf(stderr, "actgrad-tune: %s\n", log.stale_note().c_str());
  if (log.torn_lines())
    std::fprintf(stderr, "actgrad-tune: ignored %zu torn line(s) in %s (an interrupted write)\n", log.torn_lines(),
                 log_path.c_str());
  if (log.rejected_lines())
    std::fprintf(stderr, "actgrad-tune: skipped %zu bad record(s) in %s; what they held is measured again\n",
                 log.rejected_lines(), log_path.c_str());
  for (const std::string& p : log.problems()) std::fprintf(stderr, "actgrad-tune:   %s\n", p.c_str());
  g_log_note = "the measurements taken are in " + log_path;
  std::fprintf(stderr, "actgrad-tune: log %s%s\n", log_path.c_str(),
               log.loaded() ? (" (resuming: " + std::to_string(log.loaded()) + " measurements)").c_str() : "");

  // Other processes on the cores make multi-threaded candidates look slow
  // (a parallel region waits for its descheduled threads): say so.
  double load_start[3] = {0, 0, 0};
  if (getloadavg(load_start, 3) == 3 && backend->Name() == "cpu" && load_start[0] > 0.5)
    std::fprintf(stderr,
                 "actgrad-tune: note: load average %.2f: other processes share the cores; multi-threaded candidates "
                 "will look slower than on an idle machine (tune on a quiet machine for a table to ship)\n",
                 load_start[0]);
  const auto t0 = std::chrono::steady_clock::now();
  TuneResult res;
  try {
    res = RunTuning(*backend, log, cfg, *progress, &g_stop);
  } catch (const Interrupted&) {
    std::fprintf(stderr,
                 "\nactgrad-tune: interrupted; %zu measurements are in %s. Run the same command again to resume.\n",
                 log.loaded() + log.appended(), log_path.c_str());
    return 130;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nactgrad-tune: failed: %s\n(the log %s keeps the measurements taken)\n", e.what(),
                 log_path.c_str());
    return 1;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (check) {
    double load_end[3] = {0, 0, 0};
    getloadavg(load_end, 3);
    std::printf(
        "# actgrad-tune --check: shipping table %s (%s), %s, %s wall, load average %.2f -> %.2f, placements %s\n",
        ActiveTableName().c_str(), ActiveTable().reason.c_str(), NowUtc().c_str(), FormatDuration(wall).c_str(),
        load_start[0], load_end[0], PlacementList(cfg.search.final_placements).c_str());
    std::printf("%s", FormatCheck(res, tolerance_pct / 100.0).c_str());
    return 0;
  }
  if (!gate.absent().empty()) {
    std::fprintf(stderr, "actgrad-tune: warning: %zu supported variants are absent from %s and were not candidates "
                 "(stale results? rerun actgrad-accuracy, or pass --check-missing)\n",
                 gate.absent().size(), gate.source().c_str());
  }

  res.table.provenance["git_commit"] = key.git_commit;
  res.table.provenance["measurement_key"] = key.ToJson();
  if (cfg.shard_count > 0) res.table.provenance["shard"] = ShardProvenance(cfg, cfg.shard_index, cfg.shard_count);
  res.table.provenance["date"] = NowUtc();
  res.table.provenance["tool_version"] = kToolVersion;
  res.table.provenance["wall_sec"] = std::round(wall * 10) / 10;
  res.table.provenance["log"] = log_path;
  double load_end[3] = {0, 0, 0};
  getloadavg(load_end, 3);
  res.table.provenance["load_average"] = {{"start", std::round(load_start[0] * 100) / 100},
                                          {"end", std::round(load_end[0] * 100) / 100}};
  res.table.provenance["command"] = [&] {
    std::string c = "actgrad-tune";
    for (int i = 1; i < argc; ++i) c += std::string(" ") + argv[i];
    return c;
  }();
  if (backend_name == "cpu") {
    res.table.provenance["accuracy_gate"] = no_gate ? "off" : gate.source();
    res.table.provenance["accuracy_absent_variants"] = gate.absent().size();
  }
  if (res.table.entries.empty()) {
    for (const auto& n : res.notes) std::fprintf(stderr, "actgrad-tune: %s\n", n.c_str());
    std::fprintf(stderr, "actgrad-tune: no cell was tuned; no table written\n");
    return 1;
  }
  WriteOutcome wrote;
  if (!WriteRunTable(out_path, res.table, force, &wrote, &err)) {
    std::fprintf(stderr, "actgrad-tune: cannot write the table: %s\n", err.c_str());
    SayHowToWriteFromTheLog(log, log_path);
    return 1;
  }

  // Summary: speed-up of the choice over the default per op/dtype/layout.
  std::map<std::string, std::vector<double>> sp;
  std::vector<std::string> order;
  for (const auto& c : res.cells) {
    const std::string g = GroupKey(c.cell) + " " + c.cell.layout;
    if (!sp.count(g)) order.push_back(g);
    sp[g].push_back(c.incumbent.median / c.chosen.median);
  }
  std::string how;
  if (wrote.action == OutPlan::Action::kMerge)
    how = ": " + std::to_string(wrote.counts.added) + " added, " + std::to_string(wrote.counts.replaced) +
          " replaced, " + std::to_string(wrote.counts.kept) + " kept";
  else if (wrote.action == OutPlan::Action::kReplace)
    how = "; --force replaced the file, which " + wrote.replaced;
  std::printf("wrote %s (%zu entries%s) in %s wall time (%s of measurement; budget %s)\n", out_path.c_str(),
              wrote.entries, how.c_str(), FormatDuration(wall).c_str(), FormatDuration(res.spent_sec).c_str(),
              FormatDuration(cfg.budget_sec).c_str());
  if (wall > cfg.budget_sec * 1.05)
    std::printf("note: the run took longer than the budget (the minimal search of some cells overran its share)\n");
  std::printf("geometric-mean speed-up over the default (tuning samples):\n");
  for (const auto& g : order) std::printf("  %-32s %.2fx\n", g.c_str(), GeoMean(sp[g]));
  {  // notes, grouped by reason (e.g. a layout the backend does not offer)
    std::map<std::string, std::vector<std::string>> by_reason;
    std::vector<std::string> reasons;
    for (const auto& n : res.notes) {
      const auto p = n.find(": ");
      const std::string cell = n.substr(0, p), why = p == std::string::npos ? n : n.substr(p + 2);
      if (!by_reason.count(why)) reasons.push_back(why);
      by_reason[why].push_back(cell);
    }
    for (const auto& why : reasons) {
      const auto& cells = by_reason[why];
      std::printf("note: %zu cell(s) %s: %s%s\n", cells.size(), why.c_str(), cells.front().c_str(),
                  cells.size() > 1 ? (" ... " + cells.back()).c_str() : "");
    }
  }
  std::printf("check it with: actgrad-tune --verify %s\n", out_path.c_str());
  return 0;
}

}  // namespace

// Nothing escapes as an abort: a library or CLI11 exception ends the run with
// a message and exit 2 (and where the measurements are, once there are any).
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nactgrad-tune: error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "\nactgrad-tune: error: unknown exception\n");
  }
  if (!g_log_note.empty()) std::fprintf(stderr, "actgrad-tune: %s\n", g_log_note.c_str());
  return 2;
}
