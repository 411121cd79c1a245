"""scripts/bench: --dry-run with the selection flags lists only the selected
benchmarks and neither installs, builds nor runs anything; bad values are
usage errors (status 2, the option named, no traceback); a missing build
directory is a clear error; the peers are installed and configured as
--peers says; a run checks the peers first, runs actgrad-bench once per
thread count pinned to that many CPUs, shows its progress and merges the
rows. The programs are stand-ins (fake_bench.py) that list and run benchmarks
like the real ones and log every call; scripts/bench runs from a copy of the
checkout's scripts whose setup-peers, setup-deps and bench/goals.py only log."""

import json
import os
import re
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fake_bench.py")
N16M, N64K = 16 << 20, 64 << 10
CPUS = sorted(os.sched_getaffinity(0))


def logging_tool(path, name, log, status="0"):
    """A script that appends its name and arguments to log and exits with status."""
    path.write_text(f'#!/bin/sh\necho "{name} $*" >> "{log}"\nexit {status}\n')
    path.chmod(0o755)


def fake_root(tmp_path):
    """A copy of the checkout's scripts/bench, scripts/build, scripts/cmake-options
    and reports/vocabulary*, with setup-peers, setup-deps and bench/goals.py that
    only log (setup-peers exits with $FAKE_SETUP_PEERS_STATUS)."""
    root = tmp_path / "root"
    for rel in ("scripts/bench", "scripts/build", "scripts/cmake-options",
                "reports/vocabulary.py", "reports/vocabulary.json"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), root / rel)
    (root / "reports" / "__init__.py").write_text("")
    log = tmp_path / "tools.log"
    (root / "scripts" / "setup-peers").write_text(
        f'#!/bin/sh\necho "setup-peers $*" >> "{log}"\nexit ${{FAKE_SETUP_PEERS_STATUS:-0}}\n')
    (root / "scripts" / "setup-peers").chmod(0o755)
    logging_tool(root / "scripts" / "setup-deps", "setup-deps", log)
    (root / "bench").mkdir()
    (root / "bench" / "goals.py").write_text(
        f"import sys\nopen({str(log)!r}, 'a').write('goals ' + ' '.join(sys.argv[1:]) + '\\n')\n"
        "print('goal table')\n")
    return root


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
        logging_tool(tools / tool, tool, tmp_path / "tools.log", "1")
    e = dict(os.environ, PATH=f"{tools}:{os.environ['PATH']}", FAKE_BENCH_LOG=str(tmp_path / "calls.jsonl"))
    root = fake_root(tmp_path)
    return {"bdir": bdir, "tmp": tmp_path, "env": e, "bench": root / "scripts" / "bench"}


def run_bench(env, *args, **extra_env):
    return subprocess.run([sys.executable, str(env["bench"]), "--build-dir", str(env["bdir"]), *args],
                          capture_output=True, text=True, env=dict(env["env"], **extra_env), timeout=120)


def calls(env):
    p = env["tmp"] / "calls.jsonl"
    return [json.loads(l) for l in p.read_text().splitlines()] if p.exists() else []


def listed(env, prog):
    """The names the program listed, over all its listings (one per thread count)."""
    out = []
    for c in calls(env):
        if c["prog"] == prog and "--benchmark_list_tests=true" in c["args"]:
            out += [n for n in c["listed"] if n not in out]
    return out


def assert_nothing_built_or_run(env):
    assert not (env["tmp"] / "tools.log").exists(), (env["tmp"] / "tools.log").read_text()
    for c in calls(env):
        assert "--benchmark_list_tests=true" in c["args"] or c["args"] == ["--actgrad_variant_table"], \
            f"a benchmark run: {c}"


NAME = re.compile(r"^(roof|api|peer|variant)/([^/]+)/n:(\d+)/thr:(\d+)/place:\d+(/real_time)?$")


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


