"""The history database on both backends: SQLite and a real PostgreSQL server
(conftest.py starts one; in CI these tests never skip). Two writers at once, and a writer killed
in the middle of its transaction: nothing half-written."""

import os
import signal
import subprocess
import sys
import time

from conftest import ROOT, write_json
from reports import gbench, synth
from reports.history import HistoryDB, parse_date


def runs_and_results(url):
    with HistoryDB(url, readonly=True) as db:
        return db.count("runs"), db.count("results"), sorted(r[2] for r in db.runs())


def test_record_and_dashboard(history_url, tmp_path, cli_run, small_run):
    f = write_json(tmp_path / "r.json", small_run(commit="abc", machine="m1"))
    r = cli_run("record", f, "--db", history_url)
    assert r.code == 0 and "recorded" in r.out, r
    r = cli_run("record", f, "--db", history_url)
    assert r.code == 0 and "already recorded" in r.out, r
    n_runs, n_results, commits = runs_and_results(history_url)
    assert n_runs == 1 and n_results > 0 and commits == ["abc"]
    r = cli_run("dashboard", "--db", history_url, "--out", tmp_path / "dash")
    assert r.code == 0, r
    assert (tmp_path / "dash" / "index.html").exists()


def test_series_per_commit(history_url):
    docs = synth.history_docs(commits=8, step_at=4, machines=("m1",), sizes=(4096,))
    with HistoryDB(history_url) as db:
        for d in docs:
            db.record(gbench.parse(d, "s"), d["benchmarks"], d["context"]["actgrad_git_commit"],
                      d["context"]["actgrad_machine_id"], parse_date(d["context"]["date"]))
    with HistoryDB(history_url, readonly=True) as db:
        pts = db.series()[("m1", "variant/gelu_bwd.f32.none.erf_as.u4.avx3/n:4096/thr:1")]
    assert [p.commit for p in pts] == [f"c{i:03d}" for i in range(8)]
    assert pts[6].value / pts[1].value > 1.05


def _env():
    return dict(os.environ, PYTHONPATH=ROOT, MPLCONFIGDIR=os.environ.get("MPLCONFIGDIR", "/tmp/actgrad-mplconfig"))


def test_two_concurrent_writers(history_url, tmp_path, small_run):
    """Two `record` processes at once, on a new database: both succeed, each run stored once,
    the run both record stored once."""
    shared = write_json(tmp_path / "shared.json", small_run(commit="shared", machine="m1"))
    files = [write_json(tmp_path / f"w{i}.json", small_run(commit=f"w{i}", machine="m1", seed=i + 1))
             for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-m", "reports", "record", f, shared, "--db", history_url],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for f in files]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    n_runs, n_results, commits = runs_and_results(history_url)
    assert commits == ["shared", "w0", "w1"]
    with HistoryDB(history_url, readonly=True) as db:
        per_run = db.query("SELECT run_id, COUNT(*) FROM results GROUP BY run_id")
    assert len(per_run) == 3 and len({c for _, c in per_run}) == 1 and n_results == 3 * per_run[0][1]


KILLED = r"""
import sys, time
from reports import gbench, synth
from reports.history import HistoryDB
doc = synth.make_run(commit="killed", machine="m1", seed=9)
db = HistoryDB(sys.argv[1])
db.record(gbench.parse(doc, "k.json"), doc["benchmarks"], "killed", "m1", "2026-11-26T00:00:00Z")
print("inserted", flush=True)
time.sleep(120)
"""


def test_killed_writer_leaves_nothing_half_written(history_url, tmp_path, cli_run, small_run):
    first = write_json(tmp_path / "first.json", small_run(commit="first", machine="m1"))
    assert cli_run("record", first, "--db", history_url).code == 0
    before = runs_and_results(history_url)
    p = subprocess.Popen([sys.executable, "-c", KILLED, history_url], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=_env())
    try:
        line = p.stdout.readline()
        assert line.strip() == "inserted", (line, p.stderr.read() if p.poll() is not None else "")
        os.kill(p.pid, signal.SIGKILL)      # in the middle of its transaction: rows written, no commit
    finally:
        p.kill()
        p.wait(timeout=30)
    assert runs_and_results(history_url) == before
    # the lock it held is gone: the next writer records at once
    t0 = time.time()
    after = write_json(tmp_path / "after.json", small_run(commit="after", machine="m1"))
    r = cli_run("record", after, "--db", history_url)
    assert r.code == 0, r
    assert time.time() - t0 < 20
    assert runs_and_results(history_url)[2] == ["after", "first"]
