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
        args = dict(ops=("gelu_bwd",), dtypes=("f32",), sizes=[1024, 16384, 262144], reps=5)
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
