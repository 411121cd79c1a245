"""The change-point detector's bugs, its goal, the noise flag, the evaluation.

Each bug of the issue has its test; the goal (3 % steps at cv 2 % caught in
>= 90 % of series, <= 1 false alarm per 100 series of noise) is checked on a
small fixed set here and on the full set by ``python -m reports.cpeval``
(docs/changepoints.md).
"""

import math

import numpy as np
import pytest

from reports import cpeval
from reports.changepoint import analyse_series, changepoints
from reports.stats import u_test_p


def lognormal(n, cv, seed, base=100.0):
    rng = np.random.default_rng(seed)
    return base * np.exp(cv * rng.standard_normal(n))


@pytest.mark.parametrize("bad", [float("nan"), None, float("inf"), -float("inf")])
def test_one_bad_point_raises_nothing_and_is_excluded(bad):
    # was: ValueError at stats.py:89, int(round(n1 * n2 - u)) with u NaN
    y = list(lognormal(24, 0.01, 1))
    y[5] = bad
    a = analyse_series(y)
    assert a.excluded == [5] and a.changes == []
    assert math.isfinite(u_test_p([1.0, 2.0, bad, 3.0], [4.0, 5.0, 6.0]))


def test_two_nans_do_not_hide_a_ten_percent_step():
    y = list(lognormal(30, 0.01, 2))
    for i in range(15, 30):
        y[i] *= 1.10
    y[4] = y[20] = float("nan")
    cps = changepoints(y)
    assert [c.index for c in cps] == [15]
    assert cps[0].change == pytest.approx(0.10, abs=0.02)


def test_step_after_a_nan_gets_the_index_of_the_series_as_given():
    y = list(lognormal(30, 0.01, 3))
    for i in range(15, 30):
        y[i] *= 1.10
    y[15] = None                   # the first commit of the new level failed
    assert [c.index for c in changepoints(y)] == [16]


def test_long_series_regression_of_200_commits_is_found():
    # was: beyond PAIR_LIMIT (1500 points) the pair search was skipped
    y = lognormal(1600, 0.02, 4)
    y[700:900] *= 1.20
    assert [c.index for c in changepoints(y)] == [700, 900]


def test_short_large_regression_is_found():
    # was: n = 145, cv 2 %, +30 % for commits 99-104 missed (the widest window won the ranking)
    y = lognormal(145, 0.02, 5)
    y[99:105] *= 1.30
    cps = changepoints(y)
    assert [c.index for c in cps] == [99, 105]
    assert cps[0].change == pytest.approx(0.30, abs=0.03)


def test_no_reported_step_is_below_min_step():
    # was: 12 of 985 reported steps smaller than min_step (measured again between the final neighbours)
    rng = np.random.default_rng(6)
    seen = 0
    for s in range(30):
        n = int(rng.integers(30, 120))
        y = lognormal(n, float(rng.choice([0.01, 0.02, 0.05])), 100 + s)
        for _ in range(3):
            k = int(rng.integers(3, n - 3))
            y[k:] *= 1 + float(rng.uniform(-0.06, 0.06))
        for min_step in (0.02, 0.05):
            for c in changepoints(y, min_step=min_step):
                seen += 1
                assert abs(c.change) >= min_step, (s, c)
    assert seen > 20


def test_goal_three_percent_steps_at_cv_two_percent():
    rng = np.random.default_rng(7)
    hits = 0
    for s in range(40):
        n = int(rng.choice([100, 200]))
        k = int(rng.integers(n // 4, 3 * n // 4))
        y = lognormal(n, 0.02, 200 + s)
        y[k:] *= 1.03
        hits += any(abs(c.index - k) <= 5 for c in changepoints(y))
    assert hits >= 36               # 90 %


def test_goal_at_most_one_false_alarm_per_100_noise_series():
    alarms = sum(bool(changepoints(lognormal(100, (0.01, 0.02, 0.05, 0.10)[s % 4], 300 + s)))
                 for s in range(100))
    assert alarms <= 1


def test_variance_change_is_a_noise_change_not_a_step():
    rng = np.random.default_rng(8)
    y = 100 * np.exp(np.concatenate([0.01 * rng.standard_normal(60), 0.04 * rng.standard_normal(60)]))
    a = analyse_series(y)
    assert a.changes == []
    assert [(n.kind, abs(n.index - 60) <= 6, n.after > n.before) for n in a.noise] == [("variance", True, True)]
    assert "grew" in a.noise[0].describe()


def test_bimodal_noise_is_flagged_not_a_step():
    rng = np.random.default_rng(9)
    y = 100 * np.exp(0.005 * rng.standard_normal(80)) * np.where(rng.random(80) < 0.3, 1.08, 1.0)
    a = analyse_series(y)
    assert a.changes == []
    assert [n.kind for n in a.noise] == ["bimodal"]
    assert a.noise[0].after / a.noise[0].before == pytest.approx(1.08, abs=0.01)


@pytest.mark.parametrize("seed", range(10))
def test_plain_noise_and_outliers_have_no_noise_flag(seed):
    y = lognormal(100, 0.02, 400 + seed)
    y[[10, 50, 77]] *= 1.6
    a = analyse_series(y)
    assert a.changes == [] and a.noise == []


def test_evaluation_scores_a_few_labelled_series():
    cases = [cpeval.Case("synthetic", "step", 0.01, 0.1, np.r_[lognormal(30, 0.01, 10), 1.1 * lognormal(30, 0.01, 11)],
                         [30]),
             cpeval.Case("synthetic", "noise", 0.02, 0.0, lognormal(60, 0.02, 13))]
    scores = cpeval.evaluate(cases, {"ours": cpeval.ours})
    s = scores[("ours", "all")]
    assert (s.truths, s.tp, s.found, s.quiet_series, s.alarms) == (1, 1, 1, 1, 0)
    assert s.f1 == 1.0 and s.fa100 == 0.0
    tab, noise, timing = cpeval.tables(scores, {"ours": None})
    assert "| all | 2 | 100.0 % |" in tab and "ours" in timing


def test_matching_tolerance():
    assert cpeval.match([50], [54], 100) == (1, 0)
    assert cpeval.match([50], [57], 100) == (0, 1)
    assert cpeval.match([50, 60], [51], 100) == (1, 0)


def test_dashboard_shows_noise_apart_and_marks_excluded_points():
    from reports import dashboard
    from reports.history import Point
    rng = np.random.default_rng(20)
    vals = list(1000 * np.exp(np.concatenate([0.01 * rng.standard_normal(40), 0.05 * rng.standard_normal(40)])))
    vals[10] = float("nan")
    pts = [Point(commit=f"c{i:03d}", date="2026-11-01T00:00:00Z", order=(i,), value=v, samples=3)
           for i, v in enumerate(vals)]
    res = dashboard.analyse({("m1", "api/x"): pts})
    r = res[("m1", "api/x")]
    assert r["status"] == "stable" and r["excluded"] == [10] and [n.kind for n in r["noise"]] == ["variance"]
    page = dashboard._bench_page("api/x", {"m1": r}, "real_time")
    assert 'class="noisechange"' in page and 'class="excluded"' in page
    assert "Noise changed (not a regression)" in page and "excluded (no value)" in page
    assert "open regression" not in page
