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

Change-point detection (``changepoints``) works on a series of per-commit
medians, oldest first, and is binary segmentation with a rank test:

1. In a segment, every split leaving at least ``min_size`` points on each side
   is scored by the normal-approximation z of the Mann-Whitney U statistic of
   left against right (ranks computed once, all splits at once).
2. The best split is tested with scipy's two-sided Mann-Whitney U test (exact
   for small samples without ties); its p-value is multiplied by the number of
   candidate splits (Bonferroni).
3. The split is kept only when that adjusted p < alpha/2 *and* the medians of
   the two sides differ by at least ``min_step`` (relative): a real, lasting
   step, not a small drift.
4. When no single split passes, a level that came and went (a slowdown later
   fixed) is looked for the same way among all pairs of splits, the middle
   against the rest (circular binary segmentation), with the other alpha/2
   shared over the pairs. By the union bound a series of pure noise is flagged
   with probability at most ``alpha``.
5. Kept splits recurse into the pieces, finding further steps.

Where the rank statistic cannot tell neighbouring splits apart (a noisy point
next to the step ranks with either side), the split is placed, among those
whose |z| is within Z_SLACK of the best, where the sum of absolute deviations
from the segment medians is least: the point goes to the level it is nearest.

A single outlier cannot pass: it moves one rank, not the distribution of a
whole segment, and it leaves the segment medians where they were. A step in
the last ``min_size - 1`` commits is not flagged until more commits confirm
it.
"""

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sps


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


@functools.lru_cache(maxsize=512)
def _u_null_cdf(n1, n2):
    """CDF of U under the null without ties: coefficients of the Gaussian
    binomial [n1+n2 choose n1]_q, normalised (float64 is ample for p-values)."""
    n1, n2 = min(n1, n2), max(n1, n2)
    poly = np.zeros(n1 * n2 + 1)
    poly[0] = 1.0
    # prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i), divisions done as running sums
    for i in range(1, n1 + 1):
        num = poly.copy()
        num[n2 + i:] -= poly[:len(poly) - (n2 + i)]
        for k in range(i, len(num)):       # divide by (1 - q^i)
            num[k] += num[k - i]
        poly = num
    poly = np.maximum(poly, 0.0)
    return np.cumsum(poly) / poly.sum()


def u_test_p(a, b):
    """Two-sided Mann-Whitney U p-value, as scipy's method="auto" gives it
    (exact when a sample has <= 8 values and there are no ties, else the normal
    approximation with tie and continuity corrections), without its per-call
    overhead; the change-point search calls it many times."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
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


def geomean(values):
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return float(math.exp(sum(math.log(v) for v in vals) / len(vals)))


@dataclass
class ChangePoint:
    index: int            # first index of the new level
    before: float         # median of the segment before
    after: float          # median of the segment after
    change: float         # after / before - 1 (for times: > 0 is a slowdown)
    p_value: float        # Bonferroni-adjusted

    @property
    def direction(self):
        return "slower" if self.change > 0 else "faster"


def _split_scores(seg, min_size):
    """|z| of the U statistic for every split k (left = seg[:k])."""
    m = len(seg)
    ranks = sps.rankdata(seg)
    csum = np.cumsum(ranks)
    k = np.arange(min_size, m - min_size + 1)
    n1 = k.astype(float)
    n2 = m - n1
    u1 = csum[k - 1] - n1 * (n1 + 1) / 2.0
    _, counts = np.unique(seg, return_counts=True)
    tie = float(np.sum(counts ** 3 - counts)) / (m * (m - 1))
    var = n1 * n2 / 12.0 * ((m + 1) - tie)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, (u1 - n1 * n2 / 2.0) / np.sqrt(np.maximum(var, 1e-300)), 0.0)
    return k, np.abs(z)


def _pair_scores(seg, min_size):
    """|z| of the U statistic of seg[i:j] against the rest, for every (i, j)."""
    m = len(seg)
    ranks = sps.rankdata(seg)
    c = np.concatenate([[0.0], np.cumsum(ranks)])
    i, j = np.meshgrid(np.arange(m + 1), np.arange(m + 1), indexing="ij")
    ok = (i >= min_size) & (j - i >= min_size) & (m - j >= min_size)
    i, j = i[ok], j[ok]
    if len(i) == 0:
        return i, j, np.zeros(0)
    n1 = (j - i).astype(float)
    n2 = m - n1
    u = c[j] - c[i] - n1 * (n1 + 1) / 2.0
    _, counts = np.unique(seg, return_counts=True)
    tie = float(np.sum(counts ** 3 - counts)) / (m * (m - 1))
    var = n1 * n2 / 12.0 * ((m + 1) - tie)
    z = np.where(var > 0, (u - n1 * n2 / 2.0) / np.sqrt(np.maximum(var, 1e-300)), 0.0)
    return i, j, np.abs(z)


