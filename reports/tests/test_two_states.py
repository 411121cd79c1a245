"""The two-state detector (stats.two_states) and the spread, on synthetic data:
its false-alarm rate on unimodal values and its detection of 2.0x and 1.3x steps."""

import numpy as np
import pytest

from reports.stats import spread, two_states

SEEDS = 1500


def unimodal(seed, m, cv):
    return np.exp(cv * np.random.default_rng(seed).standard_normal(m))


def stepped(seed, m, cv, ratio, n_high):
    v = unimodal(seed, m, cv)
    v[:n_high] *= ratio
    return v


def rate(values_of_seed):
    return sum(two_states(values_of_seed(s)) is not None for s in range(SEEDS)) / SEEDS


@pytest.mark.parametrize("m", [4, 8, 20])
@pytest.mark.parametrize("cv", [0.01, 0.03, 0.05, 0.10])
def test_unimodal_values_are_rarely_flagged(m, cv):
    """< 1 % false alarms (module docstring: 0.8 % at m = 4, cv 10 %; 0 at cv <= 5 %)."""
    fa = rate(lambda s: unimodal(s, m, cv))
    assert fa < 0.01, (m, cv, fa)
    if cv <= 0.05:
        assert fa == 0.0


@pytest.mark.parametrize("m", [4, 8, 20])
@pytest.mark.parametrize("cv", [0.01, 0.03, 0.05])
def test_a_twofold_step_is_found(m, cv):
    for n_high in {max(2, int(0.2 * m)), m // 2}:
        found = rate(lambda s: stepped(s, m, cv, 2.0, n_high))
        assert found >= 0.97, (m, cv, n_high, found)


@pytest.mark.parametrize("m", [4, 8, 20])
@pytest.mark.parametrize("cv", [0.01, 0.02])
def test_a_thirty_percent_step_is_found(m, cv):
    for n_high in {max(2, int(0.2 * m)), m // 2}:
        found = rate(lambda s: stepped(s, m, cv, 1.3, n_high))
        assert found >= 0.94, (m, cv, n_high, found)


def test_what_it_reports():
    values = [1.00, 1.01, 0.99, 1.02, 1.96, 1.98, 1.00, 0.98]
    t = two_states(values)
    assert (t.n_low, t.n_high, t.high_index) == (6, 2, (4, 5))
    assert t.low == pytest.approx(1.0) and t.high == pytest.approx(1.97)
    assert t.describe() == "1.00x / 1.97x, 6 + 2 values"


@pytest.mark.parametrize("values", [
    [1.0, 2.0, 1.0],                          # fewer than 4 values
    [1.0, 1.0, 1.0, 1.0, 1.0],                # all equal
    [1.0, 1.01, 1.0, 0.99, 1.0, 1.9],         # one outlier is not a state (groups need >= 2)
    [1.0, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3],   # an even ramp: no gap
    [1.0, 1.02, 1.2, 1.22],                   # a 20 % step: below the 25 % threshold
    [1.0, -1.0, 2.0, 2.0],                    # not times
])
def test_not_two_states(values):
    assert two_states(values) is None


def test_two_constant_levels_are_two_states():
    assert two_states([5.0, 5.0, 9.0, 9.0]).ratio == pytest.approx(1.8)


def test_spread():
    assert spread([100.0, 110.0, 90.0]) == pytest.approx(0.2)
    assert spread([5.0]) is None and spread([]) is None
