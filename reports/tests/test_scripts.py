"""The shell entry points: scripts/report (exit codes end to end) and
scripts/setup-python (a second run does no work)."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, write_json

REPORT = os.path.join(ROOT, "scripts", "report")
SETUP = os.path.join(ROOT, "scripts", "setup-python")
IN_PROJECT_VENV = os.path.realpath(sys.prefix) == os.path.realpath(os.path.join(ROOT, ".venv"))

pytestmark = pytest.mark.skipif(not IN_PROJECT_VENV,
                                reason="runs only under the project's .venv (scripts/test)")


def sh(*args):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300)


def test_setup_python_second_run_does_nothing():
    p = sh(SETUP)
    assert p.returncode == 0, p.stderr
    assert "up to date" in p.stderr and "installing" not in p.stderr
    assert sh(SETUP, "--quiet").stderr == ""


def test_report_wrapper_exit_codes(tmp_path, small_run):
    base = write_json(tmp_path / "base.json", small_run(seed=1, atlas=False))
    slow = write_json(tmp_path / "slow.json", small_run(seed=2, scale=1.1, atlas=False))
    p = sh(REPORT, "compare", base, slow)
    assert p.returncode == 1 and "REGRESSION" in p.stdout, p.stderr
    (tmp_path / "bad.json").write_text("[}")
    p = sh(REPORT, "record", tmp_path / "bad.json", "--db", tmp_path / "h.sqlite")
    assert p.returncode == 2 and "bad.json" in p.stderr and "not valid JSON" in p.stderr
    p = sh(REPORT, "--help")
    assert p.returncode == 0 and "dashboard" in p.stdout
