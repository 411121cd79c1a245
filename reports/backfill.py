"""``report history run RANGE``: backfill the history over a range of commits (like ``asv run A..B``).

For each commit of ``git rev-list --reverse --first-parent RANGE`` (oldest first):

1. skip it when the history already holds a run of that commit on this machine
   (a success or a recorded failure; ``--retry-failed`` tries failures again),
   so an interrupted backfill resumes where it stopped;
2. check it out into one reused worktree (``git worktree add --detach``, then
   ``git checkout --detach --force``), outside the repository's own tree;
3. run the build command, then the benchmark command, in the worktree
   (``--build-cmd``, ``--bench-cmd``; shell commands with the placeholders
   {worktree}, {build}, {out}, {commit}, {jobs}). The defaults build this
   repository's ``actgrad-bench`` with CMake in Release with ccache as the
   compiler launcher (a build directory kept across commits: rebuilds are
   short) and run a fixed quick set (GELU and SELU backward, f32, 64K, one
   thread, 9 repetitions);
4. record the result with the commit, the commit's date and the machine id, in
   its own transaction. A failed build or run (non-zero exit, a missing or
   unreadable result, a time-out) is recorded as a failure (a run with status
   ``build failed``/``run failed`` in its context and no results, with the
   last lines of its log), shown on the dashboard, and the range goes on.

Then the dashboard is regenerated (``--dashboard OUT``; ``--no-dashboard``).
"""

import datetime as dt
import hashlib
import json
import os
import shlex
import subprocess
import sys

from . import gbench
from .errors import InputError
from .history import HistoryDB, parse_date

FAILED_STATUSES = ("build failed", "run failed")
DEFAULT_BUILD = ("cmake -S {worktree} -B {build} -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "
                 "-DCMAKE_C_COMPILER_LAUNCHER=ccache >/dev/null && cmake --build {build} -j {jobs} "
                 "--target actgrad-bench")
DEFAULT_BENCH = ("{build}/bench/actgrad-bench --benchmark_filter='^api/(gelu|selu)_bwd\\.f32\\.contig\\.phase2/"
                 "n:65536/thr:1' --benchmark_repetitions=9 --benchmark_format=json --benchmark_out={out}")
TIMEOUT_S = 3600


