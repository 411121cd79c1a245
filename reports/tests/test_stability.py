"""``report stability RUN.json...``: the ours/peer ratios of the speed goals across
five small runs (every benchmark at 4 placements in 2 processes), the summary, the
markdown output, and bad inputs."""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, assert_bad_input, write_json

N64K, N16M = 64 << 10, 16 << 20
SPREAD = (0.98, 0.99, 1.01, 1.02)    # per placement; the median over them is the value itself

# items/s per run: the api (ours) and the peers. Ratios per run:
#   gelu f32 64K/1:        2.50 2.55 2.45 2.60 2.50 (dnnl faster, torch in run 5) -> median 2.50, 4.0 %
#   selu bf16 64K/1:       3.00 3.00 3.00 3.60 3.00 (torch's bf16 kernel)         -> median 3.00, 20 %
#   hardswish f32 16M/2:   1.00 1.02 0.99 1.01 -    (missing in run 5)            -> median 1.005, 1.5 %
GELU = [2.50e9, 2.55e9, 2.45e9, 2.60e9, 2.50e9]
DNNL_GELU = [1e9, 1e9, 1e9, 1e9, 0.9e9]
TORCH_GELU = [0.8e9, 0.8e9, 0.8e9, 0.8e9, 1e9]
SELU_BF16 = [3.0e9, 3.0e9, 3.0e9, 3.6e9, 3.0e9]
HSW = [1.00e9, 1.02e9, 0.99e9, 1.01e9, None]


def rows(name, ips):
    out = []
    for proc in (0, 1):
        for k, f in enumerate(SPREAD):
            full = f"{name}/place:{k}"
            v = ips * f
            out.append({"name": full, "run_name": full, "run_type": "iteration", "repetition_index": 0,
                        "real_time": 1e9 * N64K / v, "time_unit": "ns", "items_per_second": v,
                        "bytes_per_second": 12 * v, "placement": k, "actgrad_process": proc,
                        "actgrad_binary": "actgrad-bench"})
    return out


def run_doc(i):
    g, g16 = f"/n:{N64K}/thr:1", f"/n:{N16M}/thr:2"
    b = rows("api/gelu_bwd.f32.contig.phase2" + g, GELU[i])
    b += rows("peer/dnnl.gelu_bwd.f32" + g, DNNL_GELU[i]) + rows("peer/torch.gelu_bwd.f32" + g, TORCH_GELU[i])
    b += rows("api/selu_bwd.bf16.contig.phase2" + g, SELU_BF16[i]) + rows("peer/torch.selu_bwd.bf16" + g, 1e9)
    b += rows("peer/torch.selu_bwd.f32" + g, 9e9)     # another dtype: not SELU bf16's peer
    b += rows("api/gelu_bwd_tanh.f32.contig.phase2" + g, 2e9) + rows("peer/torch.gelu_bwd_tanh.f32" + g, 1e9)
    b += rows("api/gelu_bwd.f32.contig.phase1" + g, 9e9) + rows("api/gelu_bwd.f32.strided.phase2" + g, 2e9)
    b += rows("roof/stream_plain" + g, 1e9) + rows("roof/stream_plain" + g16, 1e9)
    if HSW[i]:
        b += rows("api/hardswish_bwd.f32.contig.phase2" + g16, HSW[i]) + rows("peer/dnnl.hardswish_bwd.f32" + g16, 1e9)
    return {"context": {"date": f"2026-11-25T10:{10 * i:02d}:00Z", "actgrad_processes": "2",
                        "actgrad_placements": "0,1,2,3"}, "benchmarks": b}


@pytest.fixture
def runs(tmp_path):
    return [write_json(tmp_path / f"run{i + 1}.json", run_doc(i)) for i in range(5)]


def table_rows(out):
    """{(op, dtype): [cells]} of the plain table."""
    found = {}
    for line in out.splitlines():
        cells = line.split()
        if cells and cells[0] in ("gelu_bwd", "gelu_bwd_tanh", "selu_bwd", "hardswish_bwd"):
            found[(cells[0], cells[1])] = cells
    return found


