"""scripts/fleet on a real (local, single-node) Slurm cluster: an array tune
merged and verified, a failed shard named and the partial set refused, a
benchmark job recorded into PostgreSQL and shown on the dashboard.

A throw-away single-node Slurm cluster (scripts/fleet cluster start) for the
fleet tests, one per test module (and pytest-xdist worker), stopped at the end even when tests fail.
Without Slurm's packages (scripts/setup-deps installs slurm-wlm and munge) or
root the tests skip, except under scripts/test and in CI
(ACTGRAD_REQUIRE_SLURM=1, CI=true), where that is a failure.

The fixtures live here, not in a conftest.py: reports/tests imports its own
conftest by name, and a second one in the same session would shadow it."""
import json
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLEET = os.path.join(ROOT, "scripts", "fleet")
TUNER = os.path.join(ROOT, "build", "tools", "tune", "actgrad-tune")
sys.path.insert(0, os.path.join(ROOT, "reports", "tests"))  # pgserver.py: the throw-away PostgreSQL


def _unavailable(why):
    if os.environ.get("CI") or os.environ.get("ACTGRAD_REQUIRE_SLURM"):
        pytest.fail(f"cannot start a local Slurm cluster for the fleet tests: {why}")
    pytest.skip(f"no local Slurm cluster: {why}")


@pytest.fixture(scope="module")
def slurm_env():
    """The environment whose SLURM_CONF names the local cluster."""
    d = tempfile.mkdtemp(prefix="actgrad-slurm-", dir="/tmp")
    p = subprocess.run([FLEET, "cluster", "start", "--dir", d], capture_output=True, text=True)
    if p.returncode != 0:
        subprocess.run([FLEET, "cluster", "stop", "--dir", d], capture_output=True)
        _unavailable(p.stderr.strip())
    conf = p.stdout.strip().split("=", 1)[1]
    try:
        yield dict(os.environ, SLURM_CONF=conf)
    finally:
        subprocess.run([FLEET, "cluster", "stop", "--dir", d], capture_output=True)


@pytest.fixture(scope="module")
def pg_url():
    from pgserver import running
    with running(bool(os.environ.get("CI") or os.environ.get("ACTGRAD_REQUIRE_POSTGRES"))) as url:
        yield url


# Three series (one per op), one octave each: three shards of a few seconds.
SELECTION = ["--ops", "selu_bwd,hardswish_bwd,softshrink_bwd", "--dtypes", "f32", "--layouts", "contig",
             "--sizes", "4K", "--budget", "3s"]


def fleet(env, *args, timeout=600):
    return subprocess.run([FLEET, *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture(scope="module", autouse=True)
def built():
    if not os.access(TUNER, os.X_OK):
        pytest.fail(f"{TUNER} missing: build first (./scripts/build)")


def job_state(env, job):
    out = subprocess.run(["scontrol", "-o", "show", "job", job], capture_output=True, text=True, env=env).stdout
    return dict(kv.split("=", 1) for kv in out.split() if "=" in kv).get("JobState")


def test_array_tune_is_merged_and_verified(slurm_env, tmp_path):
    r = fleet(slurm_env, "tune", "--shards", "3", "--workdir", str(tmp_path), *SELECTION)
    assert r.returncode == 0, r.stderr
    table = json.load(open(tmp_path / "table.json"))
    assert {e["op"] for e in table["entries"]} == {"selu_bwd", "hardswish_bwd", "softshrink_bwd"}
    assert "3 of 3 shards" in r.stdout and "merged and verified" in r.stdout
    rows = json.load(open(tmp_path / "verify.json"))
    assert len(rows["rows"] if isinstance(rows, dict) else rows) == 3
    assert all((tmp_path / f"shard-{k}.json").is_file() for k in (1, 2, 3))


def test_a_failed_shard_is_named_and_the_merge_refused(slurm_env, tmp_path):
    (tmp_path / "shard-2.json").mkdir()  # shard 2 cannot write its table: it fails
    r = fleet(slurm_env, "tune", "--shards", "3", "--workdir", str(tmp_path), *SELECTION)
    assert r.returncode == 1
    assert "shard 2/3: FAILED" in r.stderr and "no table written" in r.stderr, r.stderr
    assert "is a directory" in r.stderr  # the shard's own message, from its output
    assert not (tmp_path / "table.json").exists()
    merge_job = r.stderr.split("the merge (job ")[1].split(")")[0]
    assert job_state(slurm_env, merge_job) == "CANCELLED"


def test_allow_partial_merges_the_shards_that_completed(slurm_env, tmp_path):
    (tmp_path / "shard-3.json").mkdir()
    r = fleet(slurm_env, "tune", "--shards", "3", "--allow-partial", "--workdir", str(tmp_path), *SELECTION)
    assert r.returncode == 0, r.stderr
    table = json.load(open(tmp_path / "table.json"))
    assert len(table["entries"]) == 2
    assert "2 of 3 shards" in r.stdout
    assert 3 in table["provenance"]["merge"]["missing"]


BENCH_ARGS = "--quick --ops selu_bwd --dtypes f32 --sizes 64K --threads 1 --placements 0"


def test_benchmark_jobs_per_class_are_recorded_and_shown(slurm_env, pg_url, tmp_path):
    """Two classes (here both the local node's feature): a job each, both runs in
    the PostgreSQL history under their machine id, one dashboard job after them."""
    dash = tmp_path / "dashboard"
    r = fleet(slurm_env, "bench", "--db", pg_url, "--dashboard", str(dash), "--workdir", str(tmp_path),
              "--class", "a=local", "--class", "b=local", "--bench-args", BENCH_ARGS)
    assert r.returncode == 0, r.stderr
    assert "recorded 2 run(s)" in r.stdout
    for name in ("a", "b"):
        out = open(tmp_path / f"bench-{name}.out").read()
        assert f"recorded {tmp_path / (name + '.json')} as run" in out, out
    machine = json.load(open(tmp_path / "a.json"))["context"]["actgrad_machine_id"]
    html = open(dash / "index.html").read()
    assert "selu_bwd.f32.contig.phase2/n:65536/thr:1" in html and f"#m-{machine}" in html
    # the runs are in the PostgreSQL history: recording one again stores nothing new
    again = subprocess.run([os.path.join(ROOT, "scripts", "report"), "record", "--db", pg_url,
                            str(tmp_path / "a.json")], capture_output=True, text=True)
    assert again.returncode == 0 and "already" in (again.stdout + again.stderr).lower(), again.stdout + again.stderr


def test_a_class_no_node_has_fails_at_once_with_slurms_message(slurm_env, pg_url, tmp_path):
    r = fleet(slurm_env, "bench", "--db", pg_url, "--workdir", str(tmp_path), "--class", "gpu=nosuchfeature",
              "--bench-args", BENCH_ARGS, timeout=60)
    assert r.returncode == 1
    assert "sbatch" in r.stderr and "feature" in r.stderr.lower(), r.stderr


@pytest.mark.parametrize("bad", [["tune", "--shards", "0"], ["tune"], ["bench"],
                                 ["bench", "--db", "x.sqlite", "--class", "no spaces=a"]])
def test_bad_options_exit_2(bad, tmp_path):
    r = subprocess.run([FLEET, *bad, "--workdir", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