def _git(repo, *args, check=True):
    p = subprocess.run(["git", "-C", repo, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise InputError(repo, f"git {' '.join(args)}: {p.stderr.strip() or p.returncode}")
    return p.stdout.strip()


def commits(repo, spec):
    out = _git(repo, "rev-list", "--reverse", "--first-parent", *shlex.split(spec))
    return out.split() if out else []


def commit_date(repo, commit):
    return parse_date(_git(repo, "show", "-s", "--format=%cI", commit))


def recorded(db, machine):
    """{commit: statuses} of the runs recorded for this machine."""
    out = {}
    for commit, ctx in db.query('SELECT "commit", context FROM runs WHERE machine_id = ?', (machine,)):
        try:
            status = json.loads(ctx).get("actgrad_status", "ok")
        except (ValueError, AttributeError):
            status = "ok"
        out.setdefault(commit, set()).add(status)
    return out


def _tail(text, n=20):
    return "\n".join(text.strip().splitlines()[-n:])


def _sh(cmd, cwd, log):
    try:
        p = subprocess.run(cmd, shell=True, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        log.append(f"$ {cmd}\ntimed out after {TIMEOUT_S} s")
        return False
    log.append(f"$ {cmd}\n{p.stdout}{p.stderr}")
    return p.returncode == 0


def _checkout(repo, worktree, commit):
    if not os.path.isdir(os.path.join(worktree, ".git")) and not os.path.isfile(os.path.join(worktree, ".git")):
        _git(repo, "worktree", "prune", check=False)
        os.makedirs(os.path.dirname(os.path.abspath(worktree)), exist_ok=True)
        _git(repo, "worktree", "add", "--detach", "--force", worktree, commit)
    else:
        _git(worktree, "checkout", "--detach", "--force", commit)
        _git(worktree, "clean", "-fdq")


def record_failure(url, commit, machine, date, status, log):
    context = {"actgrad_status": status, "actgrad_git_commit": commit, "actgrad_machine_id": machine,
               "log_tail": _tail(log, 30)}
    key = hashlib.sha256(f"failure\0{status}\0{machine}\0{commit}".encode()).hexdigest()
    with HistoryDB(url) as db:
        cur = db.execute('INSERT INTO runs (run_key, "commit", "date", machine_id, context, source) '
                         "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_key) DO NOTHING",
                         (key, commit, date, machine, json.dumps(context, sort_keys=True), "backfill"))
        cur.close()


def record_result(url, path, commit, machine, date):
    doc = gbench.read_json(path)
    run = gbench.parse(doc, path)
    with HistoryDB(url) as db:
        return db.record(run, doc["benchmarks"], commit, machine, date, source="backfill")


def run(repo, spec, url, machine, work, build_cmd=DEFAULT_BUILD, bench_cmd=DEFAULT_BENCH, jobs=None,
        retry_failed=False, say=print):
    """Backfill; returns (recorded, failed, skipped) commit lists."""
    repo = os.path.abspath(repo)
    todo = commits(repo, spec)
    if not todo:
        raise InputError(spec, f"no commits in {spec!r} of {repo}")
    worktree = os.path.join(work, "worktree")
    build = os.path.join(work, "build")
    os.makedirs(work, exist_ok=True)
    with HistoryDB(url) as db:          # creates (or upgrades) the history once
        done = recorded(db, machine)
    ok, failed, skipped = [], [], []
    for i, c in enumerate(todo, 1):
        st = done.get(c, set())
        if st and not (retry_failed and st <= set(FAILED_STATUSES)):
            skipped.append(c)
            say(f"[{i}/{len(todo)}] {c[:12]}: already recorded ({', '.join(sorted(st))}), skipped")
            continue
        date = commit_date(repo, c)
        out = os.path.join(work, f"result-{c[:12]}.json")
        if os.path.exists(out):
            os.unlink(out)
        log = []
        _checkout(repo, worktree, c)
        fields = dict(worktree=shlex.quote(worktree), build=shlex.quote(build), out=shlex.quote(out), commit=c,
                      jobs=jobs or os.cpu_count() or 1)
        status = None
        if build_cmd and not _sh(build_cmd.format(**fields), worktree, log):
            status = "build failed"
        elif not _sh(bench_cmd.format(**fields), worktree, log):
            status = "run failed"
        else:
            try:
                _, inserted = record_result(url, out, c, machine, date)
            except InputError as e:
                log.append(f"result: {e.path}: {e.problem}")
                status = "run failed"
        if status:
            record_failure(url, c, machine, date, status, "\n".join(log))
            failed.append(c)
            say(f"[{i}/{len(todo)}] {c[:12]}: {status}, recorded as such:\n    "
                + _tail("\n".join(log), 5).replace("\n", "\n    "))
        else:
            ok.append(c)
            say(f"[{i}/{len(todo)}] {c[:12]}: recorded")
    return ok, failed, skipped


def main_args(a, db_default):
    from . import dashboard
    machine = a.machine or _machine_id()
    ok, failed, skipped = run(a.repo, a.range, a.db, machine, a.work, build_cmd=a.build_cmd,
                              bench_cmd=a.bench_cmd, jobs=a.jobs, retry_failed=a.retry_failed)
    print(f"backfill {a.range}: {len(ok)} recorded, {len(failed)} failed (recorded as such), "
          f"{len(skipped)} already there; machine {machine}")
    if not a.no_dashboard:
        with HistoryDB(a.db, readonly=True) as db:
            index, nbench, nopen = dashboard.build(db, a.dashboard)
        print(f"wrote {index}: {nbench} benchmarks, {nopen} open regression(s)")
    return 0


def _machine_id():
    """vendor-family-model, as the benchmark programs name the machine (docs/conventions.md)."""
    vendor = family = model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k, v = k.strip(), v.strip()
                if k == "vendor_id" and vendor is None:
                    vendor = v.lower()
                elif k == "cpu family" and family is None:
                    family = v
                elif k == "model" and model is None:
                    model = v
    except OSError:
        pass
    return f"{vendor}-{family}-{model}" if vendor else os.uname().nodename
