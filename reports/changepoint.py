"""Change points in a benchmark's history, and changes of its noise.

The input is one value per commit (the per-commit median), oldest first. The
output (``analyse_series``) has three parts:

- ``changes``: steps of the level (a regression, an improvement, a slowdown
  later fixed), each with the medians of the final segments before and after;
- ``noise``: changes of the noise that are not steps of the level: the
  spread grew or shrank at a commit (``variance``), or a segment's values sit
  at two levels at random (``bimodal``); shown apart from regressions;
- ``excluded``: the indices of points that are not numbers (None, NaN, Inf:
  a failed or missing measurement). They are left out of every test and
  marked on the dashboard; indices in ``changes`` and ``noise`` are into the
  series as given (a step's index is the first valid point of the new level).

Steps: binary segmentation with a rank test (Mann-Whitney U, so outliers and
skewed noise do not matter).

1. In a segment of m valid points, every split leaving ``min_size`` points on
   each side is scored by the p-value of the U statistic of left against
   right: the normal approximation (tie-corrected), and the exact lower tail
   when one side has <= 8 points and there are no ties (a short segment whose
   values are all above the rest has p = 2 / C(m, k), far below the normal
   approximation, which caps |z| near 4 and so preferred wide windows).
2. The best split (smallest p; among those within a factor 30 of it, the one
   with the least sum of absolute deviations from the segment medians, so a
   noisy point next to the step goes to the level it is nearest) is kept when
   its p times the number of candidates (Bonferroni) is < alpha/2 times the
   segment's share of the series (the pieces of each level of the recursion
   share alpha by length) and the shift (Hodges-Lehmann: the median of the
   pairwise ratios) is at least ``min_step``.
3. A level that came and went (slowdown then fix) is looked for among all
   pairs of splits, the middle against the rest, with the other alpha/2
   (circular binary segmentation); it is taken instead of the single split
   when its adjusted p is smaller (or no single split passes). The pairs are
   scored a row at a time: O(m) memory, any length (there is no size limit
   beyond which a regression goes unseen).
4. Kept splits recurse into the pieces.
5. Merge: each step is re-measured between its final neighbours; the weakest
   step whose change is below ``min_step`` or whose U test (between its
   neighbouring segments, Bonferroni over the segment's candidates) is no
   longer significant is dropped, and the steps next to it re-measured, until
   every reported step passes both. So no reported step is below min_step.

Noise (on the relative deviations |y / level - 1| from each point's segment
median, so a step of the level is never a noise change):

- ``variance``: the same single-split search on the deviations (U test,
  Bonferroni, alpha ``noise_alpha``), kept when the median deviation changes
  by a factor >= ``noise_ratio``;
- ``bimodal``: in a segment of >= 12 points without a variance change, the
  sorted log values are split at their widest gap between groups of at least
  max(3, 20 %) each; bimodal when, in units of the pooled standard deviation
  within the two groups, the gap is >= 2 and the groups' means are >= 5
  apart (a split of one normal or uniform sample gives about 2.7 and 3.5),
  and the two levels differ by >= ``min_step``.

Scores on labelled series (docs/changepoints.md, reports/cpeval.py): 3 % steps
at cv 2 % are found in >= 90 % of series, with < 1 false alarm per 100 series
of pure noise.
"""

import functools
import math
from dataclasses import dataclass, field

import numpy as np
from scipy import special as spspecial
from scipy import stats as sps

DEFAULT_MIN_SIZE = 3
DEFAULT_MIN_STEP = 0.02
DEFAULT_ALPHA = 0.05
NOISE_ALPHA = 0.005
NOISE_RATIO = 1.8
EXACT_MAX = 8            # exact U tail when one side has at most this many points
EXACT_M = 60             # exact U distribution for segments up to this many points (no ties)
NEAR_LOG = math.log(30.0)    # splits within this factor of the best p are candidates for the L1 choice
NEAR_CAP = 8
BIMODAL_MIN = 12
BIMODAL_GAP = 2.0         # the widest gap, in pooled within-group standard deviations
BIMODAL_SEPARATION = 5.0  # the distance of the two groups' means, likewise


@dataclass
class ChangePoint:
    index: int            # first index of the new level (into the series as given)
    before: float         # median of the segment before
    after: float          # median of the segment after
    change: float         # after / before - 1 (for times: > 0 is a slowdown)
    p_value: float        # Bonferroni-adjusted

    @property
    def direction(self):
        return "slower" if self.change > 0 else "faster"


