"""Statistics: the Mann-Whitney U test, geometric means, change points.

Change-point detection (``changepoints``) works on a series of per-commit
medians, oldest first, and is binary segmentation with a rank test:

1. In a segment, every split leaving at least ``min_size`` points on each side
   is scored by the normal-approximation z of the Mann-Whitney U statistic of
   left against right (ranks computed once, all splits at once).
2. The best split is tested with scipy's two-sided Mann-Whitney U test (exact
   for small samples without ties); its p-value is multiplied by the number of
   candidate splits (Bonferroni), so a series of pure noise is flagged with
   probability at most ``alpha``.
3. The split is kept only when that adjusted p < alpha *and* the medians of
   the two sides differ by at least ``min_step`` (relative): a real, lasting
   step, not a small drift.
4. Kept splits recurse into both sides, finding several steps.

A single outlier cannot pass: it moves one rank, not the distribution of a
whole segment, and it leaves the segment medians where they were. A step in
the last ``min_size - 1`` commits is not flagged until more commits confirm
it.
"""

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


def changepoints(values, min_size=3, min_step=0.05, alpha=0.05):
    """Indices where the level of ``values`` steps; see the module docstring."""
    y = np.asarray(values, dtype=float)
    if min_size < 1:
        raise ValueError("min_size must be >= 1")
    found = []

    def segment(lo, hi):
        seg = y[lo:hi]
        m = len(seg)
        if m < 2 * min_size or np.all(seg == seg[0]):
            return
        ks, z = _split_scores(seg, min_size)
        # Best split by |z|; among (near) ties, the larger step in medians.
        order = np.argsort(-z, kind="stable")
        best = None
        top = z[order[0]]
        for idx in order:
            if z[idx] < top - 1e-9:
                break
            k = int(ks[idx])
            step = abs(np.median(seg[k:]) / np.median(seg[:k]) - 1.0) if np.median(seg[:k]) else 0.0
            if best is None or step > best[1]:
                best = (k, step)
        k = best[0]
        left, right = seg[:k], seg[k:]
        p = mannwhitney(left, right) * len(ks)
        before, after = float(np.median(left)), float(np.median(right))
        change = after / before - 1.0 if before != 0 else float("inf")
        if p < alpha and abs(change) >= min_step:
            found.append(ChangePoint(lo + k, before, after, change, min(1.0, p)))
            segment(lo, lo + k)
            segment(lo + k, hi)

    segment(0, len(y))
    found.sort(key=lambda c: c.index)
    # Re-measure each step between its neighbouring change points, so that
    # before/after are the medians of the final segments.
    bounds = [0] + [c.index for c in found] + [len(y)]
    out = []
    for i, c in enumerate(found):
        left = y[bounds[i]:bounds[i + 1]]
        right = y[bounds[i + 1]:bounds[i + 2]]
        before, after = float(np.median(left)), float(np.median(right))
        out.append(ChangePoint(c.index, before, after,
                               after / before - 1.0 if before else float("inf"), c.p_value))
    return out


def segments(n, cps):
    """[(start, end)] of the levels between change points."""
    bounds = [0] + [c.index for c in cps] + [n]
    return list(zip(bounds[:-1], bounds[1:]))
