// The subcommands of actgrad-tune, one file each (main.cc reads the command
// line and dispatches):
//   cmd_merge.cc      `merge`: joins the tables of shards
//   cmd_fit_rules.cc  `fit-rules`: thread rules for a schema-3 table
//   cmd_verify.cc     --verify: re-measures a table against the default or the fallback
//   cmd_which.cc      --which-table: the machine, its table and its fallback
//   cmd_dry_run.cc    --dry-run: the cells and candidates, nothing measured
//   cmd_tune.cc       the tuning run (and --check, which runs the same search)
//   cmd_check.cc      --check's report
//   cmd_setup.cc      what they share: the configuration, the accuracy gate,
//                     the backend, the paths
// Each returns the process's exit code: 0 done, 1 failed, 2 a usage or
// input error, 130 interrupted.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/tune/accuracy_gate.h"
#include "tools/tune/backend.h"
#include "tools/tune/out_table.h"
#include "tools/tune/progress.h"
#include "tools/tune/thresholds.h"
#include "tools/tune/tuner.h"

namespace actgrad::tune::cmd {

// The flags of a measuring command (tuning, --check, --verify, --dry-run), as
// typed; Setup turns them into a TuneConfig.
struct Flags {
  std::string budget, ops = "all", dtypes = "f32,f16,bf16", sizes = "1K-64M",
                      layouts = "contig,bcast,strided,transposed";
  std::string gelu_modes, out, log, accuracy, backend = "cpu", soc, verify, shard;
  std::string check_points = "both";
  std::string accuracy_class = "rule";  // --accuracy-class: rule | near-exact (AccuracyClass)
  bool quick = false, fresh = false, plain = false, dry_run = false, no_gate = false, check_missing = false;
  bool fsync_each = false, check = false, force = false;
  bool install = false;  // also copy the table to the user cache (UserTableCacheDir)
  // Measure as a machine without a table of its own (ReloadTilingTable's
  // as_new_machine): --check judges the fallback chain's table.
  bool as_new_machine = false;
  std::string against = "default";  // --verify's baseline: default | fallback
  std::string verify_json;           // --verify: also write the rows as JSON here
  double tolerance_pct = 100 * kCheckTolerance;
  uint64_t seed = 1;
  int threads = 0, reps = 0, placements = 0, device = 0;
  double min_ms = 0;
  std::string command;  // the command line as typed (the table's provenance)
};

struct MergeFlags {
  std::string out;
  std::vector<std::string> inputs;
  bool allow_partial = false;
};

struct FitRulesFlags {
  std::string in, out;
};

// What the measuring commands share once the flags are read.
struct Context {
  Flags flags;
  TuneConfig cfg;
  AccuracyGate gate;
  std::unique_ptr<Backend> backend;
  std::unique_ptr<Progress> progress;
};

// Where a tuning run (or its dry run) reads and writes.
struct RunPaths {
  std::string out, log;
  OutPlan out_plan;          // unset with --check (it writes no table)
  nlohmann::json header;     // the log header's config
};

int Merge(const MergeFlags& flags);
int WhichTable();
int FitRules(const FitRulesFlags& flags);
// Reads the flags into a context (configuration, gate, backend); on a usage
// error prints it and returns its exit code, else 0.
int Setup(const Flags& flags, Context* context);
int Verify(Context& context);
int Tune(Context& context);
int DryRun(const Context& context, const RunPaths& paths);
// --check's report of a finished search (stdout); wall: its seconds.
void PrintCheck(const Context& context, const TuneResult& res, double wall, const double load_start[3]);

// The choice the library's dispatch makes for a cell from the table it
// uses now (TableChoice): --check's incumbent, the quick pass's start,
// --verify --against fallback's baseline.
Choice DispatchChoice(const Cell& cell);

// Raised by SIGINT/SIGTERM: the search stops at the next sample.
std::atomic<bool>& StopFlag();
// Set once the log is open: what main says if anything escapes after that.
std::string& LogNote();
std::string NowUtc();
std::string GitCommit();
// A path relative to the current directory when it exists there, else
// relative to the source tree the tool was built from.
std::string FindDefault(const std::string& rel);

}  // namespace actgrad::tune::cmd