@dataclass
class NoiseChange:
    kind: str             # "variance" or "bimodal"
    index: int            # variance: first index of the new noise; bimodal: first index of the segment
    end: int              # bimodal: one past the segment's last index; variance: as index
    before: float         # variance: median |relative deviation| before; bimodal: the low level
    after: float          # variance: the same after; bimodal: the high level
    p_value: float = float("nan")

    def describe(self):
        if self.kind == "variance":
            return (f"noise {'grew' if self.after > self.before else 'shrank'}: typical deviation "
                    f"{self.before * 100:.2g}% -> {self.after * 100:.2g}%")
        return f"two levels {self.after / self.before:.3f}x apart (bimodal)"


@dataclass
class Analysis:
    changes: list = field(default_factory=list)
    noise: list = field(default_factory=list)
    excluded: list = field(default_factory=list)


def finite_mask(values):
    """(float array with NaN for None, mask of the finite values)."""
    y = np.array([np.nan if v is None else v for v in values], dtype=float) if len(values) else np.zeros(0)
    return y, np.isfinite(y)


# -- the U test's p-values, vectorised over candidates ----------------------

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
        for r in range(i):                 # divide by (1 - q^i): a running sum with stride i
            num[r::i] = np.cumsum(num[r::i])
        poly = num
    poly = np.maximum(poly, 0.0)
    return np.cumsum(poly) / poly.sum()



@functools.lru_cache(maxsize=256)
def _partition_cumcounts(s, d):
    """Cumulative coefficients up to degree d of prod_{i=1..s} 1/(1-q^i): the number of
    arrangements with U <= u, exact for u <= the other side's size (no cancellation)."""
    poly = np.zeros(d + 1)
    poly[0] = 1.0
    for i in range(1, s + 1):
        for r in range(min(i, d + 1)):
            poly[r::i] = np.cumsum(poly[r::i])
    return np.cumsum(poly)


def _log_p(u1, n1, n2, m, tie, ties):
    """log two-sided p of the U statistic u1 (left's) for arrays n1, n2 (n1 + n2 = m)."""
    n1 = np.asarray(n1, dtype=float)
    n2 = m - n1
    prod = n1 * n2
    dist = np.minimum(u1, prod - u1)               # distance to the nearer extreme
    var = prod / 12.0 * ((m + 1) - tie)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(var > 0, (prod / 2.0 - dist - 0.5) / np.sqrt(np.maximum(var, 1e-300)), 0.0)
    logp = np.minimum(0.0, math.log(2.0) + spspecial.log_ndtr(-np.maximum(z, 0.0)))
    if not ties and m <= EXACT_M:
        for q in range(len(n1)):
            a, b = int(n1[q]), int(n2[q])
            if a >= 1 and b >= 1:
                cdf = _u_null_cdf(a, b)
                logp[q] = math.log(max(min(1.0, 2.0 * cdf[int(round(dist[q]))]), 1e-300))
    elif not ties:
        small = np.minimum(n1, n2)
        big = np.maximum(n1, n2)
        sel = np.flatnonzero((small <= EXACT_MAX) & (dist <= big) & (small >= 1))
        for s in np.unique(small[sel]).astype(int):
            idx = sel[small[sel] == s]
            d = int(np.max(big[idx]))
            cc = _partition_cumcounts(s, d)
            k = np.rint(dist[idx]).astype(int)
            logc = np.array([math.lgamma(m + 1) - math.lgamma(s + 1) - math.lgamma(m - s + 1)])
            logp[idx] = np.minimum(0.0, math.log(2.0) + np.log(cc[k]) - logc)
    return logp


def _tie_term(seg):
    _, counts = np.unique(seg, return_counts=True)
    m = len(seg)
    return float(np.sum(counts.astype(float) ** 3 - counts)) / (m * (m - 1)), bool(np.any(counts > 1))


def _split_logp(seg, min_size):
    """(splits k, log p of seg[:k] against seg[k:]) for every admissible k."""
    m = len(seg)
    ranks = sps.rankdata(seg)
    csum = np.cumsum(ranks)
    k = np.arange(min_size, m - min_size + 1)
    n1 = k.astype(float)
    u1 = csum[k - 1] - n1 * (n1 + 1) / 2.0
    tie, ties = _tie_term(seg)
    return k, _log_p(u1, n1, m - n1, m, tie, ties)


def _pair_best(seg, min_size):
    """Pairs (i, j): seg[i:j] against the rest. Returns (candidates, [(logp, i, j)] near the best),
    scanning a row i at a time (O(m) memory)."""
    m = len(seg)
    ranks = sps.rankdata(seg)
    c = np.concatenate([[0.0], np.cumsum(ranks)])
    tie, ties = _tie_term(seg)
    best = []
    total = 0
    for i in range(min_size, m - 2 * min_size + 1):
        j = np.arange(i + min_size, m - min_size + 1)
        if len(j) == 0:
            continue
        total += len(j)
        n1 = (j - i).astype(float)
        u = c[j] - c[i] - n1 * (n1 + 1) / 2.0
        lp = _log_p(u, n1, m - n1, m, tie, ties)
        t = np.argsort(lp, kind="stable")[:NEAR_CAP]
        best.extend((float(lp[q]), i, int(j[q])) for q in t)
        if len(best) > 4 * NEAR_CAP:
            best.sort()
            best = best[:NEAR_CAP]
    best.sort()
    if not best:
        return 0, []
    top = best[0][0]
    return total, [b for b in best[:NEAR_CAP] if b[0] <= top + NEAR_LOG]


