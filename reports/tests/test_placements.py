"""Placements (/place:k) and processes (actgrad_process) are samples of one benchmark:
names, parsing of merged and aggregates-only files, compare's two-state verdicts,
the report's stability table."""

import os
import statistics

import pytest

from conftest import write_json
from reports import compare, gbench, names, synth
from reports.errors import InputError

API = "api/gelu_bwd.f32.contig.phase2/n:65536/thr:1"
PEER = "peer/dnnl.gelu_bwd.f32/n:65536/thr:1"


def row(name, t, k=None, proc=None, rep=0, binary=None, **extra):
    """One iteration row as the benchmark programs write it (real_time in ns)."""
    full = name if k is None else f"{name}/place:{k}"
    r = {"name": full, "run_name": full, "run_type": "iteration", "repetition_index": rep, "repetitions": 2,
         "real_time": t, "cpu_time": t, "time_unit": "ns", "items_per_second": 65536 / (t * 1e-9),
         "bytes_per_second": 12 * 65536 / (t * 1e-9)}
    if k is not None:
        r["placement"] = k
    if proc is not None:
        r["actgrad_process"] = proc
    if binary is not None:
        r["actgrad_binary"] = binary
    r.update(extra)
    return r


def agg(name, agg_name, t, k, proc=None):
    full = f"{name}/place:{k}"
    r = {"name": f"{full}_{agg_name}", "run_name": full, "run_type": "aggregate", "aggregate_name": agg_name,
         "aggregate_unit": "time", "repetitions": 3, "real_time": t, "cpu_time": t, "time_unit": "ns",
         "placement": k}
    if proc is not None:
        r["actgrad_process"] = proc
    return r


def merged_doc(times):
    """times[(process, placement)] = [real_time, ...] for API; the peer at 1000 ns everywhere."""
    rows = []
    for proc in sorted({p for p, _ in times}):
        for (p, k), ts in sorted(times.items()):
            if p == proc:
                rows += [row(API, t, k, proc, rep=i) for i, t in enumerate(ts)]
                rows += [row(PEER, 1000.0, k, proc, rep=i) for i in range(len(ts))]
    return {"context": {"actgrad_processes": str(len({p for p, _ in times})),
                        "actgrad_placements": "0,1,2,3"}, "benchmarks": rows}


# -- names ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, base, k", [
    (API + "/place:2", API, 2),
    (API, API, None),
    ("peer/dnnl.gelu_bwd.f32/n:65536/thr:1/place:0", PEER, 0),
    ("variant/selu_bwd.f32.exact.u4.avx3/n:65536/thr:1/place:3", "variant/selu_bwd.f32.exact.u4.avx3/n:65536/thr:1", 3),
    ("roof/stream_plain/n:65536/thr:1/place:1", "roof/stream_plain/n:65536/thr:1", 1),
    ("roof/stream_plain/n:65536/thr:1/place:1/real_time", "roof/stream_plain/n:65536/thr:1", 1),
    ("api/x/n:1/thr:1/place:x", "api/x/n:1/thr:1/place:x", None),     # not an index: kept, as an extra part
    ("BM_memcpy/place:1", "BM_memcpy/place:1", None),                   # place:k only after kind/subject
    ("api/x/n:1/thr:1/place:1234567890", "api/x/n:1/thr:1/place:1234567890", None),   # beyond 9 digits
])
def test_strip_placement(name, base, k):
    assert names.strip_placement(name) == (base, k)


def test_placement_is_not_part_of_the_identity():
    with_k, without = names.parse(API + "/place:2"), names.parse(API)
    assert with_k.placement == 2 and without.placement is None
    assert with_k.base == without.base == API
    assert (with_k.series, with_k.label, with_k.n, with_k.thr, with_k.extra) == \
        (without.series, without.label, without.n, without.thr, without.extra)
    assert with_k.series == "api/gelu_bwd.f32.contig.phase2/thr:1"


# -- parsing -------------------------------------------------------------------------------------

def test_merged_two_process_file_is_one_benchmark_per_name():
    times = {(p, k): [1000.0 + 10 * k + 100 * p, 1001.0 + 10 * k + 100 * p] for p in (0, 1) for k in range(4)}
    run = gbench.parse(merged_doc(times), "merged.json")
    assert set(run.benches) == {API, PEER} and run.merged
    b = run.benches[API]
    assert len(b.values()) == 16 and b.sample_count() == 16
    assert b.center() == pytest.approx(statistics.median([t for ts in times.values() for t in ts]))
    assert b.parsed.placement is None and b.parsed.kind == "api"
    assert sorted(b.by_placement()) == [0, 1, 2, 3]
    assert b.by_placement()[2] == [1020.0, 1021.0, 1120.0, 1121.0]
    assert b.by_process() == {0: [1000.0, 1001.0, 1010.0, 1011.0, 1020.0, 1021.0, 1030.0, 1031.0],
                              1: [1100.0, 1101.0, 1110.0, 1111.0, 1120.0, 1121.0, 1130.0, 1131.0]}
    assert len(b.cells()) == 8
    assert {w.process for w in b.where["real_time"]} == {0, 1}


