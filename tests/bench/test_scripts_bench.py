"""scripts/bench's command line: --dry-run with the selection flags lists
only the selected benchmarks and neither builds nor runs anything; bad values
are usage errors (status 2, the option named, no traceback); a missing build
directory is a clear error. The programs are stand-ins (fake_bench.py) that
list benchmarks like the real ones and log every call."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "scripts", "bench")
FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_bench.py")
N16M, N64K = 16 << 20, 64 << 10


@pytest.fixture
def env(tmp_path):
    """A build directory with the two fake programs, a log of their calls, and
    a PATH whose cmake/apt-get/sudo only log (a build attempt shows up)."""
    bdir = tmp_path / "build"
    (bdir / "bench").mkdir(parents=True)
    for name in ("actgrad-bench", "actgrad-bench-variants"):
        prog = bdir / "bench" / name
        prog.write_text(f"#!{sys.executable}\n" + open(FAKE).read())
        prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("cmake", "apt-get", "sudo"):
        t = tools / tool
        t.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{tmp_path / "tools.log"}"\nexit 1\n')
        t.chmod(0o755)
    e = dict(os.environ, PATH=f"{tools}:{os.environ['PATH']}", FAKE_BENCH_LOG=str(tmp_path / "calls.jsonl"))
    return {"bdir": bdir, "tmp": tmp_path, "env": e}


def run_bench(env, *args):
    return subprocess.run([sys.executable, BENCH, "--build-dir", str(env["bdir"]), *args],
                          capture_output=True, text=True, env=env["env"], timeout=120)


def calls(env):
    p = env["tmp"] / "calls.jsonl"
    return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []


def listed(env, prog):
    """Names the program listed for the last --benchmark_filter of the dry run."""
    cs = [c for c in calls(env) if c["prog"] == prog and "--actgrad_sizes=65536" not in c["args"]
          and "--actgrad_variant_table" not in c["args"]]
    return cs[-1]["listed"] if cs else []


def assert_nothing_built_or_run(env):
    assert not (env["tmp"] / "tools.log").exists(), (env["tmp"] / "tools.log").read_text()
    for c in calls(env):
        assert "--benchmark_list_tests=true" in c["args"] or c["args"] == ["--actgrad_variant_table"], \
            f"a benchmark run: {c}"


NAME = re.compile(r"^(roof|api|peer|variant)/([^/]+)/n:(\d+)/thr:(\d+)/place:\d+$")


def parse(names):
    out = []
    for n in names:
        m = NAME.match(n)
        assert m, n
        out.append((m.group(1), m.group(2), int(m.group(3)), int(m.group(4))))
    return out


def op_dtype(kind, subject):
    parts = subject.split(".")
    return (parts[1], parts[2]) if kind == "peer" else (parts[0], parts[1])


def test_dry_run_lists_only_the_selection(env):
    r = run_bench(env, "--dry-run", "--no-report", "--ops", "gelu_bwd", "--dtypes", "f32,bf16",
                  "--sizes", "64K,16M", "--threads", "1,2")
    assert r.returncode == 0, r.stderr
    assert_nothing_built_or_run(env)
    api, var = listed(env, "actgrad-bench"), listed(env, "actgrad-bench-variants")
    assert re.search(rf"actgrad-bench: {len(api)} benchmarks", r.stdout), r.stdout
    assert re.search(rf"actgrad-bench-variants: {len(var)} benchmarks", r.stdout), r.stdout
    kinds = set()
    for kind, subject, n, thr in parse(api + var):
        kinds.add(kind)
        assert n in (N64K, N16M) and thr in (1, 2)
        if kind == "roof":
            continue
        assert op_dtype(kind, subject) in {("gelu_bwd", "f32"), ("gelu_bwd", "bf16")}, subject
        if kind == "api" and subject.endswith(".phase1"):
            assert thr == 1  # phase one does not depend on threads
        if kind == "variant":
            assert subject.split(".")[-1] in ("avx2", "nt") and ".sse4" not in subject  # best target only
            if n == N16M:
                assert ".u4." in subject
            else:
                assert thr == 1
    assert kinds == {"roof", "api", "peer", "variant"}
    # The views: the API and PyTorch on the same views, at 64K and 16M; the contiguous peer at every size.
    subjects = {s for _, s, _, _ in parse(api)}
    for layout in ("strided", "bcast", "transposed"):
        assert f"gelu_bwd.f32.{layout}.phase2" in subjects and f"torch.gelu_bwd.bf16.{layout}" in subjects, layout
        assert f"gelu_bwd.f32.{layout}.both" not in subjects
    assert "torch.gelu_bwd.f32" in subjects
    # The flags carry the selection.
    assert f"--actgrad_sizes={N64K},{N16M}" in r.stdout and "--actgrad_threads=1,2" in r.stdout
    assert "--benchmark_repetitions=2" in r.stdout  # per placement and process
    # The API and peer comparisons in two processes, the variant sweep in one;
    # every benchmark on the four default placements.
    assert re.search(r"actgrad-bench: \d+ benchmarks .* x 2 process", r.stdout), r.stdout
    assert re.search(r"actgrad-bench-variants: \d+ benchmarks .* x 1 process", r.stdout), r.stdout
    assert {name.rsplit("/place:", 1)[1] for name in api + var} == {"0", "1", "2", "3"}


def test_placements_flag_selects_placements(env):
    r = run_bench(env, "--dry-run", "--ops", "selu_bwd", "--dtypes", "f32", "--placements", "2",
                  "--processes", "3")
    assert r.returncode == 0, r.stderr
    assert "--actgrad_placements=2" in r.stdout
    assert re.search(r"actgrad-bench: \d+ benchmarks .* x 3 process", r.stdout), r.stdout
    names = listed(env, "actgrad-bench") + listed(env, "actgrad-bench-variants")
    assert names and all(name.endswith("/place:2") for name in names)


@pytest.mark.parametrize("bad", [["--placements", "x"], ["--placements", "-1"], ["--processes", "0"]])
def test_bad_placement_flags_are_usage_errors(env, bad):
    r = run_bench(env, "--dry-run", *bad)
    assert r.returncode == 2 and "usage" in r.stderr.lower(), r.stderr


def test_quick_dry_run(env):
    r = run_bench(env, "--dry-run", "--quick", "--ops", "selu_bwd", "--dtypes", "f16", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert_nothing_built_or_run(env)
    var = parse(listed(env, "actgrad-bench-variants"))
    assert {n for _, _, n, _ in var} == {N64K, N16M}  # the quick sizes
    assert all(".u4." in s for k, s, _, _ in var if k == "variant")
    assert "--benchmark_min_time=0.02" in r.stdout and "--benchmark_repetitions" not in r.stdout


def test_full_set_dry_run(env):
    r = run_bench(env, "--dry-run", "--set", "full", "--ops", "softshrink_bwd", "--dtypes", "f32",
                  "--sizes", "1001", "--threads", "2", "--reps", "2", "--min-time", "0.5")
    assert r.returncode == 0, r.stderr
    assert_nothing_built_or_run(env)
    names = parse(listed(env, "actgrad-bench") + listed(env, "actgrad-bench-variants"))
    subjects = {s for _, s, _, _ in names}
    assert "softshrink_bwd.f32.contig.phase1" in subjects          # phase one at every thread count
    assert "softshrink_bwd.f32.strided.both" in subjects           # every layout and phase
    assert "softshrink_bwd.f32.transposed.both" in subjects
    assert {"torch.softshrink_bwd.f32." + l for l in ("strided", "bcast", "transposed")} <= subjects  # peers on views
    assert any(s.endswith(".sse4") for s in subjects)              # every target
    assert {(n, t) for _, _, n, t in names} == {(1001, 2)}
    assert "--benchmark_repetitions=2" in r.stdout and "--benchmark_min_time=0.5" in r.stdout


def test_dry_run_with_a_missing_build_dir(env):
    shutil.rmtree(env["bdir"])
    out = env["tmp"] / "results" / "r.json"
    r = run_bench(env, "--dry-run", "--out", str(out))
    assert r.returncode != 0
    assert f"actgrad-bench not found under {env['bdir']}: build it first" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert not env["bdir"].exists() and not out.parent.exists()
    assert_nothing_built_or_run(env)


@pytest.mark.parametrize("args, words", [
    (["--ops", "nope"], "unknown op 'nope' in --ops"),
    (["--ops", ","], "--ops: empty list"),
    (["--dtypes", "f64"], "unknown dtype 'f64' in --dtypes"),
    (["--sizes", "abc"], "--sizes: 'abc' is not an element count"),
    (["--sizes", "0"], "--sizes: '0': element counts must be >= 1"),
    (["--sizes", "-5"], "--sizes"),
    (["--sizes", "1e999"], "--sizes: '1e999' is not an element count"),
    (["--threads", "0"], "--threads: '0' must be >= 1"),
    (["--threads", "two"], "--threads: 'two' is not an integer"),
    (["--threads", ""], "--threads: empty list"),
    (["--set", "huge"], "--set: invalid choice: 'huge'"),
    (["--reps", "0"], "--reps: '0' must be >= 1"),
    (["--min-time", "-1"], "--min-time: '-1' must be a positive number"),
    (["--min-time", "nan"], "--min-time: 'nan' must be a positive number"),
    (["--jobs", "0"], "--jobs: '0' must be >= 1"),
    (["--cache-mb", "x"], "--cache-mb: 'x' is not an integer"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_values_are_usage_errors(env, args, words):
    r = run_bench(env, "--dry-run", *args)
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("usage: "), r.stderr
    assert words in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert calls(env) == []  # rejected before any program is asked
    assert_nothing_built_or_run(env)


def tool_lines(env, tool):
    p = env["tmp"] / "tools.log"
    return [l for l in p.read_text().splitlines() if l.startswith(tool + " ")] if p.exists() else []


def test_build_goes_through_scripts_build(env):
    """The build is scripts/build's: configured in --build-dir with the
    benchmarks on when not configured yet, then only the two programs built
    with --jobs. (The stand-in cmake fails, so the run stops there.)"""
    r = run_bench(env, "--quick", "--jobs", "1", "--no-report")
    assert r.returncode != 0 and "build failed" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    (configure,) = tool_lines(env, "cmake")
    assert f"-B {env['bdir']} -DCMAKE_BUILD_TYPE=Release" in configure, configure
    assert configure.endswith("-DACTGRAD_BUILD_BENCH=ON"), configure
    assert calls(env) == []  # nothing ran

    (env["bdir"] / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Release\nACTGRAD_BUILD_BENCH:BOOL=ON\n")
    (env["tmp"] / "tools.log").unlink()
    r = run_bench(env, "--quick", "--jobs", "1", "--no-report")
    assert r.returncode != 0 and "build failed" in r.stderr, r.stderr
    assert tool_lines(env, "cmake") == [
        f"cmake --build {env['bdir']} -j 1 --target actgrad-bench --target actgrad-bench-variants"]