Z_SLACK = 1.0
PAIR_LIMIT = 1500    # the pair search is O(m^2) in memory: skipped on longer segments


def _near(z, cap=8):
    """Indices of the candidates whose |z| is within Z_SLACK of the best (at most cap)."""
    near = np.flatnonzero(z >= z.max() - Z_SLACK)
    if len(near) > cap:
        near = near[np.argsort(-z[near], kind="stable")[:cap]]
    return near


def _l1(a):
    """Sum of absolute deviations from the median (robust segment cost)."""
    return float(np.sum(np.abs(a - np.median(a)))) if len(a) else 0.0


def _rel(a, b):
    ma, mb = float(np.median(a)), float(np.median(b))
    return mb / ma - 1.0 if ma else float("inf")


def changepoints(values, min_size=3, min_step=0.05, alpha=0.05):
    """Indices where the level of ``values`` steps; see the module docstring."""
    y = np.asarray(values, dtype=float)
    if min_size < 1:
        raise ValueError("min_size must be >= 1")
    found = {}
    a_half = alpha / 2.0     # one half for single splits, one for pairs (union bound)

    def segment(lo, hi):
        seg = y[lo:hi]
        m = len(seg)
        if m < 2 * min_size or np.all(seg == seg[0]):
            return
        # 1. one step: left against right
        ks, z = _split_scores(seg, min_size)
        kb = int(ks[int(np.argmax(z))])
        if u_test_p(seg[:kb], seg[kb:]) * len(ks) < a_half:
            near = _near(z)
            k = int(ks[min(near, key=lambda t: _l1(seg[:ks[t]]) + _l1(seg[ks[t]:]))])
            p = min(1.0, u_test_p(seg[:k], seg[k:]) * len(ks))
            if p < a_half and abs(_rel(seg[:k], seg[k:])) >= min_step:
                found[lo + k] = p
                segment(lo, lo + k)
                segment(lo + k, hi)
                return
        # 2. a level that came and went (circular binary segmentation):
        #    seg[i:j] against the rest, which one split cannot see
        if m < 3 * min_size or m > PAIR_LIMIT:
            return
        iis, jjs, z = _pair_scores(seg, min_size)
        if len(z) == 0:
            return
        b = int(np.argmax(z))
        i, j = int(iis[b]), int(jjs[b])
        if u_test_p(np.concatenate([seg[:i], seg[j:]]), seg[i:j]) * len(z) >= a_half:
            return
        near = _near(z)
        b = min(near, key=lambda t: _l1(seg[:iis[t]]) + _l1(seg[iis[t]:jjs[t]]) + _l1(seg[jjs[t]:]))
        i, j = int(iis[b]), int(jjs[b])
        mid, rest = seg[i:j], np.concatenate([seg[:i], seg[j:]])
        p = min(1.0, u_test_p(rest, mid) * len(z))
        if p < a_half and abs(_rel(rest, mid)) >= min_step \
                and abs(_rel(seg[:i], mid)) >= min_step and abs(_rel(mid, seg[j:])) >= min_step:
            found[lo + i] = p
            found[lo + j] = p
            segment(lo, lo + i)
            segment(lo + i, lo + j)
            segment(lo + j, hi)

    segment(0, len(y))
    idx = sorted(found)
    # Measure each step between its neighbouring change points, so that
    # before/after are the medians of the final segments.
    bounds = [0] + idx + [len(y)]
    out = []
    for n, k in enumerate(idx):
        left = y[bounds[n]:bounds[n + 1]]
        right = y[bounds[n + 1]:bounds[n + 2]]
        before, after = float(np.median(left)), float(np.median(right))
        out.append(ChangePoint(k, before, after, after / before - 1.0 if before else float("inf"), found[k]))
    return out


def segments(n, cps):
    """[(start, end)] of the levels between change points."""
    bounds = [0] + [c.index for c in cps] + [n]
    return list(zip(bounds[:-1], bounds[1:]))
