"""Statistics on known inputs, and the compare verdicts."""

import json
import math

import numpy as np
import pytest

from conftest import write_json
from reports import gbench
from reports.compare import compare_runs, parse_threshold
from reports.stats import geomean, mannwhitney


def test_mannwhitney_known_values():
    # completely separated samples of 5: exact two-sided p = 2 / C(10, 5)
    assert mannwhitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert mannwhitney([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert mannwhitney([5, 5, 5], [5, 5]) == 1.0
    assert math.isnan(mannwhitney([], [1.0]))
    # symmetric in its arguments
    assert mannwhitney([1, 4, 2, 8], [3, 5, 7, 9]) == pytest.approx(mannwhitney([3, 5, 7, 9], [1, 4, 2, 8]))


def test_geomean():
    assert geomean([2, 8]) == pytest.approx(4.0)
    assert geomean([1.1] * 7) == pytest.approx(1.1)
    assert geomean([]) is None


def test_threshold_parsing():
    assert parse_threshold("5%") == pytest.approx(0.05)
    assert parse_threshold("5") == pytest.approx(0.05)
    assert parse_threshold("0.5%") == pytest.approx(0.005)


def _runs(small_run, scale=1.0, seed2=2, **kw):
    a = gbench.parse(small_run(seed=1, **kw), "base.json")
    b = gbench.parse(small_run(seed=seed2, scale=scale, **kw), "new.json")
    return a, b


def test_ten_percent_slowdown_is_a_regression_everywhere(small_run):
    a, b = _runs(small_run, scale=1.10)
    rows, summary = compare_runs(a, b, threshold=0.05)
    assert all(r.verdict == "REGRESSION" for r in rows), [r for r in rows if r.verdict != "REGRESSION"]
    assert summary["all"] == pytest.approx(1.10, rel=0.01)
    assert set(summary["by_kind"]) == {"variant", "peer", "api", "roof", "atlas"}
    assert not summary["improvements"]


def test_noise_gives_no_verdict(small_run):
    a, b = _runs(small_run, scale=1.0)
    rows, summary = compare_runs(a, b, threshold=0.05)
    assert not summary["regressions"] and not summary["improvements"]
    assert summary["all"] == pytest.approx(1.0, abs=0.01)


def test_speedup_is_an_improvement(small_run):
    a, b = _runs(small_run, scale=0.85)
    rows, summary = compare_runs(a, b, threshold=0.05)
    assert not summary["regressions"]
    assert len(summary["improvements"]) == len(rows)


def test_small_significant_change_is_within_threshold(small_run):
    a, b = _runs(small_run, scale=1.03, noise=0.001)
    rows, summary = compare_runs(a, b, threshold=0.05)
    assert not summary["regressions"]
    assert {r.verdict for r in rows} == {"within threshold"}


def test_aggregates_only_falls_back_without_test(small_run):
    a, b = _runs(small_run, scale=1.10, aggregates_only=True)
    rows, summary = compare_runs(a, b, threshold=0.05)
    assert {r.test for r in rows} == {"no test (aggregates only)"}
    assert not summary["regressions"] and len(summary["untested_slower"]) == len(rows)
    rows, summary = compare_runs(a, b, threshold=0.05, fail_untested=True)
    assert len(summary["regressions"]) == len(rows)


def test_compare_cli_exit_codes_and_json(tmp_path, cli_run, small_run):
    base = write_json(tmp_path / "base.json", small_run(seed=1))
    slow = write_json(tmp_path / "slow.json", small_run(seed=2, scale=1.10))
    noise = write_json(tmp_path / "noise.json", small_run(seed=3))
    r = cli_run("compare", base, slow, "--threshold", "5%", "--json", tmp_path / "v.json")
    assert r.code == 1, r
    assert "REGRESSION" in r.out and "geometric mean" in r.out and "verdict: " in r.out
    v = json.loads((tmp_path / "v.json").read_text())
    assert v["verdict"] == "regression" and v["exit_code"] == 1
    assert v["geomean"]["all"] == pytest.approx(1.10, rel=0.01)
    assert len(v["regressions"]) == len(v["benchmarks"])
    r = cli_run("compare", base, noise)
    assert r.code == 0, r
    assert "no significant regression" in r.out
    # a 10 % slowdown is under a 15 % threshold
    assert cli_run("compare", base, slow, "--threshold", "15%").code == 0
    # --filter narrows the comparison
    r = cli_run("compare", base, slow, "--filter", "^peer/")
    assert r.code == 1 and "variant/" not in r.out.split("geometric")[0].split("----")[-1]


def test_compare_mixed_versions(tmp_path, cli_run):
    """An old file without run_type against a current one: names match, units converted."""
    import os
    from conftest import DATA
    old = json.load(open(os.path.join(DATA, "gbench-1.1-old-format.json")))
    new = json.loads(json.dumps(old))
    for b in new["benchmarks"]:
        b["run_name"] = b["name"].rsplit("_", 1)[0] if b["name"].endswith(("_mean", "_stddev")) else b["name"]
        b["run_type"] = "aggregate" if b["name"] != b["run_name"] else "iteration"
        if b["run_type"] == "aggregate":
            b["aggregate_name"] = b["name"].rsplit("_", 1)[1]
        if b.get("time_unit") == "us":
            b["real_time"] *= 1000 * 1.2
            b["time_unit"] = "ns"
    paths = write_json(tmp_path / "old.json", old), write_json(tmp_path / "new.json", new)
    r = cli_run("compare", *paths)
    # 3 repetitions against 3 can never reach p < 0.05: shown, untested, not a failure
    assert r.code == 0, r
    assert "no test (too few repetitions, 3v3)" in r.out and "slower (untested)" in r.out
    assert "+20.0%" in r.out
    r = cli_run("compare", *paths, "--fail-untested")
    assert r.code == 1, r
    assert "variant/selu_bwd.f32.none.exact.u2.avx2/n:4096/thr:1" in r.out.split("regressions (1):")[1]


def test_min_p_value():
    from reports.compare import min_p_value
    assert min_p_value(3, 3) == pytest.approx(0.1)
    assert min_p_value(4, 4) == pytest.approx(2 / 70)
    assert min_p_value(5, 5) == pytest.approx(2 / 252)


def test_fast_u_test_matches_scipy():
    from scipy.stats import mannwhitneyu
    from reports.stats import u_test_p
    rng = np.random.default_rng(0)
    for t in range(300):
        n1, n2 = int(rng.integers(1, 14)), int(rng.integers(1, 40))
        a = rng.standard_normal(n1) + rng.uniform(0, 2)
        b = rng.standard_normal(n2)
        if t % 3 == 0:                       # with ties
            a, b = np.round(a, 1), np.round(b, 1)
        want = mannwhitneyu(a, b, alternative="two-sided").pvalue
        assert u_test_p(a, b) == pytest.approx(want, rel=1e-9, abs=1e-15)
