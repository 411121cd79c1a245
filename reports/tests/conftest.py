import contextlib
import io
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

from reports import cli, synth  # noqa: E402


class Result:
    def __init__(self, code, out, err):
        self.code, self.out, self.err = code, out, err

    def __repr__(self):
        return f"Result(code={self.code}, out={self.out[-2000:]!r}, err={self.err[-2000:]!r})"


def run_cli(*args):
    """Run the command line in-process; returns exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as e:      # argparse errors
            code = e.code
    return Result(code, out.getvalue(), err.getvalue())


def write_json(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)
    return str(path)


@pytest.fixture
def cli_run():
    return run_cli


@pytest.fixture
def small_run():
    """A small synthetic run (fast to plot)."""
    def make(**kw):
        args = dict(ops=("gelu_bwd",), dtypes=("f32",), sizes=[1024, 16384, 262144], reps=9)
        args.update(kw)
        return synth.make_run(**args)
    return make


def run_module(*args, timeout=300):
    """Run ``python -m reports`` in a new process (real exit code, stack depth and stderr)."""
    import subprocess
    env = dict(os.environ, PYTHONPATH=ROOT, MPLCONFIGDIR=os.environ.get("MPLCONFIGDIR", "/tmp/actgrad-mplconfig"))
    p = subprocess.run([sys.executable, "-m", "reports", *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    return Result(p.returncode, p.stdout, p.stderr)


def assert_bad_input(r, *words):
    """Exit 2, one 'report: error:' line naming the problem, no traceback."""
    assert r.code == 2, r
    assert "Traceback" not in r.err, r
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("report: error: "), r
    for w in words:
        assert str(w).lower() in lines[0].lower(), (w, r)


# -- PostgreSQL: a local server for the whole session ------------------------
# ACTGRAD_TEST_POSTGRES_URL names a server to use instead (a fresh schema per test is made and
# dropped there). Without it a throw-away server is started (pgserver.py). When none can be had
# the PostgreSQL tests skip, except in CI (CI=true) and under scripts/test
# (ACTGRAD_REQUIRE_POSTGRES=1), where that is a failure: no history test may skip there.

@pytest.fixture(scope="session")
def pg_server_url():
    url = os.environ.get("ACTGRAD_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    from pgserver import running
    with running(bool(os.environ.get("CI") or os.environ.get("ACTGRAD_REQUIRE_POSTGRES"))) as url:
        yield url


@pytest.fixture
def pg_url(pg_server_url):
    """A URL whose search_path is a fresh, empty schema (dropped afterwards)."""
    import uuid

    import psycopg
    from pgserver import scoped
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_url, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {schema}")
    try:
        yield scoped(pg_server_url, schema)
    finally:
        with psycopg.connect(pg_server_url, autocommit=True) as con:
            con.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["sqlite", "postgresql"])
def history_url(request, tmp_path):
    """The history database on both backends: an SQLite file, and a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        return str(tmp_path / "h.sqlite")
    return request.getfixturevalue("pg_url")
