"""Scores of the change-point detector on labelled series, beside Apache Otava.

    .venv/bin/python -m reports.cpeval                 # full set, prints the tables
    .venv/bin/python -m reports.cpeval --md docs/changepoints-scores.md
    .venv/bin/python -m reports.cpeval --quick          # a small set (seconds)

Series (a fixed seed, so every run scores the same series):

- ``synthetic``: benchmark-like series (multiplicative lognormal noise of cv
  1, 2, 5, 10 %, 50 to 500 commits): pure noise; a step of 3, 5, 10 or 20 %
  up or down at a random place in the middle half; a regression of 5-30 %
  fixed 10-n/4 commits later; noise with 3 % outliers (1.3-2x); a step with
  outliers; bimodal noise (a second level 5-10 % up on 30 % of the commits);
  the noise growing 3x at one commit. Steps, regressions and fixes are mean
  changes; outliers, bimodal noise and variance changes are not (a mean
  change reported there is a false alarm); the last two are noise changes.
- ``goal``: the issue's goal: 200 series with a 3 % step (up or down) at
  cv 2 %, lengths 50, 100, 200, 500, the step in the middle half; 400
  series of plain noise at cv 1, 2, 5, 10 % (not in the 'all' row).
- ``otava``: the patterns of the ``otava-test-data`` package (PyPI), when it
  is installed: its generators (constant, normal and uniform noise, outlier,
  step, regression and fix, banding, variance change, multiple changes) at
  lengths 50 and 500 with noise sigma 0, 2, 5, 10 around 100, several seeds;
  its 'step', 'regression_start' and 'regression_end' labels are mean
  changes, 'outlier' is not, 'variance' is a noise change. Phase changes are
  left out (periodic series, which benchmarks are not).

Scoring: a detected step matches a true mean change within
max(5, 2 % of n) commits (each truth and each detection at most once).
Recall = matched / true changes, precision = matched / detections, F1; false
alarms per 100 = series without any mean change that got a detection, per
100 such series. Noise changes: the share of variance/bimodal series our
detector flags, and of the pure-noise series it flags (its false alarms).
Apache Otava (``apache-otava``, ``otava.analysis.compute_change_points``
with its defaults: window 50, max p-value 0.001, no minimum magnitude) runs
on the same series when it is installed; it has no separate noise flag.
"""

import argparse
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .changepoint import analyse_series

SEED = 20261126
MEAN = "mean"
NOISE = "noise"


@dataclass
class Case:
    source: str                  # "synthetic" or "otava"
    kind: str                    # noise, step, regfix, outliers, step+outliers, bimodal, variance, ...
    cv: float                    # noise level (relative)
    size: float                  # step size (relative), 0 for none
    y: np.ndarray
    changes: list = field(default_factory=list)      # indices of the true mean changes
    noise_change: bool = False                        # a variance change or bimodality


def _noise(rng, n, cv):
    return np.exp(cv * rng.standard_normal(n) - cv * cv / 2)


