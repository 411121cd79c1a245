"""Command line: ``python -m reports <subcommand>`` (``./scripts/report``).

Subcommands: plot, compare, stability, figures, tune-gain, tables-agree, record, dashboard, history run, synth.
Exit codes: 0 success (compare: no significant regression), 1 compare found a
significant regression, 2 bad input: a bad file, option, --db or output path,
or an error of the database itself (read-only, corrupt, unreachable); one line
names the path and the problem, nothing is written and no database changes.
3 internal error: a bug here (an exception that is not InputError/OutputError),
with its traceback. docs/reports.md lists the cases.
"""

import argparse
import os
import re
import sys
import traceback

from .errors import InputError, OutputError

EXIT_OK, EXIT_REGRESSION, EXIT_BAD_INPUT, EXIT_INTERNAL = 0, 1, 2, 3
PROG = "report"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the repository


def _err(msg):
    print(f"{PROG}: error: {msg}", file=sys.stderr)


def _pct(text):
    from .compare import parse_threshold
    return parse_threshold(text)


def _regex(text, flag):
    if text is None:
        return None
    try:
        re.compile(text)
    except re.error as e:
        raise InputError(flag, f"bad regular expression {text!r}: {e}")
    return text


def _indices(text):
    try:
        out = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of placement indices (e.g. 0,1,2,3)")
    if any(k < 0 for k in out):
        raise argparse.ArgumentTypeError(f"{text!r}: placement indices are >= 0")
    return out


def cmd_plot(a):
    from . import report
    index, nfig, skipped, notes = report.build(a.files, a.out)
    for what, why in skipped:
        print(f"skipped {what}: {why}")
    for n in notes:
        print(f"note: {n}")
    print(f"wrote {index} ({nfig} figures, PNG and SVG)")
    return EXIT_OK


def cmd_compare(a):
    from . import compare
    _regex(a.filter, "--filter")
    return compare.run(a)


def cmd_stability(a):
    from . import stability
    return stability.run(a)


def cmd_figures(a):
    from . import figures
    return figures.run(a)


def cmd_tables_agree(a):
    from . import tables
    return tables.run(a)


def _resolve(run, doc, a):
    from .history import parse_date
    commit = a.commit or run.context.get("actgrad_git_commit")
    machine = a.machine or run.context.get("actgrad_machine_id")
    if not commit:
        raise InputError(run.path, "no commit: the context has no actgrad_git_commit; pass --commit")
    if not machine:
        raise InputError(run.path, "no machine id: the context has no actgrad_machine_id; pass --machine")
    if a.date:
        date = parse_date(a.date, "--date")
    elif run.context.get("date"):
        date = parse_date(run.context["date"], f"{run.path}: context date")
    else:
        raise InputError(run.path, "no date: the context has no 'date'; pass --date")
    return str(commit), str(machine), date


def cmd_record(a):
    from . import gbench
    from .history import HistoryDB
    loaded = []
    for path in a.files:           # check every file before writing anything
        doc = gbench.read_json(path)
        run = gbench.parse(doc, path)
        loaded.append((path, doc, run, _resolve(run, doc, a)))
    said = []
    with HistoryDB(a.db) as db:    # one transaction: every file is recorded, or none
        for path, doc, run, (commit, machine, date) in loaded:
            rid, inserted = db.record(run, doc["benchmarks"], commit, machine, date, source=os.path.basename(path))
            if inserted:
                said.append(f"recorded {path} as run {rid}: commit {commit}, machine {machine}, date {date}, "
                            f"{len(run.benches)} benchmarks")
            else:
                said.append(f"{path}: already recorded as run {rid} (same results, commit and machine); "
                            "nothing added")
    print("\n".join(said))           # only once committed
    return EXIT_OK


def cmd_dashboard(a):
    from . import dashboard
    from .history import HistoryDB
    _regex(a.filter, "--filter")
    if a.min_segment < 2:
        raise InputError("--min-segment", "must be at least 2 (a single commit is never a step)")
    from .thresholds import Thresholds
    rules = Thresholds(a.min_step, a.alpha, a.config) if a.config else None
    with HistoryDB(a.db, readonly=True) as db:
        index, nbench, nopen = dashboard.build(db, a.out, metric=a.metric, min_size=a.min_segment,
                                               min_step=a.min_step, alpha=a.alpha, machine=a.machine,
                                               name_filter=a.filter, thresholds=rules)
    print(f"wrote {index}: {nbench} benchmarks, {nopen} open regression(s)")
    return EXIT_OK


