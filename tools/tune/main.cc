// actgrad-tune: tunes the tiling table of this machine (docs/tuning.md).
//
//   actgrad-tune [--budget 10m] [--quick] [--ops ...] [--dtypes ...] [--sizes 1K-64M]
//   actgrad-tune --verify tiling/tables/<machine-id>.json
//   actgrad-tune --check [--check-points both] [--budget 10m]
//   actgrad-tune --shard K/N [...]             (shard.h; docs/fleet.md)
//   actgrad-tune merge --out TABLE [--allow-partial] SHARD_TABLE...
//   actgrad-tune fit-rules TABLE [--out NEW]   (a schema-3 table's thread counts -> thread rules)
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "tools/tune/cmd.h"

using namespace actgrad::tune;

namespace {

// What to tune, where to write and log, the accuracy gate.
void AddRunFlags(CLI::App& app, cmd::Flags* f) {
  app.add_option("--budget", f->budget, "Time budget, e.g. 10m, 90s, 1h (default 10m; 85s with --quick)");
  app.add_flag("--quick", f->quick, "Fast, coarser run (fewer variants kept by the screen, fewer repetitions)");
  app.add_option("--ops", f->ops, "Ops (comma list, prefixes allowed: gelu,logit) or all");
  app.add_option("--dtypes", f->dtypes, "Dtypes: f32,f16,bf16 (i32,i8 for SELU)");
  app.add_option("--sizes", f->sizes, "Size octaves: 10-26, 1K-64M, 1K..64M, 64K,1M (octave h holds [2^h, 2^(h+1)))");
  app.add_option("--layouts", f->layouts,
                 "contig,bcast,strided,transposed: the API on the benchmarks' views (tools/inputs/views.h; bcast only for "
                 "ops that broadcast: gelu_bwd, softshrink_bwd; transposed from 16K elements)");
  app.add_option("--gelu-modes", f->gelu_modes,
                 "GELU formulas to tune: none (erf),tanh (default both; only none for non-CPU backends)");
  app.add_option("--out", f->out,
                 "Table to write (default tiling/tables/<machine-id>.json); a table of this machine there is merged "
                 "into: the run's cells replace theirs, the other entries are kept");
  app.add_flag("--install", f->install,
               "After writing --out, copy the table atomically to this machine's user cache "
               "($ACTGRAD_TABLE_CACHE, else $XDG_CACHE_HOME/actgrad/tables, else ~/.cache/actgrad/tables; "
               "<machine-id>.json), which the library uses without a rebuild (cpu backend only)");
  app.add_flag("--force", f->force,
               "Replace an --out file that is not a valid table of this machine and backend (default: refuse)");
  app.add_option("--log", f->log,
                 "Measurement log (default build/tune/<machine-id>-<backend>-<settings hash>.log.jsonl); a log of "
                 "other search settings (seed, budget, search version, ...) under the same measurement key is kept "
                 "as <log>.cache-<hash>, whose samples the new log reuses");
  app.add_flag("--fsync-each", f->fsync_each,
               "fdatasync every log line before the next measurement (default: a background thread syncs)");
  app.add_flag("--fresh", f->fresh, "Start a new log instead of resuming (the old one is kept as .old)");
  app.add_option("--accuracy", f->accuracy, "Accuracy results (default docs/accuracy.json)");
  app.add_flag("--check-missing", f->check_missing, "Run the accuracy check now for variants absent from the results");
  app.add_flag("--no-accuracy-gate", f->no_gate, "Experiments only: let every variant compete, accurate or not");
  app.add_option("--accuracy-class", f->accuracy_class,
                 "rule (default): every variant that meets the spec's accuracy rule competes; near-exact: only those "
                 "within the output's half-ulp plus 1e-6 of the double reference (GELU as PyTorch and oneDNN compute "
                 "it); the table says its class, default --out build/tune/<machine-id>-near-exact.json")
      ->check(CLI::IsMember({"rule", "near-exact"}));
}

// The backend, how to measure, --verify, --check, the display, --shard.
void AddMeasureFlags(CLI::App& app, cmd::Flags* f) {
  app.add_option("--backend", f->backend,
                 "Measurement backend: cpu, atlas-model (the cost model), atlas-device (ACL events on an NPU; in a "
                 "build without CANN the kernels on the AscendC emulator: emulator times, a table never to compile in)");
  app.add_option("--soc", f->soc, "SoC description for the atlas backends (atlas/soc/ascend910b.json)");
  app.add_option("--device", f->device, "NPU device id for --backend atlas-device (default 0)");
  app.add_option("--seed", f->seed, "Seed of the shuffled measurement order");
  app.add_option("--threads", f->threads, "Most threads to try (default: all cores)");
  app.add_option("--min-ms", f->min_ms, "Wall time of one sample in ms (default 1.5; 1 with --quick)");
  app.add_option("--verify", f->verify, "Re-measure TABLE's choices against the default and print the speed-ups");
  app.add_option("--against", f->against,
                 "--verify's baseline: default (the untuned default of TABLE's accuracy class), fallback (the choice "
                 "of the table a machine without its own gets: the fallback chain, as --as-new-machine) or a table "
                 "file (the library's choice with that table, as ACTGRAD_TILING_TABLE: e.g. the rule-class table a "
                 "near-exact one would replace, for the price of exactness)")
      ->check(CLI::IsMember({"default", "fallback"}) | CLI::ExistingFile);
  app.add_option("--verify-json", f->verify_json, "With --verify: also write the rows as JSON to this file (atomically)");
  app.add_flag("--as-new-machine", f->as_new_machine,
               "Pose as a machine without a table of its own: the library ignores this machine's compiled-in table, "
               "ACTGRAD_TILING_TABLE and the user cache, so --check judges the table the fallback chain gives");
  app.add_option("--reps", f->reps, "Samples per side in --verify (default 9; 5 with --quick)");
  app.add_option("--placements", f->placements,
                 "Operand placements (0..N-1, tools/inputs/placement.h) the final round, --check's confirmation and "
                 "--verify spread their samples over (default 4 for the cpu backend, 1 for others; 1 = placement 0 "
                 "only)");
  app.add_flag("--check", f->check,
               "Search again at the tuned sizes and between them with the shipping choice (the table the library "
               "uses: compiled-in or ACTGRAD_TILING_TABLE) as the incumbent; report how far it is from the best "
               "found. Writes no table");
  app.add_option("--check-points", f->check_points, "With --check: tuned, between or both (default both)");
  app.add_option("--tolerance", f->tolerance_pct, "With --check: % the shipping choice may be slower (default 5)");
  app.add_flag("--plain", f->plain, "Plain progress lines even on a terminal");
  app.add_flag("--dry-run", f->dry_run, "Print the cells and candidate counts, measure nothing");
  app.add_option("--shard", f->shard,
                 "K/N: tune only shard K (1..N) of the run's series (every octave of an op/dtype/mode/layout), so "
                 "that N identical machines split the work; join the tables with `actgrad-tune merge`");
}

int Main(int argc, char** argv) {
  CLI::App app{"actgrad-tune: tunes the tiling table (variant and split: threads, chunk, stage tile; per op x dtype x size octave x layout)"};
  cmd::Flags flags;
  AddRunFlags(app, &flags);
  AddMeasureFlags(app, &flags);
  cmd::MergeFlags merge;
  CLI::App* merge_cmd = app.add_subcommand(
      "merge", "Join the tables of shards (--shard K/N) into one table (refuses shards of another machine id, "
               "measurement key, backend or N, duplicate indices, overlapping cells, and missing shards)");
  merge_cmd->add_option("--out", merge.out, "The merged table (written atomically)")->required();
  merge_cmd->add_option("tables", merge.inputs, "The shard tables")->required();
  merge_cmd->add_flag("--allow-partial", merge.allow_partial,
                      "Write a table even when shards are missing (its provenance lists them)");
  bool which_table = false;
  app.add_flag("--which-table", which_table,
               "Print, as JSON, this machine's id and facts, the table the library uses and why, the table a machine "
               "without its own would get, and the user-cache path; measure nothing");
  cmd::FitRulesFlags fit;
  CLI::App* fit_cmd = app.add_subcommand(
      "fit-rules", "Give a table tuned before thread rules (schema 3: absolute thread counts) thread rules fitted "
                   "from its own counts (docs/tuning.md), without measuring");
  fit_cmd->add_option("table", fit.in, "The table")->required();
  fit_cmd->add_option("--out", fit.out, "Where to write it (default: in place, atomically)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is 0; a bad command line is a usage error like the others
  }
  if (which_table) return cmd::WhichTable();
  if (merge_cmd->parsed()) return cmd::Merge(merge);
  if (fit_cmd->parsed()) return cmd::FitRules(fit);

  if (flags.install && (flags.backend != "cpu" || !flags.shard.empty() || flags.check || flags.dry_run ||
                        !flags.verify.empty())) {
    std::fprintf(stderr, "actgrad-tune: --install is for a tuning run of the cpu backend (not --shard, --check, "
                         "--dry-run or --verify)\n");
    return 2;
  }
  flags.command = "actgrad-tune";
  for (int i = 1; i < argc; ++i) flags.command += std::string(" ") + argv[i];
  cmd::Context context;
  if (const int rc = cmd::Setup(flags, &context)) return rc;
  return flags.verify.empty() ? cmd::Tune(context) : cmd::Verify(context);
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
  if (!cmd::LogNote().empty()) std::fprintf(stderr, "actgrad-tune: %s\n", cmd::LogNote().c_str());
  return 2;
}
