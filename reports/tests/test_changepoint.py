"""Change-point detection on synthetic histories."""

import numpy as np
import pytest

from reports.stats import changepoints, segments


def series(n, seed, noise=0.01, base=100.0):
    return base * (1 + noise * np.random.default_rng(seed).standard_normal(n))


@pytest.mark.parametrize("seed", range(10))
def test_ten_percent_step_at_commit_12_is_flagged_at_12(seed):
    y = series(24, seed)
    y[12:] *= 1.10
    cps = changepoints(y)
    assert [c.index for c in cps] == [12]
    assert cps[0].change == pytest.approx(0.10, abs=0.02)
    assert cps[0].direction == "slower" and cps[0].p_value < 0.05


def test_twenty_commits_step_at_12():
    y = series(20, 99)
    y[12:] *= 1.10
    assert [c.index for c in changepoints(y)] == [12]


@pytest.mark.parametrize("seed", range(10))
def test_single_spikes_are_not_steps(seed):
    y = series(24, 100 + seed)
    y[7] *= 1.5
    y[15] *= 1.4
    y[23] *= 1.6          # even at the very end
    assert changepoints(y) == []


def test_spike_next_to_a_step_does_not_move_it():
    y = series(24, 7)
    y[12:] *= 1.10
    y[5] *= 1.3
    assert [c.index for c in changepoints(y)] == [12]


@pytest.mark.parametrize("seed", range(20))
def test_pure_noise_has_no_step(seed):
    assert changepoints(series(30, 200 + seed, noise=0.02)) == []


def test_false_positive_rate_is_bounded_by_alpha():
    """Without the minimum step, the test alone flags noise at most ~alpha of the time."""
    flagged = sum(bool(changepoints(series(30, 1000 + s), min_step=0.0, alpha=0.05)) for s in range(200))
    assert flagged <= 20        # 10 % (expected <= 5 %)


def test_two_steps_and_recovery():
    y = series(30, 3)
    y[10:20] *= 1.15
    cps = changepoints(y)
    assert [c.index for c in cps] == [10, 20]
    assert cps[0].change > 0.1 and cps[1].change < -0.1
    assert segments(30, cps) == [(0, 10), (10, 20), (20, 30)]


def test_improvement_step():
    y = series(24, 4)
    y[12:] *= 0.85
    cps = changepoints(y)
    assert [c.index for c in cps] == [12] and cps[0].direction == "faster"


def test_step_too_recent_is_not_confirmed():
    y = series(24, 5)
    y[22:] *= 1.10          # only two commits after the step
    assert changepoints(y, min_size=3) == []
    y = series(24, 5)
    y[21:] *= 1.10          # three commits: confirmed
    assert [c.index for c in changepoints(y, min_size=3)] == [21]


def test_small_step_below_min_step_is_ignored():
    y = series(24, 6, noise=0.002)
    y[12:] *= 1.02
    assert changepoints(y, min_step=0.05) == []
    assert [c.index for c in changepoints(y, min_step=0.01)] == [12]


def test_short_and_constant_series():
    assert changepoints([1.0, 2.0, 3.0]) == []
    assert changepoints([5.0] * 30) == []
    assert changepoints([]) == []