def cmd_history(a):
    from . import backfill
    return backfill.main_args(a, None)


def cmd_synth(a):
    from . import atomic, synth
    import json
    if a.what == "run":
        doc = synth.make_run(seed=a.seed, scale=1.0 + a.slowdown, reps=a.reps, noise=a.noise, commit=a.commit,
                             machine=a.machine, aggregates_only=a.aggregates_only,
                             placements=a.placements, processes=a.processes)
        atomic.write_text(a.out, json.dumps(doc, indent=1))
    elif a.what == "table":
        atomic.write_text(a.out, json.dumps(synth.make_table(), indent=1))
    elif a.what == "accuracy":
        atomic.write_text(a.out, json.dumps(synth.make_accuracy(), indent=1))
    elif a.what == "history":
        from . import gbench
        from .history import HistoryDB, parse_date
        docs = synth.history_docs(commits=a.commits, step_at=a.step_at, step=1.0 + a.slowdown, noise=a.noise,
                                  machines=tuple(a.machines.split(",")))
        with HistoryDB(a.out) as db:
            for d in docs:
                run = gbench.parse(d, "synthetic")
                db.record(run, d["benchmarks"], d["context"]["actgrad_git_commit"],
                          d["context"]["actgrad_machine_id"], parse_date(d["context"]["date"]), source="synthetic")
    print(f"wrote {a.out}")
    return EXIT_OK


def _add_plot(sub):
    s = sub.add_parser("plot", help="plots and tables of a run as a static HTML page",
                       description="Plot Google Benchmark results, a tiling table and the accuracy results "
                       "(any mix; the kind of each file is detected) into OUT/index.html with PNG and SVG figures.")
    s.add_argument("files", nargs="+", metavar="FILE.json",
                   help="benchmark JSON, tiling table JSON (schema actgrad-tiling-table) or docs/accuracy.json")
    s.add_argument("--out", default=os.path.join(ROOT, "reports", "out"), help="output directory (default reports/out); "
                   "replaced as a whole")
    s.set_defaults(fn=cmd_plot)


def _add_compare(sub):
    s = sub.add_parser("compare", help="compare two runs: change, U test, verdict",
                       description="Compare two Google Benchmark JSON files. Exit 0: no significant regression; "
                       "1: at least one; 2: bad input.")
    s.add_argument("base", metavar="BASE.json")
    s.add_argument("new", metavar="NEW.json")
    s.add_argument("--threshold", default="5%", help="smallest change that counts (default 5%%)")
    s.add_argument("--alpha", type=float, default=0.05, help="significance level of the U test (default 0.05)")
    s.add_argument("--metric", choices=("real_time", "cpu_time"), default="real_time")
    s.add_argument("--filter", help="only benchmarks whose name matches this regular expression")
    s.add_argument("--json", metavar="OUT", help="also write the verdict as JSON")
    s.add_argument("--fail-untested", action="store_true",
                   help="count a slowdown beyond the threshold as a regression even without repetitions to test "
                   "or with not enough data")
    s.add_argument("--config", metavar="FILE", help="per-benchmark thresholds and alpha (TOML: [default] and "
                   "[[benchmark]] match/threshold/alpha rules; docs/reports.md)")
    s.add_argument("--min-repetitions", type=int, default=9, help="fewer repetitions on a side: 'not enough "
                   "data' instead of a verdict (default 9)")
    s.set_defaults(fn=cmd_compare)


def _add_stability(sub):
    s = sub.add_parser("stability", help="ours/peer ratios across several whole runs",
                       description="For every ours/peer ratio the speed goals use (api/<op>.<dtype>.contig.phase2 "
                       "over the faster peer, bench/goals.py), each run's ratio, the median and the largest "
                       "deviation from it. Exit 0, or 2 on bad input.")
    s.add_argument("files", nargs="+", metavar="RUN.json", help="two or more scripts/bench result files")
    s.add_argument("--tolerance", default="5%", help="the summary counts ratios within this of their median "
                   "(default 5%%)")
    s.add_argument("--md", metavar="FILE", help="also write the table as markdown (for docs/performance.md)")
    s.set_defaults(fn=cmd_stability)


