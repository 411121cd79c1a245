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