def _l1(a):
    return float(np.sum(np.abs(a - np.median(a)))) if len(a) else 0.0


HL_MAX = 400             # the shift estimate uses at most this many points of each side


def _rel(a, b):
    """Relative shift from a to b: the Hodges-Lehmann estimate, the median of b_j / a_i over all
    pairs (a more precise estimate than the ratio of the medians; sides longer than HL_MAX are
    thinned evenly)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if len(a) > HL_MAX:
        a = a[np.linspace(0, len(a) - 1, HL_MAX).astype(int)]
    if len(b) > HL_MAX:
        b = b[np.linspace(0, len(b) - 1, HL_MAX).astype(int)]
    if np.all(a > 0) and np.all(b > 0):
        return float(np.exp(np.median(np.log(b)[None, :] - np.log(a)[:, None]))) - 1.0
    ma, mb = float(np.median(a)), float(np.median(b))
    return mb / ma - 1.0 if ma else float("inf")


def _steps(y, min_size, min_step, alpha):
    """{index: adjusted p} of the steps of y (all finite)."""
    found = {}

    def segment(lo, hi):
        seg = y[lo:hi]
        m = len(seg)
        if m < 2 * min_size or np.all(seg == seg[0]):
            return
        # alpha shared among the pieces by length (a weighted Bonferroni over each level of
        # the recursion): a short piece left over by a step gets a small share
        a_half = alpha / 2.0 * m / len(y)
        single = pair = None
        ks, lp = _split_logp(seg, min_size)
        ncand = len(ks)
        top = float(lp.min())
        if top + math.log(ncand) < math.log(a_half):
            near = np.flatnonzero(lp <= top + NEAR_LOG)
            near = near[np.argsort(lp[near], kind="stable")[:NEAR_CAP]]
            t = min(near, key=lambda q: _l1(seg[:ks[q]]) + _l1(seg[ks[q]:]))
            k = int(ks[t])
            p = min(1.0, math.exp(float(lp[t])) * ncand)
            if p < a_half and abs(_rel(seg[:k], seg[k:])) >= min_step:
                single = (p, k)
        if m >= 3 * min_size:
            total, near = _pair_best(seg, min_size)
            if near and near[0][0] + math.log(total) < math.log(a_half):
                lp_, i, j = min(near, key=lambda b: _l1(seg[:b[1]]) + _l1(seg[b[1]:b[2]]) + _l1(seg[b[2]:]))
                mid, rest = seg[i:j], np.concatenate([seg[:i], seg[j:]])
                p = min(1.0, math.exp(lp_) * total)
                if p < a_half and abs(_rel(rest, mid)) >= min_step \
                        and abs(_rel(seg[:i], mid)) >= min_step and abs(_rel(mid, seg[j:])) >= min_step:
                    pair = (p, i, j)
        # a level that came and went is taken when it explains the segment better than one step
        if pair and (not single or pair[0] < single[0]):
            p, i, j = pair
            found[lo + i] = p
            found[lo + j] = p
            segment(lo, lo + i)
            segment(lo + i, lo + j)
            segment(lo + j, hi)
        elif single:
            p, k = single
            found[lo + k] = p
            segment(lo, lo + k)
            segment(lo + k, hi)

    segment(0, len(y))
    return found


def _merge(y, found, min_size, min_step, alpha):
    """Drop the weakest step while any is below min_step or no longer significant between its
    final neighbours; returns [(index, p)]."""
    idx = sorted(found)
    while idx:
        bounds = [0] + idx + [len(y)]
        worst, worst_key = None, None
        for n, k in enumerate(idx):
            left, right = y[bounds[n]:k], y[k:bounds[n + 2]]
            both = np.concatenate([left, right])
            ncand = max(1, len(both) - 2 * min_size + 1)
            tie, ties = _tie_term(both)
            ranks = sps.rankdata(both)
            u1 = float(ranks[:len(left)].sum()) - len(left) * (len(left) + 1) / 2.0
            lp = float(_log_p(np.array([u1]), np.array([len(left)]), None, len(both), tie, ties)[0])
            p = min(1.0, math.exp(lp) * ncand)
            rel = abs(_rel(left, right))
            bad = rel < min_step or p >= alpha
            key = (not bad, rel if rel < min_step else -p)
            if bad and (worst_key is None or key < worst_key):
                worst, worst_key = k, key
            found[k] = min(found[k], p) if not bad else found[k]
        if worst is None:
            break
        idx.remove(worst)
    return [(k, found[k]) for k in idx]


def _variance_changes(y, levels, min_size, noise_alpha, noise_ratio):
    """Single split of the relative deviations per level segment (recursing once a split is kept)."""
    dev = np.abs(y / levels - 1.0)
    out = []

    def segment(lo, hi):
        seg = dev[lo:hi]
        m = len(seg)
        size = max(min_size, 5)
        if m < 2 * size or np.all(seg == seg[0]):
            return
        ks, lp = _split_logp(seg, size)
        t = int(np.argmin(lp))
        k = int(ks[t])
        p = min(1.0, math.exp(float(lp[t])) * len(ks))
        a, b = float(np.median(seg[:k])), float(np.median(seg[k:]))
        ratio = (max(a, b) / min(a, b)) if min(a, b) > 0 else float("inf")
        if p < noise_alpha and ratio >= noise_ratio:
            out.append(NoiseChange("variance", lo + k, lo + k, a, b, p))
            segment(lo, lo + k)
            segment(lo + k, hi)

    segment(0, len(y))
    return sorted(out, key=lambda n: n.index)


def _bimodal(seg, min_step):
    """(low, high) levels when the segment's values sit at two levels, else None."""
    v = seg[seg > 0]
    m = len(v)
    if m < BIMODAL_MIN:
        return None
    x = np.sort(np.log(v))
    g = max(3, int(0.2 * m))
    ks = np.arange(g, m - g + 1)
    k = int(ks[int(np.argmax(x[ks] - x[ks - 1]))])
    low, high = x[:k], x[k:]
    pooled = math.sqrt((np.sum((low - low.mean()) ** 2) + np.sum((high - high.mean()) ** 2)) / (m - 2))
    lo_l, hi_l = float(np.exp(np.median(low))), float(np.exp(np.median(high)))
    pooled = max(pooled, 1e-12)
    if hi_l / lo_l - 1.0 < min_step or x[k] - x[k - 1] < BIMODAL_GAP * pooled \
            or high.mean() - low.mean() < BIMODAL_SEPARATION * pooled:
        return None
    return lo_l, hi_l