def _add_figures(sub):
    from .figures import SECTIONS
    s = sub.add_parser("figures", help="a run's figures as markdown tables (README, docs/performance.md)",
                       description="The figures of a scripts/bench results file as markdown tables: the machine "
                       "and date, then per op, dtype, size and threads the shipping path's median time, its "
                       "share of the in-run limit and the ratio to the faster peer (performance: also the "
                       "views, phase one, the limits and the goals met). Exit 0, or 2 on bad input.")
    s.add_argument("file", metavar="RESULTS.json", help="a scripts/bench results file (results/<date>-<host>.json)")
    s.add_argument("--section", choices=SECTIONS, default="performance",
                   help="readme: 64K on one thread and the largest size on the most threads; performance "
                   "(default): every table")
    s.add_argument("--write", metavar="FILE", help="replace the block between '<!-- figures:begin SECTION -->' "
                   "and '<!-- figures:end -->' in FILE instead of printing")
    s.set_defaults(fn=cmd_figures)


def cmd_tune_gain(a):
    from . import tune_gain
    return tune_gain.run(a)


def _add_tune_gain(sub):
    s = sub.add_parser("tune-gain", help="what a machine's own table gained over its fallback (scripts/tune)",
                       description="The rows of actgrad-tune --verify TABLE --against fallback|BASE --verify-json "
                       "FILE as a markdown table (op, dtype, layout x size: baseline time / new time and the verdict) "
                       "and, with --plot, a heat map. Exit 0, or 2 on bad input.")
    s.add_argument("gain", metavar="GAIN.json", help="an actgrad-tune --verify-json file")
    s.add_argument("--md", metavar="FILE", help="write the markdown table here instead of printing it")
    s.add_argument("--plot", metavar="FILE.png", help="also draw the heat map as a PNG")
    s.add_argument("--merge-layouts", action="store_true",
                   help="one row per op and dtype: the geometric mean over the layouts of each size")
    s.set_defaults(fn=cmd_tune_gain)


def _add_tables_agree(sub):
    s = sub.add_parser("tables-agree", help="do two tiling tables choose alike?",
                       description="Per cell both tables have: the same variant, threads at the tuned size "
                       "(thread rules evaluated on the tuning cores) and store type? Exit 0, or 2 on bad input.")
    s.add_argument("a", metavar="A.json")
    s.add_argument("b", metavar="B.json")
    s.add_argument("--list", action="store_true", help="list the cells that differ")
    s.set_defaults(fn=cmd_tables_agree)


def _add_record(sub, db_default):
    s = sub.add_parser("record", help="store runs in the history database",
                       description="Store runs in the history database (SQLite file by default, or "
                       "postgresql://...). Recording the same run twice stores it once.")
    s.add_argument("files", nargs="+", metavar="RESULTS.json")
    s.add_argument("--db", default=db_default, help=f"SQLite path or postgresql:// URL (default {db_default}; "
                   "env ACTGRAD_HISTORY_DB)")
    s.add_argument("--commit", help="commit id (default: context actgrad_git_commit)")
    s.add_argument("--machine", help="machine id (default: context actgrad_machine_id)")
    s.add_argument("--date", help="ISO 8601 date of the run (default: context date)")
    s.set_defaults(fn=cmd_record)


def _add_dashboard(sub, db_default):
    s = sub.add_parser("dashboard", help="static HTML site from the history",
                       description="Build a static site: per benchmark a plot over commits per machine, "
                       "detected steps, and a summary of open regressions.")
    s.add_argument("--db", default=db_default, help=f"SQLite path or postgresql:// URL (default {db_default})")
    s.add_argument("--out", default=os.path.join(ROOT, "reports", "dashboard"), help="output directory "
                   "(default reports/dashboard); replaced as a whole")
    s.add_argument("--metric", choices=("real_time", "cpu_time"), default="real_time")
    s.add_argument("--min-step", type=_pct, default=0.02, help="smallest relative step flagged (default 2%%)")
    s.add_argument("--config", metavar="FILE", help="per-benchmark min-step (threshold) and alpha, the file "
                   "compare --config reads")
    s.add_argument("--min-segment", type=int, default=3, help="commits needed on each side of a step (default 3)")
    s.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    s.add_argument("--machine", help="only this machine")
    s.add_argument("--filter", help="only benchmarks whose name matches this regular expression")
    s.set_defaults(fn=cmd_dashboard)


