"""Per-benchmark thresholds from a config file, the geometric mean's 95 %
confidence interval, and "not enough data" below 9 repetitions."""

import json
import math

import pytest

from conftest import assert_bad_input, write_json
from reports import gbench
from reports.compare import NOT_ENOUGH, REGRESSION, compare_runs
from reports.stats import geomean_ci
from reports.thresholds import Thresholds

CONFIG = """
[default]
threshold = "5%"
alpha = 0.05

[[benchmark]]
match = "^api/"
threshold = "20%"

[[benchmark]]
match = "^variant/"
threshold = "1%"
alpha = 0.01
"""


def test_rules_first_match_wins(tmp_path):
    p = tmp_path / "t.toml"
    p.write_text(CONFIG)
    t = Thresholds(0.05, 0.05, str(p))
    assert (t.for_name("api/gelu_bwd.f32.contig.phase2/n:1024/thr:1").threshold,
            t.for_name("api/x").alpha) == (0.20, 0.05)
    assert (t.for_name("variant/x").threshold, t.for_name("variant/x").alpha) == (0.01, 0.01)
    assert t.for_name("peer/x").source == "default"
    assert Thresholds(0.03, 0.1).for_name("any").threshold == 0.03


def test_per_benchmark_threshold_changes_the_verdict(tmp_path, small_run):
    base = gbench.parse(small_run(seed=1, atlas=False), "base.json")
    new = gbench.parse(small_run(seed=2, scale=1.1, atlas=False), "new.json")
    p = tmp_path / "t.toml"
    p.write_text(CONFIG)
    rows, summary = compare_runs(base, new, thresholds=Thresholds(0.05, 0.05, str(p)))
    by_kind = {}
    for r in rows:
        by_kind.setdefault(r.kind, set()).add(r.verdict)
    assert REGRESSION not in by_kind["api"]
    assert REGRESSION in by_kind["variant"] and REGRESSION in by_kind["peer"]
    assert {r.threshold for r in rows if r.kind == "api"} == {0.20}


def test_not_enough_data_below_nine_repetitions(small_run):
    base = gbench.parse(small_run(seed=1, reps=8, atlas=False), "base.json")
    new = gbench.parse(small_run(seed=2, reps=8, scale=1.2, atlas=False), "new.json")
    rows, summary = compare_runs(base, new)
    assert {r.verdict for r in rows} == {NOT_ENOUGH}
    assert not summary["regressions"] and len(summary["not_enough_data"]) == len(rows)
    rows, summary = compare_runs(base, new, fail_untested=True)
    assert {r.verdict for r in rows} == {REGRESSION}
    nine = gbench.parse(small_run(seed=2, reps=9, scale=1.2, atlas=False), "new.json")
    base9 = gbench.parse(small_run(seed=1, reps=9, atlas=False), "base.json")
    assert {r.verdict for r in compare_runs(base9, nine)[0]} == {REGRESSION}


def test_geomean_confidence_interval():
    g, lo, hi = geomean_ci([1.0, 1.1, 1.2, 1.05])
    assert g == pytest.approx((1.0 * 1.1 * 1.2 * 1.05) ** 0.25)
    assert lo < g < hi and lo > 0.95 and hi < 1.25
    # t-interval on the logs: 4 values, t(0.975, 3) = 3.182
    logs = [math.log(v) for v in (1.0, 1.1, 1.2, 1.05)]
    m = sum(logs) / 4
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / 3)
    assert math.log(hi) - m == pytest.approx(3.1824 * sd / 2, rel=1e-3)
    assert geomean_ci([1.1])[1:] == (None, None)
    assert geomean_ci([]) == (None, None, None)


def test_cli_config_ci_and_json(tmp_path, cli_run, small_run):
    base = write_json(tmp_path / "base.json", small_run(seed=1, atlas=False))
    new = write_json(tmp_path / "new.json", small_run(seed=2, scale=1.1, atlas=False))
    cfg = tmp_path / "t.toml"
    cfg.write_text(CONFIG)
    r = cli_run("compare", base, new, "--config", cfg, "--json", tmp_path / "v.json")
    assert r.code == 1, r
    assert "95 % CI" in r.out and "per-benchmark rules from" in r.out
    doc = json.loads((tmp_path / "v.json").read_text())
    lo, hi = doc["geomean"]["ci95"]
    assert lo < doc["geomean"]["all"] < hi
    assert {b["threshold"] for b in doc["benchmarks"] if b["kind"] == "api"} == {0.2}
    few = write_json(tmp_path / "few.json", small_run(seed=3, reps=5, scale=1.1, atlas=False))
    r = cli_run("compare", base, few)
    assert r.code == 0 and "not enough data" in r.out, r


@pytest.mark.parametrize("text,words", [
    ("[default]\nthreshold = \"lots\"\n", ["threshold", "percentage"]),
    ("[default]\nalpha = 2\n", ["alpha"]),
    ("[[benchmark]]\nmatch = \"(\"\n", ["bad regex"]),
    ("[[benchmark]]\nthreshold = \"5%\"\n", ["match"]),
    ("[defaults]\n", ["unknown section"]),
    ("[default\n", ["TOML"]),
])
def test_bad_config_is_bad_input(tmp_path, cli_run, small_run, text, words):
    base = write_json(tmp_path / "base.json", small_run(seed=1, atlas=False))
    cfg = tmp_path / "t.toml"
    cfg.write_text(text)
    assert_bad_input(cli_run("compare", base, base, "--config", cfg), "t.toml", *words)


def test_dashboard_thresholds_latest_summary_and_not_enough_data(tmp_path, cli_run):
    from reports import synth
    db = tmp_path / "h.sqlite"
    for d in synth.history_docs(commits=16, step_at=8, machines=("m1",), sizes=(4096,)):
        f = write_json(tmp_path / "r.json", d)
        assert cli_run("record", f, "--db", db).code == 0
    cfg = tmp_path / "t.toml"
    cfg.write_text('[[benchmark]]\nmatch = "^variant/"\nthreshold = "50%"\n')
    plain = cli_run("dashboard", "--db", db, "--out", tmp_path / "d1")
    strict = cli_run("dashboard", "--db", db, "--out", tmp_path / "d2", "--config", cfg)
    assert plain.code == 0 and strict.code == 0, (plain, strict)
    i1 = (tmp_path / "d1" / "index.html").read_text()
    i2 = (tmp_path / "d2" / "index.html").read_text()
    assert 'class="latest-summary"' in i1 and "95 % confidence interval" in i1
    assert "not enough data" in i1            # 3 repetitions per commit
    # the 10 % step of the variants is below their 50 % rule: fewer steps with the config
    n1 = int(i1.split("All detected steps (")[1].split(")")[0])
    n2 = int(i2.split("All detected steps (")[1].split(")")[0])
    assert n1 > n2
    bad = tmp_path / "bad.toml"
    bad.write_text("[default]\nalpha = 7\n")
    assert_bad_input(cli_run("dashboard", "--db", db, "--out", tmp_path / "d3", "--config", bad), "bad.toml")