def test_files_without_placements_are_as_before():
    doc = synth.make_run(ops=("gelu_bwd",), dtypes=("f32",), sizes=[1024], reps=5, atlas=False)
    run = gbench.parse(doc, "old.json")
    assert not run.merged
    b = next(iter(run.benches.values()))
    assert b.by_placement() == {None: b.values()} and b.by_process() == {0: b.values()}
    assert b.center() == statistics.median(b.values())
    only = b.group_aggregates[gbench.Where()]
    assert b.aggregates["median"]["real_time"] == pytest.approx(only["median"]["real_time"])


def test_aggregates_only_with_placements_centers_on_the_median_of_medians():
    rows = []
    for k, med in enumerate((100.0, 104.0, 180.0, 102.0)):
        rows += [agg(API, "mean", med + 1, k), agg(API, "median", med, k), agg(API, "stddev", 2.0, k)]
    run = gbench.parse({"context": {}, "benchmarks": rows}, "aggs.json")
    b = run.benches[API]
    assert not b.values() and b.center() == pytest.approx(103.0)    # median of 100, 102, 104, 180
    assert b.by_placement() == {0: [100.0], 1: [104.0], 2: [180.0], 3: [102.0]}
    assert b.sample_count() == 12                                    # 3 repetitions x 4 placements
    assert b.aggregates["stddev"]["real_time"] == pytest.approx(2.0)


def test_old_format_without_run_type_strips_the_placement():
    rows = [{"name": f"{API}/place:{k}", "real_time": 100.0 + k, "time_unit": "ns"} for k in range(3)]
    rows += [{"name": f"{API}/place:{k}_median", "real_time": 100.0 + k, "time_unit": "ns"} for k in range(3)]
    b = gbench.parse({"benchmarks": rows}, "old.json").benches[API]
    assert b.values() == [100.0, 101.0, 102.0] and len(b.group_aggregates) == 3


def test_the_placement_counter_stands_in_for_a_name_without_one():
    rows = [row(API, 100.0 + k, proc=0, rep=k, placement=k) for k in range(2)]
    b = gbench.parse({"benchmarks": rows}, "f.json").benches[API]
    assert b.by_placement() == {0: [100.0], 1: [101.0]}


@pytest.mark.parametrize("bad", [-1, 1.5, "one", True, float("nan"), float("inf"), 10 ** 400])
def test_a_bad_process_index_is_bad_input(bad):
    with pytest.raises(InputError, match="actgrad_process"):
        gbench.parse({"benchmarks": [row(API, 100.0, 0, bad)]}, "f.json")


def test_roof_of_two_programs_keeps_the_processes_apart():
    rows = [row("roof/stream_plain/n:65536/thr:1", 100.0, k, 0, binary="actgrad-bench") for k in range(2)]
    rows += [row("roof/stream_plain/n:65536/thr:1", 200.0, k, 0, binary="actgrad-bench-variants") for k in range(2)]
    b = gbench.parse({"benchmarks": rows}, "f.json").benches["roof/stream_plain/n:65536/thr:1"]
    assert b.by_process() == {"actgrad-bench-variants:0": [200.0, 200.0], "actgrad-bench:0": [100.0, 100.0]}
    assert len(b.cells()) == 4


# -- compare -------------------------------------------------------------------------------------

def _steady(scale=1.0, seed=0):
    import numpy as np
    rng = np.random.default_rng(seed)
    return {(p, k): list(1000.0 * scale * (1 + 0.01 * rng.standard_normal(2))) for p in (0, 1) for k in range(4)}


def _two_state(seed=0, slow=1.96):
    """Process 1 lands in the slow state at every placement."""
    t = _steady(seed=seed)
    return {(p, k): [v * (slow if p == 1 else 1.0) for v in ts] for (p, k), ts in t.items()}


def _compare(tmp_path, base_times, new_times, *extra):
    base = write_json(tmp_path / "base.json", merged_doc(base_times))
    new = write_json(tmp_path / "new.json", merged_doc(new_times))
    from conftest import run_cli
    return run_cli("compare", base, new, "--json", tmp_path / "v.json", *extra)