def _add_history(sub, db_default):
    from .backfill import DEFAULT_BENCH, DEFAULT_BUILD
    s = sub.add_parser("history", help="backfill the history over a range of commits (history run A..B)")
    hs = s.add_subparsers(dest="history_cmd", required=True)
    h = hs.add_parser("run", help="check out, build, benchmark and record each commit of a range",
                      description="For each commit of RANGE (git rev-list --first-parent, oldest first): skip "
                      "it when already recorded for this machine, check it out into a reused worktree, build, run "
                      "the quick benchmark set, record the result (or the failure) with the commit's date; then "
                      "regenerate the dashboard. An interrupted run resumes.")
    h.add_argument("range", help="commits, as git rev-list takes them: A..B, or HEAD~10..HEAD")
    h.add_argument("--repo", default=ROOT, help="the repository (default this one)")
    h.add_argument("--db", default=db_default, help=f"SQLite path or postgresql:// URL (default {db_default})")
    h.add_argument("--machine", help="machine id (default vendor-family-model of this CPU)")
    h.add_argument("--work", default=os.path.join(ROOT, "build", "backfill"), help="worktree, build directory "
                   "and results (default build/backfill)")
    h.add_argument("--build-cmd", default=DEFAULT_BUILD, help="shell command run in the worktree; placeholders "
                   "{worktree} {build} {out} {commit} {jobs} (default: CMake Release with ccache, target "
                   "actgrad-bench); '' for none")
    h.add_argument("--bench-cmd", default=DEFAULT_BENCH, help="shell command writing Google Benchmark JSON to "
                   "{out} (default: actgrad-bench, GELU and SELU backward f32 64K, 9 repetitions)")
    h.add_argument("--jobs", type=int, help="build jobs (default: the number of CPUs)")
    h.add_argument("--retry-failed", action="store_true", help="try commits recorded as failed again")
    h.add_argument("--dashboard", default=os.path.join(ROOT, "reports", "dashboard"), help="regenerate this "
                   "dashboard at the end (default reports/dashboard)")
    h.add_argument("--no-dashboard", action="store_true")
    h.set_defaults(fn=cmd_history)


def _add_synth(sub):
    s = sub.add_parser("synth", help="write synthetic inputs (for trying the tools and for tests)")
    s.add_argument("what", choices=("run", "table", "accuracy", "history"))
    s.add_argument("out", help="output JSON file (history: the SQLite database)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--slowdown", type=_pct, default=0.0, help="run: all times this much slower; "
                   "history: the step injected at --step-at (default 0; history default 10%%)")
    s.add_argument("--noise", type=float, default=0.01, help="relative noise (default 0.01)")
    s.add_argument("--reps", type=int, default=5)
    s.add_argument("--aggregates-only", action="store_true")
    s.add_argument("--placements", type=_indices, help="run: measure every benchmark at these placements "
                   "(e.g. 0,1,2,3; names get /place:k)")
    s.add_argument("--processes", type=int, default=1, help="run: merged runs of this many processes "
                   "(actgrad_process)")
    s.add_argument("--commit", default="c000")
    s.add_argument("--machine", default="genuineintel-6-143")
    s.add_argument("--commits", type=int, default=24)
    s.add_argument("--step-at", type=int, default=12)
    s.add_argument("--machines", default="genuineintel-6-143,authenticamd-25-97")
    s.set_defaults(fn=cmd_synth)


def parser():
    from .history import DEFAULT_DB
    db_default = os.environ.get("ACTGRAD_HISTORY_DB", os.path.join(ROOT, DEFAULT_DB))
    p = argparse.ArgumentParser(prog=PROG, description="actgrad benchmark reports: plots, comparisons, "
                                "history and dashboard. Exit codes: 0 ok, 1 significant regression (compare), "
                                "2 bad input, 3 internal error.")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="SUBCOMMAND")
    # --help lists the subcommands in the order they are added
    _add_plot(sub)
    _add_compare(sub)
    _add_stability(sub)
    _add_figures(sub)
    _add_tune_gain(sub)
    _add_tables_agree(sub)
    _add_record(sub, db_default)
    _add_dashboard(sub, db_default)
    _add_history(sub, db_default)
    _add_synth(sub)
    return p

def main(argv=None):
    args = parser().parse_args(argv)
    if args.cmd == "synth" and args.what == "history" and args.slowdown == 0.0:
        args.slowdown = 0.10
    try:
        return args.fn(args)
    except InputError as e:
        _err(f"{e.path}: {e.problem}")
        return EXIT_BAD_INPUT
    except OutputError as e:
        _err(str(e))
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception:
        traceback.print_exc()
        _err("internal error (a bug in the reports package; the traceback above says where)")
        return EXIT_INTERNAL