def test_default_dry_run_is_the_readme_table(env):
    """The default set: the shipping path, the contiguous peers (both GELU
    forms, oneDNN too) and the roofs at every selected size and thread count;
    complete calls at 4K on one thread (goal G4); no views, no phase 1, no
    variant sweep."""
    threads = sorted({1, len(CPUS)})
    r = run_bench(env, "--dry-run", "--ops", "gelu_bwd,selu_bwd", "--dtypes", "f32,f16",
                  "--sizes", "4K,64K,1M,16M")
    assert r.returncode == 0, r.stderr
    assert_nothing_built_or_run(env)
    api = listed(env, "actgrad-bench")
    assert listed(env, "actgrad-bench-variants") == []
    assert "actgrad-bench-variants: not run (--variants adds the variant sweep)" in r.stdout
    subjects = set()
    for kind, subject, n, thr in parse(api):
        assert kind in ("roof", "api", "peer") and n in (4096, N64K, 1 << 20, N16M) and thr in threads
        subjects.add(subject)
        if kind == "api":
            both_at_4k = subject.endswith(".contig.both") and (n, thr) == (4096, 1)
            assert subject.endswith(".contig.phase2") or both_at_4k, (subject, n, thr)
        if kind == "peer":
            assert len(subject.split(".")) == 3, subject  # contiguous: no layout suffix
    forms = {"gelu_bwd", "gelu_bwd_tanh", "selu_bwd"}
    assert {f"{op}.{dt}.contig.phase2" for op in forms for dt in ("f32", "f16")} <= subjects
    assert {f"torch.{op}.f16" for op in forms} | {"dnnl.gelu_bwd_tanh.f16", "dnnl.gelu_bwd.f32"} <= subjects
    assert not any(".bf16" in s or "hardswish" in s for s in subjects)
    assert re.search(rf"actgrad-bench: {len(api)} benchmarks .* x 2 process", r.stdout), r.stdout
    assert f"--actgrad_sizes=4096,{N64K},{1 << 20},{N16M}" in r.stdout
    assert "--benchmark_repetitions" not in r.stdout and "--benchmark_min_time=0.03" in r.stdout
    assert {name.rsplit("/place:", 1)[1].split("/")[0] for name in api} == {"0", "1", "2", "3"}
    m = re.search(r"estimate: (\d+) benchmark runs, (\d+) repetitions in (\d+) process\(es\), about (\d+)m(\d+)s",
                  r.stdout)
    assert m, r.stdout
    assert int(m.group(1)) == 2 * len(api) and int(m.group(2)) == 2 * len(api)
    assert int(m.group(3)) == 2 * len(threads)


def test_one_listing_per_thread_count_on_that_many_cpus(env):
    """oneDNN registers thr:T only in a process on T CPUs: each thread count
    is listed (and run) with --actgrad_threads=T on the first T CPUs."""
    if len(CPUS) < 2:
        pytest.skip("needs 2 CPUs")
    r = run_bench(env, "--dry-run", "--ops", "gelu_bwd", "--dtypes", "f32", "--threads", f"1,{len(CPUS)}")
    assert r.returncode == 0, r.stderr
    lists = [c for c in calls(env) if c["prog"] == "actgrad-bench"]
    assert [(c["cpus"], [a for a in c["args"] if a.startswith("--actgrad_threads")]) for c in lists] == [
        (CPUS[:1], ["--actgrad_threads=1"]), (CPUS, [f"--actgrad_threads={len(CPUS)}"])]
    dnnl = {thr for kind, s, _, thr in parse(listed(env, "actgrad-bench")) if s.startswith("dnnl.")}
    assert dnnl == {1, len(CPUS)}