def test_one_side_two_state_is_not_comparable(tmp_path):
    r = _compare(tmp_path, _two_state(), _steady(seed=1))
    assert r.code == 0, r              # not a regression, although the median moved a lot
    line = next(ln for ln in r.out.splitlines() if ln.startswith(API))
    assert "not comparable: base has two states (1.00x / 1.9" in line
    assert "not comparable (1; not counted as regressions):" in r.out
    assert "over 1 benchmarks (1 not comparable left out): 1.0" in r.out      # the peer's ratio only
    import json
    v = json.load(open(tmp_path / "v.json"))
    assert v["not_comparable"] == [API] and v["regressions"] == []
    row_ = next(b for b in v["benchmarks"] if b["name"] == API)
    assert row_["verdict"] == compare.NOT_COMPARABLE and row_["note"].startswith("base has two states")
    # the peer, steady on both sides, is compared as usual: 16 samples each
    peer = next(b for b in v["benchmarks"] if b["name"] == PEER)
    assert peer["verdict"] == compare.SAME and (peer["n_base"], peer["n_new"]) == (16, 16)


def test_new_side_two_state_is_not_comparable_either(tmp_path):
    r = _compare(tmp_path, _steady(), _two_state(seed=2))
    assert r.code == 0 and "not comparable: new has two states" in r.out, r


def test_both_sides_two_state_compare_the_medians_and_say_so(tmp_path):
    slower = {c: [v * 1.2 for v in ts] for c, ts in _two_state(seed=3).items()}
    r = _compare(tmp_path, _two_state(seed=4), slower)
    assert r.code == 1, r                                  # a real 20 % slowdown of both states
    assert "two states on both sides (1; medians compared):" in r.out
    assert "both sides have two states (base 1.00x / 1.9" in r.out


def test_steady_placements_and_processes_are_samples_of_the_u_test(tmp_path):
    r = _compare(tmp_path, _steady(seed=5), _steady(scale=1.10, seed=6))
    assert r.code == 1 and "U test 16v16" in r.out, r


# -- the report's stability table -----------------------------------------------------------------

def test_plot_shows_a_stability_table_for_merged_files(tmp_path, cli_run, small_run):
    def slow_process(name, proc, k):
        return 1.9 if "peer/torch" in name and proc == 1 else 1.0
    doc = small_run(placements=[0, 1, 2, 3], processes=2, reps=2, cell_fn=slow_process)
    out = tmp_path / "out"
    r = cli_run("plot", write_json(tmp_path / "merged.json", doc), "--out", out)
    assert r.code == 0, r
    html = (out / "index.html").read_text()
    assert 'id="stability"' in html and "Stability over placements and processes" in html
    md = (out / "stability.md").read_text()
    lines = [ln for ln in md.splitlines() if ln.startswith("| peer/") or ln.startswith("| api/")]
    assert len(lines) == 3 * 3                     # api, torch and dnnl of gelu f32 at 3 sizes
    flagged = [ln for ln in lines if "| yes:" in ln]
    assert flagged and all(ln.startswith("| peer/torch") and "slow: process 1" in ln for ln in flagged)
    assert len(flagged) == 3                       # torch at each of the 3 sizes
    assert "3 with two states" in md


def test_plot_of_a_plain_file_has_no_stability_table(tmp_path, cli_run, small_run):
    out = tmp_path / "out"
    assert cli_run("plot", write_json(tmp_path / "r.json", small_run()), "--out", out).code == 0
    assert 'id="stability"' not in (out / "index.html").read_text()
    assert not os.path.exists(out / "stability.md")


def test_every_benchmark_not_comparable(tmp_path):
    def api_only(doc):
        return dict(doc, benchmarks=[r for r in doc["benchmarks"] if r["name"].startswith("api/")])
    base, new = api_only(merged_doc(_two_state())), api_only(merged_doc(_steady()))
    from conftest import run_cli
    r = run_cli("compare", write_json(tmp_path / "b.json", base), write_json(tmp_path / "n.json", new))
    assert r.code == 0, r
    assert "over 0 benchmarks (1 not comparable left out): none" in r.out


def test_synth_writes_merged_runs(tmp_path, cli_run):
    out = tmp_path / "m.json"
    r = cli_run("synth", "run", out, "--placements", "0,1,2,3", "--processes", "2", "--reps", "2")
    assert r.code == 0, r
    run = gbench.load(out)
    assert run.merged and run.context["actgrad_processes"] == "2"
    b = run.benches["peer/torch.gelu_bwd.f32/n:1024/thr:1"]
    assert len(b.values()) == 16 and sorted(b.by_placement()) == [0, 1, 2, 3] and sorted(b.by_process()) == [0, 1]
    assert cli_run("synth", "run", out, "--placements", "0,-1").code == 2


def test_a_long_stability_table_is_folded_below_its_two_state_rows():
    from reports.report import _stability_tables
    rows = [[f"api/x{i}", "1 us", "4", "1.0 %", "1 us / 1 us", "0.0 %", "yes: 1.00x / 1.90x" if i < 2 else "no"]
            for i in range(40)]
    html = _stability_tables(rows, flagged=2)
    head, folded = html.split("<details>")
    assert "api/x1" in head and "api/x2" not in head and "All 40 benchmarks" in folded
    assert "<details>" not in _stability_tables(rows[:10], flagged=2)