def analyse_series(values, min_size=DEFAULT_MIN_SIZE, min_step=DEFAULT_MIN_STEP, alpha=DEFAULT_ALPHA,
                   noise=True, noise_alpha=NOISE_ALPHA, noise_ratio=NOISE_RATIO):
    """Steps, noise changes and excluded points of a series (see the module docstring)."""
    if min_size < 1:
        raise ValueError("min_size must be >= 1")
    yall, ok = finite_mask(list(values))
    keep = np.flatnonzero(ok)
    excluded = [int(i) for i in np.flatnonzero(~ok)]
    y = yall[keep]
    res = Analysis(excluded=excluded)
    if len(y) < 2:
        return res
    steps = _merge(y, _steps(y, min_size, min_step, alpha), min_size, min_step, alpha)
    bounds = [0] + [k for k, _ in steps] + [len(y)]
    for n, (k, p) in enumerate(steps):
        before = float(np.median(y[bounds[n]:k]))
        after = float(np.median(y[k:bounds[n + 2]]))
        res.changes.append(ChangePoint(int(keep[k]), before, after, _rel(y[bounds[n]:k], y[k:bounds[n + 2]]), p))
    if noise and len(y) >= 2 * max(min_size, 5):
        levels = np.empty_like(y)
        for a, b in zip(bounds[:-1], bounds[1:]):
            levels[a:b] = np.median(y[a:b])
        if np.all(levels > 0):
            var = _variance_changes(y, levels, min_size, noise_alpha, noise_ratio)
            for nc in var:
                nc.index = nc.end = int(keep[nc.index])
            res.noise.extend(var)
            if not var:
                for a, b in zip(bounds[:-1], bounds[1:]):
                    two = _bimodal(y[a:b], min_step)
                    if two:
                        res.noise.append(NoiseChange("bimodal", int(keep[a]), int(keep[b - 1]) + 1, two[0], two[1]))
    return res


def changepoints(values, min_size=DEFAULT_MIN_SIZE, min_step=DEFAULT_MIN_STEP, alpha=DEFAULT_ALPHA):
    """The steps of ``values`` (indices into the series as given; non-numbers are left out)."""
    return analyse_series(values, min_size=min_size, min_step=min_step, alpha=alpha, noise=False).changes


def segments(n, cps):
    """[(start, end)] of the levels between change points."""
    bounds = [0] + [c.index for c in cps] + [n]
    return list(zip(bounds[:-1], bounds[1:]))