def test_views_and_variants_flags(env):
    r = run_bench(env, "--dry-run", "--no-report", "--views", "--variants", "--ops", "gelu_bwd",
                  "--dtypes", "f32,bf16", "--sizes", "4K,64K,16M", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert_nothing_built_or_run(env)
    api, var = listed(env, "actgrad-bench"), listed(env, "actgrad-bench-variants")
    assert re.search(rf"actgrad-bench-variants: {len(var)} benchmarks .* x 1 process", r.stdout), r.stdout
    kinds = set()
    for kind, subject, n, thr in parse(api + var):
        kinds.add(kind)
        if kind == "roof":
            continue
        assert op_dtype(kind, subject) in {(op, dt) for op in ("gelu_bwd", "gelu_bwd_tanh")
                                           for dt in ("f32", "bf16")}, subject
        if kind == "api":
            assert subject.endswith(".phase2") or (subject.endswith(".contig.both") and (n, thr) == (4096, 1)), subject
            if ".contig." not in subject:
                assert n in (N64K, N16M)  # the views at the goal sizes
        if kind == "variant":
            assert subject.split(".")[-1] in ("avx2", "nt") and ".sse4" not in subject  # best target only
            assert ".u4." in subject if n == N16M else n == N64K
    assert kinds == {"roof", "api", "peer", "variant"}
    subjects = {s for _, s, _, _ in parse(api)}
    for layout in ("strided", "bcast", "transposed"):
        assert f"gelu_bwd_tanh.f32.{layout}.phase2" in subjects and f"torch.gelu_bwd.bf16.{layout}" in subjects


def test_ops_gelu_bwd_tanh_alone(env):
    r = run_bench(env, "--dry-run", "--ops", "gelu_bwd_tanh", "--dtypes", "f16", "--threads", "1")
    assert r.returncode == 0, r.stderr
    ops = {op_dtype(k, s)[0] for k, s, _, _ in parse(listed(env, "actgrad-bench")) if k != "roof"}
    assert ops == {"gelu_bwd_tanh"}


def test_placements_flag_selects_placements(env):
    r = run_bench(env, "--dry-run", "--ops", "selu_bwd", "--dtypes", "f32", "--placements", "2",
                  "--processes", "3")
    assert r.returncode == 0, r.stderr
    assert "--actgrad_placements=2" in r.stdout
    assert re.search(r"actgrad-bench: \d+ benchmarks .* x 3 process", r.stdout), r.stdout
    names = listed(env, "actgrad-bench") + listed(env, "actgrad-bench-variants")
    assert names and all(name.endswith("/place:2/real_time") for name in names)


@pytest.mark.parametrize("bad", [["--placements", "x"], ["--placements", "-1"], ["--processes", "0"]])
def test_bad_placement_flags_are_usage_errors(env, bad):
    r = run_bench(env, "--dry-run", *bad)
    assert r.returncode == 2 and "usage" in r.stderr.lower(), r.stderr


def test_quick_dry_run(env):
    r = run_bench(env, "--dry-run", "--quick", "--variants", "--ops", "selu_bwd", "--dtypes", "f16",
                  "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert_nothing_built_or_run(env)
    var = parse(listed(env, "actgrad-bench-variants"))
    assert {n for _, _, n, _ in var} == {N64K, N16M}  # the quick sizes
    assert all(".u4." in s for k, s, _, _ in var if k == "variant")
    assert "--benchmark_min_time=0.02" in r.stdout and "--benchmark_repetitions" not in r.stdout


@pytest.mark.parametrize("full", [["--set", "full"], ["--full"]])
def test_full_set_dry_run(env, full):
    r = run_bench(env, "--dry-run", *full, "--ops", "softshrink_bwd", "--dtypes", "f32",
                  "--sizes", "1001", "--threads", "2", "--min-time", "0.5")
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
    """The peers are installed first (scripts/setup-peers); the build is
    scripts/build's: configured in --build-dir with the benchmarks on and
    ACTGRAD_PEERS when not configured yet or configured with other peers,
    then only the programs the run needs built with --jobs. (The stand-in
    cmake fails, so the run stops there.)"""
    r = run_bench(env, "--quick", "--jobs", "1", "--no-report")
    assert r.returncode != 0 and "build failed" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert tool_lines(env, "setup-peers") == ["setup-peers "] and not tool_lines(env, "setup-deps")
    (configure,) = tool_lines(env, "cmake")
    assert f"-B {env['bdir']} -DCMAKE_BUILD_TYPE=Release" in configure, configure
    assert configure.endswith("-DACTGRAD_BUILD_BENCH=ON -DACTGRAD_PEERS=pypi"), configure
    assert calls(env) == []  # nothing ran

    cache = "CMAKE_BUILD_TYPE:STRING=Release\nACTGRAD_BUILD_BENCH:BOOL=ON\nACTGRAD_PEERS:STRING=pypi\n"
    (env["bdir"] / "CMakeCache.txt").write_text(cache)
    (env["tmp"] / "tools.log").unlink()
    r = run_bench(env, "--quick", "--jobs", "1", "--no-report")
    assert r.returncode != 0 and "build failed" in r.stderr, r.stderr
    assert tool_lines(env, "cmake") == [f"cmake --build {env['bdir']} -j 1 --target actgrad-bench"]

    (env["tmp"] / "tools.log").unlink()
    r = run_bench(env, "--quick", "--variants", "--jobs", "1", "--no-report")
    assert tool_lines(env, "cmake") == [
        f"cmake --build {env['bdir']} -j 1 --target actgrad-bench --target actgrad-bench-variants"]


@pytest.mark.parametrize("peers, setup, value", [
    ("debian", "setup-deps --bench", "debian"),
    ("none", None, "off"),
    ("pypi", "setup-peers ", "pypi"),
])
def test_peers_flag_installs_and_reconfigures(env, peers, setup, value):
    """--peers picks what is installed and -DACTGRAD_PEERS; a cache with
    other peers is configured again."""
    (env["bdir"] / "CMakeCache.txt").write_text(
        "CMAKE_BUILD_TYPE:STRING=Release\nACTGRAD_BUILD_BENCH:BOOL=ON\nACTGRAD_PEERS:STRING=elsewhere\n")
    r = run_bench(env, "--peers", peers, "--jobs", "1", "--no-report")
    assert r.returncode != 0 and "build failed" in r.stderr, r.stderr
    installs = tool_lines(env, "setup-peers") + tool_lines(env, "setup-deps")
    assert installs == ([setup] if setup else []), installs
    (configure,) = tool_lines(env, "cmake")
    assert configure.endswith(f"-DACTGRAD_PEERS={value}"), configure
    assert f"ACTGRAD_PEERS=elsewhere, wanted {value}" in r.stderr


def test_failing_setup_peers_stops_the_run(env):
    r = run_bench(env, "--jobs", "1", "--no-report", FAKE_SETUP_PEERS_STATUS="1")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert "scripts/setup-peers failed (status 1" in r.stderr and "--peers none" in r.stderr, r.stderr
    assert not tool_lines(env, "cmake") and calls(env) == []


def test_failing_setup_peers_under_quick_goes_on_without_peers(env):
    r = run_bench(env, "--quick", "--jobs", "1", "--no-report", FAKE_SETUP_PEERS_STATUS="1")
    assert "warning: scripts/setup-peers failed" in r.stderr and "without peers" in r.stderr, r.stderr
    (configure,) = tool_lines(env, "cmake")
    assert configure.endswith("-DACTGRAD_PEERS=off"), configure


@pytest.mark.parametrize("bad, words", [(["--peers", "conda"], "--peers: invalid choice: 'conda'"),
                                        (["--peers"], "--peers: expected one argument")])
def test_bad_peers_is_a_usage_error(env, bad, words):
    r = run_bench(env, "--no-build", *bad)
    assert r.returncode == 2 and r.stderr.startswith("usage: ") and words in r.stderr, r.stderr
    assert calls(env) == [] and not (env["tmp"] / "tools.log").exists()


# -- runs with the stand-in programs ----------------------------------------------------------

def full_run(env, *args, **extra_env):
    out = env["tmp"] / "results" / "r.json"
    r = run_bench(env, "--no-build", "--out", str(out), *args, **extra_env)
    return r, (json.loads(out.read_text()) if out.exists() else None)


def test_run_one_process_per_thread_count_pinned(env):
    """Each round runs actgrad-bench once per thread count T with
    --actgrad_threads=T on the first T CPUs; the rows are merged, tagged with
    their program, round and CPUs; the peer check runs first."""
    threads = sorted({1, len(CPUS)})
    r, doc = full_run(env, "--ops", "gelu_bwd", "--dtypes", "f16", "--sizes", "64K", "--placements", "0",
                      "--threads", ",".join(map(str, threads)), "--no-report")
    assert r.returncode == 0, r.stderr
    runs = [c for c in calls(env) if c["prog"] == "actgrad-bench" and "--benchmark_list_tests=true" not in c["args"]]
    assert runs[0]["args"] == ["--actgrad_check_peers"]
    timed = [(c["cpus"], [a for a in c["args"] if a.startswith("--actgrad_threads=")]) for c in runs[1:]]
    assert timed == [(CPUS[:t], [f"--actgrad_threads={t}"]) for t in threads] * 2  # two rounds
    assert not [c for c in calls(env) if c["prog"] == "actgrad-bench-variants"]
    rows = doc["benchmarks"]
    for b in rows:
        kind, subject, n, thr = parse([b["name"]])[0]
        assert b["fake_cpus"] == CPUS[:thr] and b["actgrad_cpus"] == thr, b
        assert b["actgrad_binary"] == "actgrad-bench" and b["actgrad_process"] in (0, 1)
    names = {b["name"] for b in rows}
    for t in threads:
        for s in ("api/gelu_bwd_tanh.f16.contig.phase2", "peer/torch.gelu_bwd.f16", "peer/dnnl.gelu_bwd_tanh.f16",
                  "roof/stream_nt"):
            assert f"{s}/n:{N64K}/thr:{t}/place:0/real_time" in names
    assert len(rows) == 2 * len(names)  # each benchmark once per round
    ctx = doc["context"]
    assert ctx["actgrad_processes"] == "2" and ctx["actgrad_binary"] == "actgrad-bench"
    assert ctx["actgrad_max_threads"] == str(len(CPUS))  # the context of the process with the most CPUs
    assert "peer check: all 18 cases agree" in r.stderr
    assert tool_lines(env, "goals") == [f"goals {env['tmp'] / 'results' / 'r.json'}"]


def test_run_with_variants_between_the_rounds(env):
    r, doc = full_run(env, "--variants", "--ops", "selu_bwd", "--dtypes", "f32", "--sizes", "64K",
                      "--placements", "0", "--threads", "1", "--no-report")
    assert r.returncode == 0, r.stderr
    order = [c["prog"] for c in calls(env) if "--benchmark_out_format=json" in c["args"]]
    assert order == ["actgrad-bench", "actgrad-bench-variants", "actgrad-bench"]
    assert doc["context"]["actgrad_binary"] == "actgrad-bench,actgrad-bench-variants"
    assert doc["context"]["actgrad_variant_targets"] == "avx2,sse4"
    variants = rows_named(doc, "variant/")
    assert variants and {b["actgrad_binary"] for b in variants} == {"actgrad-bench-variants"}
    assert {b["actgrad_cpus"] for b in variants} == {len(CPUS)} and variants[0]["fake_cpus"] == CPUS


def test_no_build_says_when_the_build_has_other_peers(env):
    (env["bdir"] / "CMakeCache.txt").write_text("CMAKE_BUILD_TYPE:STRING=Release\nACTGRAD_PEERS:STRING=off\n")
    r, doc = full_run(env, "--ops", "selu_bwd", "--dtypes", "f32", "--sizes", "64K", "--threads", "1",
                      "--processes", "1", "--no-report")
    assert r.returncode == 0 and doc, r.stderr
    assert "warning: --no-build" in r.stderr and "ACTGRAD_PEERS=off, wanted pypi" in r.stderr, r.stderr
    assert tool_lines(env, "setup-peers") == tool_lines(env, "setup-deps") == tool_lines(env, "cmake") == []


def rows_named(doc, prefix):
    return [b for b in doc["benchmarks"] if b["name"].startswith(prefix)]


@pytest.mark.parametrize("mode", ["fail", "none"])
def test_peer_check_runs_first(env, mode):
    """A disagreement stops the run before any timing, with the program's
    message; a program without peers passes."""
    r, doc = full_run(env, "--ops", "selu_bwd", "--dtypes", "f32", "--sizes", "64K", "--threads", "1",
                      "--no-report", FAKE_CHECK_PEERS=mode)
    timed = [c for c in calls(env) if "--benchmark_out_format=json" in c["args"]]
    if mode == "fail":
        assert r.returncode == 1 and doc is None and timed == [], r.stderr
        assert "dnnl.gelu_bwd_tanh.bf16.contig: DISAGREES" in r.stderr
        assert ("peer check failed (actgrad-bench --actgrad_check_peers, status 1): peer check failed: "
                "dnnl.gelu_bwd_tanh.bf16.contig disagrees with the double reference") in r.stderr, r.stderr
    else:
        assert r.returncode == 0 and timed, r.stderr
        assert "peer check: actgrad_peers: none: no peer to check" in r.stderr


def test_progress_lines(env):
    """Not a terminal: a plain progress line every 10 % and a last one."""
    r, doc = full_run(env, "--ops", "selu_bwd", "--dtypes", "f32", "--sizes", "64K", "--threads", "1",
                      "--processes", "1", "--no-report")
    assert r.returncode == 0, r.stderr
    total = len(doc["benchmarks"])
    lines = re.findall(r"^\[bench\] (\d+)/(\d+) benchmarks \((\d+) %\), (\S+) elapsed, (.*)$", r.stderr, re.M)
    assert len(lines) >= 10 and all(int(t) == total for _, t, _, _, _ in lines), r.stderr
    assert int(lines[-1][0]) == total and lines[-1][2] == "100" and lines[-1][4] == "about 0m00s left"
    assert "\r" not in r.stderr
    assert re.search(r"^estimate: \d+ benchmark runs, \d+ repetitions in 1 process\(es\), about", r.stderr, re.M)


def test_progress_counts_aggregates_once(env):
    r, doc = full_run(env, "--ops", "selu_bwd", "--dtypes", "f32", "--sizes", "64K", "--threads", "1",
                      "--processes", "1", "--reps", "3", "--no-report")
    assert r.returncode == 0, r.stderr
    total = len({b["name"] for b in doc["benchmarks"]})
    assert f"[bench] {total}/{total} benchmarks (100 %)" in r.stderr, r.stderr


def test_failing_program_shows_its_output(env):
    r, doc = full_run(env, "--ops", "selu_bwd", "--dtypes", "f32", "--sizes", "64K", "--threads", "1",
                      "--no-report", FAKE_BENCH_FAIL="actgrad-bench")
    assert r.returncode == 1 and doc is None
    assert "error: the fake failed on purpose" in r.stderr and "actgrad-bench (process 0, 1 CPU(s)) failed (1)" \
        in r.stderr, r.stderr
