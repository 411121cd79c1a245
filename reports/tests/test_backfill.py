"""``report history run`` on a throw-away repository of three commits whose
"benchmark" is a tiny Python script (no C++ build): records each commit with its date, skips
those already recorded (so an interrupted range resumes), records a failed build as such and
goes on, and regenerates the dashboard, which shows the failure."""

import json
import os
import subprocess
import sys

import pytest

from conftest import run_cli

BENCH = r'''
import json, random, sys
speed = float(open("speed.txt").read())
rng = random.Random(1)
rows = [{"name": "api/gelu_bwd.f32.contig.phase2/n:1024/thr:1", "run_name": "api/gelu_bwd.f32.contig.phase2/n:1024/thr:1",
         "run_type": "iteration", "repetitions": 9, "repetition_index": i, "threads": 1, "iterations": 1000,
         "real_time": 1000.0 * speed * (1 + 0.01 * rng.random()), "cpu_time": 1000.0 * speed, "time_unit": "ns"}
        for i in range(9)]
doc = {"context": {"date": "2026-11-26T00:00:00+00:00", "host_name": "t", "executable": "bench.py",
                   "num_cpus": 2, "mhz_per_cpu": 2000, "cpu_scaling_enabled": False, "caches": [],
                   "library_build_type": "release"}, "benchmarks": rows}
json.dump(doc, open(sys.argv[1], "w"))
'''

BUILD = "python3 -c \"import os, sys; sys.exit(1 if os.path.exists('broken') else 0)\""


def git(repo, *args, env=None):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q")
    (r / "bench.py").write_text(BENCH)
    for i, (speed, broken) in enumerate([(1.0, False), (1.3, False), (1.3, True)]):
        (r / "speed.txt").write_text(str(speed))
        if broken:
            (r / "broken").write_text("x")
        git(r, "add", "-A")
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@t", GIT_COMMITTER_DATE=f"2026-11-2{i}T10:00:00Z",
                   GIT_AUTHOR_DATE=f"2026-11-2{i}T10:00:00Z")
        git(r, "commit", "-q", "-m", f"commit {i}", env=env)
    return r


def backfill(repo, tmp_path, spec, *extra):
    return run_cli("history", "run", spec, "--repo", repo, "--db", tmp_path / "h.sqlite", "--machine", "m1",
                   "--work", tmp_path / "work", "--build-cmd", BUILD,
                   "--bench-cmd", f"{sys.executable} bench.py {{out}}", "--dashboard", tmp_path / "dash", *extra)


def test_backfill_records_skips_resumes_and_records_failures(repo, tmp_path):
    shas = git(repo, "rev-list", "--reverse", "HEAD").split()
    # "interrupted" after the first two commits
    r = backfill(repo, tmp_path, "HEAD~1")
    assert r.code == 0, r
    assert "2 recorded, 0 failed" in r.out
    # resumed over the whole range: the first two are skipped, the third fails to build
    r = backfill(repo, tmp_path, "HEAD")
    assert r.code == 0, r
    assert "0 recorded, 1 failed (recorded as such), 2 already there" in r.out and "build failed" in r.out
    from reports.history import HistoryDB
    with HistoryDB(str(tmp_path / "h.sqlite"), readonly=True) as db:
        runs = db.query('SELECT "commit", "date", machine_id, context FROM runs ORDER BY "date"')
        assert [c for c, *_ in runs] == shas
        assert [d for _, d, *_ in runs] == ["2026-11-20T10:00:00Z", "2026-11-21T10:00:00Z", "2026-11-22T10:00:00Z"]
        assert json.loads(runs[2][3])["actgrad_status"] == "build failed"
        pts = db.series()[("m1", "api/gelu_bwd.f32.contig.phase2/n:1024/thr:1")]
        assert [p.commit for p in pts] == shas
        assert pts[1].value / pts[0].value == pytest.approx(1.3, rel=0.02)
        assert pts[2].status == "build failed" and pts[2].value != pts[2].value
        assert db.count("results") > 0
    index = (tmp_path / "dash" / "index.html").read_text()
    assert "Failed commits (1)" in index and shas[2] in index
    # nothing left to do; --retry-failed tries the failure again (still failing: still one failure row)
    r = backfill(repo, tmp_path, "HEAD")
    assert "0 recorded, 0 failed (recorded as such), 3 already there" in r.out, r
    r = backfill(repo, tmp_path, "HEAD", "--retry-failed", "--no-dashboard")
    assert "0 recorded, 1 failed" in r.out, r
    with HistoryDB(str(tmp_path / "h.sqlite"), readonly=True) as db:
        assert len(db.failures()) == 1


def test_bad_range_is_bad_input(repo, tmp_path):
    r = backfill(repo, tmp_path, "no-such-rev..HEAD")
    assert r.code == 2 and "rev-list" in r.err, r
