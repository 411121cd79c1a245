"""Statistics: the Mann-Whitney U test, geometric means, change points, and
the two-state detector for placements and processes.

Two states (``two_states``), for the samples of ONE benchmark measured at
several placements and in several processes (a value per (process,
placement) cell: the cell's median), in log space:

1. Sort the m >= 4 values. Consider every split into a low and a high group
   that leaves at least max(2, int(0.2 m)) values on each side, and take the
   one with the largest gap between consecutive sorted values.
2. Two states when both hold:
   - the step: median(high) / median(low) >= 1.25 (a 25 % step);
   - the gap is large against the spread within the groups:
     gap >= (3 + 12 / m) * s, s the pooled standard deviation of the log
     values around their group means (m - 2 degrees of freedom). The
     factor grows for few values, whose s is a poor estimate.

Measured on synthetic data (20000 seeds; reports/tests/test_two_states.py checks
them on fewer): unimodal lognormal values are flagged in < 1 % of seeds for
cv 1-10 % and every m >= 4 (0.8 % at m = 4-5 and cv 10 %, 0.4 % at m = 8,
0 at m >= 20; never at cv <= 5 %); two states 1.0x / 2.0x with cv <= 5 %
within each are found in >= 97 % of seeds (m >= 4, the high group 20-50 % of
the values), 1.0x / 1.3x with cv <= 2 % in >= 94 % (cv 3 %: 71-97 %, the
step is then close to the 25 % threshold; cv 5 %: mostly not).

Change-point detection (``changepoints``, ``analyse_series``) is in
changepoint.py (re-exported here).
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps

from .changepoint import _u_null_cdf


def mannwhitney(a, b):
    """Two-sided Mann-Whitney U p-value of samples a and b (1.0 when all equal)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) == 0 or len(b) == 0:
        return float("nan")
    both = np.concatenate([a, b])
    if np.all(both == both[0]):
        return 1.0
    return float(sps.mannwhitneyu(a, b, alternative="two-sided").pvalue)


def u_test_p(a, b):
    """Two-sided Mann-Whitney U p-value, as scipy's method="auto" gives it
    (exact when a sample has <= 8 values and there are no ties, else the normal
    approximation with tie and continuity corrections), without its per-call
    overhead; the change-point search calls it many times."""
    a = np.array([np.nan if v is None else v for v in a], dtype=float)
    b = np.array([np.nan if v is None else v for v in b], dtype=float)
    a, b = a[np.isfinite(a)], b[np.isfinite(b)]      # a failed point (None, NaN, Inf) is no sample
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return float("nan")
    both = np.concatenate([a, b])
    ranks = sps.rankdata(both)
    u1 = float(ranks[:n1].sum()) - n1 * (n1 + 1) / 2.0
    u = max(u1, n1 * n2 - u1)
    _, counts = np.unique(both, return_counts=True)
    ties = bool(np.any(counts > 1))
    if min(n1, n2) <= 8 and not ties:
        cdf = _u_null_cdf(n1, n2)
        k = int(round(n1 * n2 - u))          # P(U >= u) = P(U <= n1*n2 - u) by symmetry
        return float(min(1.0, 2.0 * cdf[k]))
    m = n1 + n2
    tie = float(np.sum(counts ** 3 - counts)) / (m * (m - 1))
    var = n1 * n2 / 12.0 * ((m + 1) - tie)
    if var <= 0:
        return 1.0
    z = (u - n1 * n2 / 2.0 - 0.5) / math.sqrt(var)
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))


TWO_STATE_MIN_VALUES = 4
TWO_STATE_MIN_RATIO = 1.25
TWO_STATE_MIN_GROUP = 0.2     # of the values, and at least 2


@dataclass
class TwoStates:
    low: float            # median of the low group (for times: the fast state)
    high: float           # median of the high group
    n_low: int
    n_high: int
    high_index: tuple     # indices (into the values given) of the high group

    @property
    def ratio(self):
        return self.high / self.low

    def describe(self):
        """'1.00x / 1.96x, 6 + 2 values'."""
        return f"1.00x / {self.ratio:.2f}x, {self.n_low} + {self.n_high} values"


def _widest_split(x):
    """Index k of the admissible split x[:k] | x[k:] with the largest gap (x sorted)."""
    m = len(x)
    g = max(2, int(TWO_STATE_MIN_GROUP * m))
    ks = np.arange(g, m - g + 1)
    return int(ks[int(np.argmax(x[ks] - x[ks - 1]))])


def two_states(values):
    """TwoStates when the values fall into two separated levels (see the module
    docstring for the rule), else None. Values must be positive (times)."""
    v = np.asarray(values, dtype=float)
    if len(v) < TWO_STATE_MIN_VALUES or np.any(v <= 0) or not np.all(np.isfinite(v)):
        return None
    order = np.argsort(v, kind="stable")
    x = np.log(v[order])
    m = len(x)
    k = _widest_split(x)
    low, high = x[:k], x[k:]
    med_low, med_high = float(np.median(v[order[:k]])), float(np.median(v[order[k:]]))
    if med_high < TWO_STATE_MIN_RATIO * med_low:
        return None
    pooled = math.sqrt((np.sum((low - low.mean()) ** 2) + np.sum((high - high.mean()) ** 2)) / (m - 2))
    if x[k] - x[k - 1] < (3.0 + 12.0 / m) * pooled:
        return None
    return TwoStates(low=med_low, high=med_high, n_low=k, n_high=m - k,
                     high_index=tuple(sorted(int(i) for i in order[k:])))


def spread(values):
    """(max - min) / median of the values; None for fewer than two."""
    v = [x for x in values if x is not None]
    if len(v) < 2:
        return None
    med = float(np.median(v))
    return (max(v) - min(v)) / med if med else None


def geomean_ci(values, level=0.95):
    """(geometric mean, low, high): the confidence interval from Student's t on the logarithms
    (low and high None for fewer than two values)."""
    vals = np.array([math.log(v) for v in values if v is not None and v > 0 and math.isfinite(v)])
    if len(vals) == 0:
        return None, None, None
    m = float(vals.mean())
    if len(vals) < 2:
        return math.exp(m), None, None
    half = float(sps.t.ppf(0.5 + level / 2, len(vals) - 1)) * float(vals.std(ddof=1)) / math.sqrt(len(vals))
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def geomean(values):
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return float(math.exp(sum(math.log(v) for v in vals) / len(vals)))


# Change points live in changepoint.py; these names stay importable from here.
from .changepoint import ChangePoint, NoiseChange, analyse_series, changepoints, segments  # noqa: E402,F401