def synthetic(rng, reps=3, lengths=(50, 100, 200, 500), cvs=(0.01, 0.02, 0.05, 0.10)):
    out = []
    for n in lengths:
        for cv in cvs:
            for _ in range(reps):
                base = rng.uniform(50, 5e6)
                out.append(Case("synthetic", "noise", cv, 0.0, base * _noise(rng, n, cv)))
                for size in (0.03, 0.05, 0.10, 0.20):
                    for sign in (1, -1):
                        k = int(rng.integers(n // 4, 3 * n // 4))
                        y = base * _noise(rng, n, cv)
                        y[k:] *= 1 + sign * size
                        out.append(Case("synthetic", "step", cv, size, y, [k]))
                size = float(rng.uniform(0.05, 0.30))
                length = int(rng.integers(10, max(11, n // 4)))
                k = int(rng.integers(n // 4, n - length - 5))
                y = base * _noise(rng, n, cv)
                y[k:k + length] *= 1 + size
                out.append(Case("synthetic", "regfix", cv, size, y, [k, k + length]))
                y = base * _noise(rng, n, cv)
                bad = rng.random(n) < 0.03
                y[bad] *= rng.uniform(1.3, 2.0, int(bad.sum()))
                out.append(Case("synthetic", "outliers", cv, 0.0, y))
                k = int(rng.integers(n // 4, 3 * n // 4))
                size = float(rng.choice([0.05, 0.10]))
                y = base * _noise(rng, n, cv)
                y[k:] *= 1 + size
                bad = rng.random(n) < 0.03
                y[bad] *= rng.uniform(1.3, 2.0, int(bad.sum()))
                out.append(Case("synthetic", "step+outliers", cv, size, y, [k]))
                gap = float(rng.uniform(0.05, 0.10))
                y = base * _noise(rng, n, min(cv, gap / 8)) * np.where(rng.random(n) < 0.3, 1 + gap, 1.0)
                out.append(Case("synthetic", "bimodal", min(cv, gap / 8), 0.0, y, noise_change=True))
                k = int(rng.integers(n // 4, 3 * n // 4))
                y = base * np.concatenate([_noise(rng, k, cv), _noise(rng, n - k, 3 * cv)])
                out.append(Case("synthetic", "variance", cv, 0.0, y, noise_change=True))
    return out


def goal(rng, steps=200, quiet=400, lengths=(50, 100, 200, 500), cvs=(0.01, 0.02, 0.05, 0.10)):
    """The issue's goal: 3 % steps at cv 2 % (lengths 50-500, the step in the middle half), and
    series of plain noise at cv 1-10 % for the false alarms."""
    out = []
    for s in range(steps):
        n = lengths[s % len(lengths)]
        k = int(rng.integers(n // 4, 3 * n // 4))
        y = 100 * _noise(rng, n, 0.02)
        y[k:] *= 1.03 if s % 2 else 0.97
        out.append(Case("goal", "3% step, cv 2%", 0.02, 0.03, y, [k]))
    for s in range(quiet):
        n = lengths[s % len(lengths)]
        cv = cvs[(s // len(lengths)) % len(cvs)]
        out.append(Case("goal", "no change, cv 1-10%", cv, 0.0, 100 * _noise(rng, n, cv)))
    return out


def otava_patterns(seeds=(1, 2, 3), lengths=(50, 500), sigmas=(0.0, 2.0, 5.0, 10.0)):
    """The otava-test-data generators' series with their labels; [] when the package is missing."""
    try:
        from otava_test_data.generators import advanced, basic
        from otava_test_data.generators.combiner import add_noise
    except ImportError:
        return []
    gens = [("constant", basic.constant), ("noise_normal", basic.noise_normal),
            ("noise_uniform", basic.noise_uniform), ("outlier", basic.outlier),
            ("step", basic.step_function), ("regfix", basic.regression_fix), ("banding", advanced.banding),
            ("variance", advanced.variance_change), ("multiple", advanced.multiple_changes)]
    out = []
    for seed in seeds:
        for n in lengths:
            for name, gen in gens:
                ts = gen(length=n, seed=seed)
                for sigma in sigmas:
                    if name in ("noise_normal", "noise_uniform", "variance") and sigma:
                        continue            # their own noise
                    t = add_noise(ts, sigma=sigma, seed=seed * 1000 + int(sigma)) if sigma else ts
                    y = np.asarray(t.data, dtype=float)
                    mean_cps = sorted(c.index for c in t.change_points
                                      if c.change_type in ("step", "regression_start", "regression_end"))
                    noisy = name == "banding" or any(c.change_type == "variance" for c in t.change_points)
                    sizes = [abs(c.after_value / c.before_value - 1) for c in t.change_points
                             if c.change_type == "step" and c.before_value]
                    cv = sigma / 100.0 if name not in ("noise_normal", "noise_uniform", "variance") else 0.05
                    out.append(Case("otava", name, cv, min(sizes) if sizes else 0.0, y, mean_cps, noisy))
    return out


def ours(y):
    a = analyse_series(y)
    return [c.index for c in a.changes], bool(a.noise)


def otava_detector():
    try:
        from otava.analysis import compute_change_points
    except ImportError:
        return None

    def run(y):
        cps, _ = compute_change_points(list(map(float, y)), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
        return [c.index for c in cps], None
    return run


def match(truth, found, n):
    tol = max(5, int(0.02 * n))
    used = set()
    tp = 0
    for t in truth:
        best = None
        for i, f in enumerate(found):
            if i not in used and abs(f - t) <= tol and (best is None or abs(f - t) < abs(found[best] - t)):
                best = i
        if best is not None:
            used.add(best)
            tp += 1
    return tp, len(found) - tp


@dataclass
class Score:
    series: int = 0
    truths: int = 0
    found: int = 0
    tp: int = 0
    quiet_series: int = 0       # series without a mean change
    alarms: int = 0             # of those, with a detection
    noise_series: int = 0
    noise_flagged: int = 0
    pure_series: int = 0        # pure noise: no mean and no noise change
    pure_noise_flagged: int = 0
    seconds: float = 0.0

    def add(self, case, found, noise_flag):
        self.series += 1
        self.truths += len(case.changes)
        self.found += len(found)
        tp, _ = match(case.changes, found, len(case.y))
        self.tp += tp
        if not case.changes:
            self.quiet_series += 1
            self.alarms += bool(found)
        if noise_flag is not None:
            if case.noise_change:
                self.noise_series += 1
                self.noise_flagged += noise_flag
            elif not case.changes and case.kind in ("noise", "constant", "noise_normal", "noise_uniform",
                                                    "outliers", "outlier"):
                self.pure_series += 1
                self.pure_noise_flagged += noise_flag

    @property
    def recall(self):
        return self.tp / self.truths if self.truths else float("nan")

    @property
    def precision(self):
        return self.tp / self.found if self.found else float("nan")

    @property
    def f1(self):
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def fa100(self):
        return 100.0 * self.alarms / self.quiet_series if self.quiet_series else float("nan")


def evaluate(cases, detectors, progress=None):
    """{(detector, group): Score} for the groups 'all', source, (source, kind), goal cells."""
    scores = {}
    for i, case in enumerate(cases):
        groups = ([] if case.source == "goal" else ["all", case.source]) + [f"{case.source}/{case.kind}"]
        if case.source == "goal":
            groups.append(f"goal/{case.kind}, n = {len(case.y)}")
        if case.source == "synthetic" and case.kind in ("step", "noise"):
            groups.append(f"step {case.size * 100:g}% cv {case.cv * 100:g}%" if case.kind == "step"
                          else f"noise cv {case.cv * 100:g}%")
        for name, det in detectors.items():
            t0 = time.perf_counter()
            found, nflag = det(case.y)
            dt = time.perf_counter() - t0
            for g in groups:
                s = scores.setdefault((name, g), Score())
                s.add(case, found, nflag)
                s.seconds += dt
        if progress and i % 200 == 0:
            progress(i, len(cases))
    return scores


def _pct(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f} %"


def tables(scores, detectors):
    groups = []
    for (_, g) in scores:
        if g not in groups:
            groups.append(g)
    order = ["goal/3% step, cv 2%", "goal/no change, cv 1-10%", "all", "synthetic", "otava"]
    def key(g):     # the goal's rows by length, then the rest by name
        if g.startswith("goal/") and ", n = " in g:
            head, n = g.rsplit(", n = ", 1)
            return (0, head, int(n))
        return (1, g, 0)
    groups = [g for g in order if g in groups] + sorted((g for g in groups if g not in order), key=key)
    names = list(detectors)
    lines = ["| series | n | " + " | ".join(f"{d} recall | {d} precision | {d} F1 | {d} false alarms /100"
                                              for d in names) + " | ours noise flag |",
             "| --- | ---: | " + " | ".join("---: | ---: | ---: | ---:" for _ in names) + " | ---: |"]
    for g in groups:
        row = [g, str(scores[(names[0], g)].series)]
        for d in names:
            s = scores[(d, g)]
            fa = f"{s.fa100:.1f}" if s.quiet_series else "-"
            row += [_pct(s.recall) if s.truths else "-", _pct(s.precision) if s.found else "-",
                    _pct(s.f1) if s.truths else "-", fa]
        s = scores[("ours", g)]
        row.append(f"{s.noise_flagged} of {s.noise_series}" if s.noise_series else
                   f"{s.pure_noise_flagged} of {s.pure_series}" if s.pure_series else "-")
        lines.append("| " + " | ".join(row) + " |")
    s = scores[("ours", "all")]
    noise = [f"Noise flag (ours): {s.noise_flagged} of {s.noise_series} variance-change and bimodal series "
             f"flagged ({_pct(s.noise_flagged / s.noise_series if s.noise_series else float('nan'))}); "
             f"{s.pure_noise_flagged} of {s.pure_series} series of plain noise or outliers "
             f"({_pct(s.pure_noise_flagged / s.pure_series if s.pure_series else float('nan'))})."]
    for src in ("synthetic", "otava"):
        if ("ours", src) in scores:
            t = scores[("ours", src)]
            noise.append(f"  {src}: {t.noise_flagged} of {t.noise_series} noise changes flagged, "
                         f"{t.pure_noise_flagged} of {t.pure_series} plain series.")
    timing = "Time per series: " + ", ".join(
        f"{d} {1000 * scores[(d, 'all')].seconds / max(1, scores[(d, 'all')].series):.1f} ms" for d in names)
    return "\n".join(lines), "\n".join(noise), timing


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m reports.cpeval", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="one series per cell, synthetic only")
    ap.add_argument("--reps", type=int, default=3, help="synthetic series per cell (default 3)")
    ap.add_argument("--no-otava", action="store_true", help="score only our detector")
    ap.add_argument("--md", help="also write the tables as markdown to this file")
    ap.add_argument("--seed", type=int, default=SEED)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(a.seed)
    cases = synthetic(rng, reps=1 if a.quick else a.reps)
    if not a.quick:
        cases += goal(rng) + otava_patterns()
    detectors = {"ours": ours}
    ot = None if a.no_otava else otava_detector()
    if ot:
        detectors["otava"] = ot
    elif not a.no_otava:
        print("apache-otava is not installed: scoring our detector only", file=sys.stderr)
    t0 = time.time()
    scores = evaluate(cases, detectors,
                      progress=lambda i, n: print(f"  {i}/{n} series ({time.time() - t0:.0f} s)", file=sys.stderr))
    tab, noise, timing = tables(scores, detectors)
    text = f"{len(cases)} series (seed {a.seed}).\n\n{tab}\n\n{noise}\n\n{timing}\n"
    print(text)
    if a.md:
        with open(a.md, "w", encoding="utf-8") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