def test_five_runs(runs, cli_run):
    r = cli_run("stability", *runs)
    assert r.code == 0, r
    t = table_rows(r.out)
    assert set(t) == {("gelu_bwd", "f32"), ("gelu_bwd_tanh", "f32"), ("selu_bwd", "bf16"), ("hardswish_bwd", "f32")}
    assert t[("gelu_bwd", "f32")] == ["gelu_bwd", "f32", "64K", "1", "G2", "dnnl/torch",
                                      "2.50x", "2.55x", "2.45x", "2.60x", "2.50x", "2.50x", "4.0", "%"]
    assert t[("selu_bwd", "bf16")][4:] == ["G3", "torch", "3.00x", "3.00x", "3.00x", "3.60x", "3.00x",
                                           "3.00x", "20.0", "%"]
    # GELU tanh: a ratio of its own, against the tanh peer (2x), not GELU erf's peers
    assert t[("gelu_bwd_tanh", "f32")][4:] == ["G2", "torch"] + ["2.00x"] * 6 + ["0.0", "%"]
    assert t[("hardswish_bwd", "f32")][:6] == ["hardswish_bwd", "f32", "16M", "2", "-", "dnnl"]
    assert t[("hardswish_bwd", "f32")][6:] == ["1.00x", "1.02x", "0.99x", "1.01x", "-", "1.00x", "1.5", "%"]
    assert "3 of 4 ratios within +-5 % of their median (2 of 3 goal ratios)" in r.out
    assert f"run 5: {runs[4]} (2026-11-25T10:40:00Z)" in r.out


def test_tolerance_and_markdown(runs, cli_run, tmp_path):
    md = tmp_path / "docs" / "stability.md"
    r = cli_run("stability", *runs, "--tolerance", "25%", "--md", md)
    assert r.code == 0, r
    assert "4 of 4 ratios within +-25 % of their median" in r.out
    text = md.read_text()
    assert "| op | dtype | n | thr | goal | best peer | run 1 | run 2 | run 3 | run 4 | run 5 | median | " \
           "max deviation |" in text
    assert "| gelu_bwd | f32 | 64K | 1 | G2 | dnnl/torch | 2.50x | 2.55x | 2.45x | 2.60x | 2.50x | 2.50x | 4.0 % |" \
        in text
    assert text.rstrip().endswith("4 of 4 ratios within +-25 % of their median (3 of 3 goal ratios)")


def test_the_ratio_is_the_one_goals_py_prints(runs):
    """One rule for ours / the best peer: bench/goals.py shows 2.50x for G2 on run 1."""
    p = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "goals.py"), runs[0], "--markdown"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    g2 = next(ln for ln in p.stdout.splitlines() if ln.startswith("| G2 | gelu_bwd"))
    assert "| >= 3x dnnl | 2.50x |" in g2
    g3 = next(ln for ln in p.stdout.splitlines() if ln.startswith("| G3 | selu_bwd | bf16"))
    assert "| >= 2x torch | 3.00x |" in g3


def test_a_run_missing_in_some_files_is_left_out(tmp_path, cli_run):
    a = write_json(tmp_path / "a.json", run_doc(0))
    doc = run_doc(4)    # no hardswish
    b = write_json(tmp_path / "b.json", doc)
    doc = run_doc(1)
    doc["benchmarks"] = [x for x in doc["benchmarks"] if "selu" not in x["name"]]
    c = write_json(tmp_path / "c.json", doc)
    r = cli_run("stability", b, c)
    assert r.code == 0, r
    assert set(table_rows(r.out)) == {("gelu_bwd", "f32"), ("gelu_bwd_tanh", "f32")}
    assert "only in one run (left out): selu_bwd.bf16.65536.1" in r.out
    assert cli_run("stability", a, b).code == 0


def test_bad_inputs(runs, cli_run, tmp_path, small_run):
    assert_bad_input(cli_run("stability", runs[0]), "run1.json", "two or more")
    no_ratio = write_json(tmp_path / "synthetic.json", small_run())
    assert_bad_input(cli_run("stability", runs[0], no_ratio), "synthetic.json", "no ours/peer ratio")
    assert_bad_input(cli_run("stability", runs[0], tmp_path / "missing.json"), "missing.json", "no such file")
    (tmp_path / "trunc.json").write_text('{"benchmarks": [')
    assert_bad_input(cli_run("stability", runs[0], tmp_path / "trunc.json"), "trunc.json", "not valid JSON")
    assert_bad_input(cli_run("stability", *runs, "--tolerance", "lots"), "--tolerance")
    r = cli_run("stability", *runs, "--md", tmp_path)
    assert_bad_input(r, "is a directory")
    # nothing in common: two runs whose ratios are at different sizes
    only16 = run_doc(0)
    only16["benchmarks"] = [x for x in only16["benchmarks"] if f"n:{N16M}" in x["name"]]
    only64 = run_doc(4)
    one, other = write_json(tmp_path / "only16.json", only16), write_json(tmp_path / "only64.json", only64)
    assert_bad_input(cli_run("stability", one, other), "only64.json", "two or more of the runs")


def test_bad_input_writes_no_markdown(runs, cli_run, tmp_path):
    md = tmp_path / "out.md"
    r = cli_run("stability", runs[0], tmp_path / "missing.json", "--md", md)
    assert r.code == 2 and not md.exists()
