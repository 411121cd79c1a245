"""``report compare BASE.json NEW.json``: what changed between two runs.

Per benchmark (matched by run name): the change of the median time, the
Mann-Whitney U test over the repetitions (when both sides have >= 2), and a
verdict. A regression needs both: p < alpha and a slowdown beyond the
threshold. Files holding only aggregates get "no test (aggregates only)":
their change is shown, and it counts as a regression only with
``--fail-untested``.

Placements (``/place:k``) and processes (``actgrad_process``) are samples of
one benchmark: the medians and the U test take every iteration row of every
placement and process. When exactly one side has two states
(``stats.two_states``), the benchmark is "not comparable": its change says
which state each side happened to land in more often, not what the code did;
it never counts as a regression. When both sides have two states the medians
are compared as usual, with a note.
"""

import json
import math
import re
from dataclasses import asdict, dataclass

from . import atomic, gbench
from .errors import InputError
from .stability import two_state_of
from .stats import geomean, geomean_ci, mannwhitney
from .thresholds import Thresholds

MIN_REPETITIONS = 2
RELIABLE_REPETITIONS = 9     # fewer on either side: "not enough data" instead of a verdict

REGRESSION = "REGRESSION"
IMPROVEMENT = "improvement"
SAME = "no change"
SLOWER_NS = "slower, not significant"
FASTER_NS = "faster, not significant"
SLOWER_UNTESTED = "slower (untested)"
FASTER_UNTESTED = "faster (untested)"
SMALL = "within threshold"
NOT_COMPARABLE = "not comparable"
NOT_ENOUGH = "not enough data"


@dataclass
class Row:
    name: str
    kind: str
    base: float            # ns (median of repetitions, or the median/mean aggregate)
    new: float
    ratio: float           # new / base
    change: float          # ratio - 1
    p_value: float         # None when untested
    test: str
    n_base: int
    n_new: int
    verdict: str
    note: str = ""         # two states: why not comparable, or that both sides have them
    threshold: float = None    # this benchmark's threshold and alpha (--config rule or the options)
    alpha: float = None


def min_p_value(n1, n2):
    """Smallest two-sided p the exact U test can give for sizes n1, n2."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def parse_threshold(text, flag="--threshold"):
    """'5%', '5' -> 0.05; '0.5%' -> 0.005."""
    t = str(text).strip()
    if t.endswith("%"):
        t = t[:-1].strip()
    try:
        v = float(t)
    except ValueError:
        raise InputError(flag, f"{text!r} is not a percentage (e.g. 5%)")
    if not (0 <= v < 1000) or math.isnan(v):
        raise InputError(flag, f"{text!r} is out of range")
    return v / 100.0


def _center(b, metric):
    return b.center(metric)


def compare_runs(base, new, threshold=0.05, alpha=0.05, metric="real_time",
                 name_filter=None, fail_untested=False, thresholds=None, min_repetitions=RELIABLE_REPETITIONS):
    """Rows and summary. ``thresholds`` (thresholds.Thresholds) gives each benchmark its threshold and
    alpha; without it every benchmark takes ``threshold`` and ``alpha``. Below ``min_repetitions``
    samples on either side a benchmark gets "not enough data" instead of a verdict."""
    rx = re.compile(name_filter) if name_filter else None
    rules = thresholds or Thresholds(threshold, alpha)
    rows = []
    for name, bb in base.benches.items():
        if rx and not rx.search(name):
            continue
        nb = new.benches.get(name)
        if nb is None:
            continue
        b0, b1 = _center(bb, metric), _center(nb, metric)
        if b0 is None or b1 is None:
            continue
        rule = rules.for_name(name)
        threshold, alpha = rule.threshold, rule.alpha
        ratio = b1 / b0 if b0 > 0 else float("inf")
        change = ratio - 1.0
        s0, s1 = bb.values(metric), nb.values(metric)
        testable = len(s0) >= MIN_REPETITIONS and len(s1) >= MIN_REPETITIONS
        if testable and min_p_value(len(s0), len(s1)) >= alpha:
            testable = False       # even complete separation could not reach alpha
        if testable and min(len(s0), len(s1)) < min_repetitions:
            p = mannwhitney(s0, s1)
            test = f"U test, not enough data ({len(s0)}v{len(s1)} < {min_repetitions})"
            verdict = REGRESSION if fail_untested and change > threshold else NOT_ENOUGH
        elif testable:
            p = mannwhitney(s0, s1)
            test = "U test"
            significant = p < alpha
            if change > threshold and significant:
                verdict = REGRESSION
            elif change < -threshold and significant:
                verdict = IMPROVEMENT
            elif significant:
                verdict = SMALL
            elif change > threshold:
                verdict = SLOWER_NS
            elif change < -threshold:
                verdict = FASTER_NS
            else:
                verdict = SAME
        else:
            p = None
            if not s0 or not s1:
                test = "no test (aggregates only)"
            elif min(len(s0), len(s1)) < MIN_REPETITIONS:
                test = "no test (1 sample)"
            else:
                test = f"no test (too few repetitions, {len(s0)}v{len(s1)})"
            if change > threshold:
                verdict = REGRESSION if fail_untested else SLOWER_UNTESTED
            elif change < -threshold:
                verdict = FASTER_UNTESTED
            else:
                verdict = SAME
        verdict, note = _two_state_verdict(bb, nb, metric, verdict)
        rows.append(Row(name=name, kind=bb.parsed.kind, base=b0, new=b1, ratio=ratio, change=change,
                        p_value=p, test=test, n_base=bb.sample_count(metric), n_new=nb.sample_count(metric),
                        verdict=verdict, note=note, threshold=threshold, alpha=alpha))
    only_base = [n for n in base.benches if n not in new.benches and (not rx or rx.search(n))]
    only_new = [n for n in new.benches if n not in base.benches and (not rx or rx.search(n))]
    if not rows:
        raise InputError(new.path, f"no benchmark in common with {base.path}"
                         + (f" matching --filter {name_filter!r}" if rx else "")
                         + f" ({len(base.benches)} vs {len(new.benches)} benchmarks)")
    by_kind = {}
    comparable = [r for r in rows if r.verdict != NOT_COMPARABLE]    # two states: their ratio is luck
    for r in comparable:
        by_kind.setdefault(r.kind, []).append(r.ratio)
    g, lo, hi = geomean_ci([r.ratio for r in comparable])
    summary = {
        "all": geomean([r.ratio for r in comparable]),
        "ci95": [lo, hi] if lo is not None else None,
        "by_kind": {k: geomean(v) for k, v in sorted(by_kind.items())},
        "count": len(comparable),
        "regressions": [r.name for r in rows if r.verdict == REGRESSION],
        "improvements": [r.name for r in rows if r.verdict == IMPROVEMENT],
        "untested_slower": [r.name for r in rows if r.verdict == SLOWER_UNTESTED],
        "not_enough_data": [r.name for r in rows if r.verdict == NOT_ENOUGH],
        "not_comparable": [r.name for r in rows if r.verdict == NOT_COMPARABLE],
        "only_in_base": only_base,
        "only_in_new": only_new,
    }
    return rows, summary


def _two_state_verdict(base, new, metric, verdict):
    """(verdict, note): "not comparable" when exactly one side has two states."""
    t0, _ = two_state_of(base, metric)
    t1, _ = two_state_of(new, metric)
    if t0 and t1:
        return verdict, f"both sides have two states (base {t0.describe()}, new {t1.describe()}); medians compared"
    if t0 or t1:
        side, t = ("base", t0) if t0 else ("new", t1)
        return NOT_COMPARABLE, f"{side} has two states ({t.describe()})"
    return verdict, ""


def fmt_time(ns):
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.4g} {unit}"
    return f"{ns:.4g} ns"


def fmt_pct(x):
    return f"{x * 100:+.1f}%"


def format_table(rows, summary, base_path, new_path, threshold, alpha, metric, config=None):
    out = [f"base: {base_path}", f"new:  {new_path}",
           f"metric: {metric}, threshold {threshold * 100:g}%, alpha {alpha:g} "
           f"(regression = U test p < alpha and slower by more than the threshold"
           + ("; per-benchmark rules from " + str(config) if config else "") + ")", ""]
    headers = ("Benchmark", "Base", "New", "Change", "p", "Test", "Verdict")
    table = []
    for r in rows:
        table.append((r.name, fmt_time(r.base), fmt_time(r.new), fmt_pct(r.change),
                      "-" if r.p_value is None else f"{r.p_value:.3g}",
                      r.test + ("" if r.p_value is None else f" {r.n_base}v{r.n_new}"),
                      r.verdict + (f": {r.note}" if r.verdict == NOT_COMPARABLE else "")))
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(headers)]
    widths[0] = min(widths[0], 80)

    def line(cells):
        parts = []
        for i, (c, w) in enumerate(zip(cells, widths)):
            parts.append(c.ljust(w) if i in (0, 5, 6) else c.rjust(w))
        return "  ".join(parts).rstrip()

    out.append(line(headers))
    out.append("  ".join("-" * w for w in widths))
    out.extend(line(t) for t in table)
    out.append("")
    g = summary["all"]
    left_out = len(summary["not_comparable"])
    out.append(f"geometric mean of time ratios new/base over {summary['count']} benchmarks"
               + (f" ({left_out} not comparable left out)" if left_out else "") + ": "
               + (f"{g:.4f} ({fmt_pct(g - 1)})" if g is not None else "none")
               + (f", 95 % CI {summary['ci95'][0]:.4f} to {summary['ci95'][1]:.4f} "
                  f"({fmt_pct(summary['ci95'][0] - 1)} to {fmt_pct(summary['ci95'][1] - 1)})"
                  if summary.get("ci95") else ""))
    for k, v in summary["by_kind"].items():
        out.append(f"  {k:8s} {v:.4f} ({fmt_pct(v - 1)})")
    if summary["only_in_base"]:
        out.append(f"only in base ({len(summary['only_in_base'])}): " + ", ".join(summary["only_in_base"][:10])
                   + (" ..." if len(summary["only_in_base"]) > 10 else ""))
    if summary["only_in_new"]:
        out.append(f"only in new ({len(summary['only_in_new'])}): " + ", ".join(summary["only_in_new"][:10])
                   + (" ..." if len(summary["only_in_new"]) > 10 else ""))
    out.append("")
    regs = [r for r in rows if r.verdict == REGRESSION]
    imps = [r for r in rows if r.verdict == IMPROVEMENT]
    out.append(f"regressions ({len(regs)}):" + ("" if regs else " none"))
    out.extend(f"  {r.name}  {fmt_pct(r.change)}" + ("" if r.p_value is None else f"  p={r.p_value:.3g}")
               for r in regs)
    out.append(f"improvements ({len(imps)}):" + ("" if imps else " none"))
    out.extend(f"  {r.name}  {fmt_pct(r.change)}  p={r.p_value:.3g}" for r in imps)
    odd = [r for r in rows if r.verdict == NOT_COMPARABLE]
    if odd:
        out.append(f"not comparable ({len(odd)}; not counted as regressions):")
        out.extend(f"  {r.name}  {r.note}" for r in odd)
    both = [r for r in rows if r.note and r.verdict != NOT_COMPARABLE]
    if both:
        out.append(f"two states on both sides ({len(both)}; medians compared):")
        out.extend(f"  {r.name}  {r.note}" for r in both)
    if summary["not_enough_data"]:
        out.append(f"not enough data ({len(summary['not_enough_data'])}; fewer than "
                   f"{RELIABLE_REPETITIONS} repetitions on a side, no verdict; rerun with "
                   f"--benchmark_repetitions={RELIABLE_REPETITIONS} or more): "
                   + ", ".join(summary["not_enough_data"][:10]) + (" ..." if len(summary["not_enough_data"]) > 10
                                                                   else ""))
    if summary["untested_slower"]:
        out.append(f"slower beyond the threshold but untested for want of repetitions "
                   f"({len(summary['untested_slower'])}); rerun with --benchmark_repetitions=5 or more on both "
                   "sides (9 or more for a reliable test; 3 against 3 can never reach p < 0.05), "
                   "or pass --fail-untested")
    out.append("")
    out.append("verdict: " + (f"{len(regs)} significant regression(s)" if regs else "no significant regression"))
    return "\n".join(out) + "\n"


def to_json(rows, summary, base_path, new_path, threshold, alpha, metric, exit_code):
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return None
        return v
    return json.dumps({
        "schema": "actgrad-compare", "version": 1,
        "base": str(base_path), "new": str(new_path),
        "metric": metric, "threshold": threshold, "alpha": alpha,
        "verdict": "regression" if exit_code == 1 else "ok", "exit_code": exit_code,
        "geomean": {"all": summary["all"], "ci95": summary["ci95"], "by_kind": summary["by_kind"]},
        "not_enough_data": summary["not_enough_data"],
        "regressions": summary["regressions"], "improvements": summary["improvements"],
        "untested_slower": summary["untested_slower"], "not_comparable": summary["not_comparable"],
        "only_in_base": summary["only_in_base"], "only_in_new": summary["only_in_new"],
        "benchmarks": [{k: clean(v) for k, v in asdict(r).items()} for r in rows],
    }, indent=2) + "\n"


def run(args):
    threshold = parse_threshold(args.threshold)
    if not (0 < args.alpha < 1):
        raise InputError("--alpha", f"{args.alpha} is not in (0, 1)")
    base = gbench.load(args.base)
    new = gbench.load(args.new)
    config = getattr(args, "config", None)
    rules = Thresholds(threshold, args.alpha, config)
    if args.min_repetitions < MIN_REPETITIONS:
        raise InputError("--min-repetitions", f"{args.min_repetitions} is below {MIN_REPETITIONS}")
    rows, summary = compare_runs(base, new, threshold=threshold, alpha=args.alpha, metric=args.metric,
                                 name_filter=args.filter, fail_untested=args.fail_untested, thresholds=rules,
                                 min_repetitions=args.min_repetitions)
    code = 1 if summary["regressions"] else 0
    for run_ in (base, new):
        for note in run_.notes:
            print(f"note: {run_.path}: {note}")
    print(format_table(rows, summary, args.base, args.new, rules.default.threshold, rules.default.alpha,
                       args.metric, config), end="")
    if args.json:
        atomic.write_text(args.json, to_json(rows, summary, args.base, args.new, rules.default.threshold,
                                             rules.default.alpha,
                                             args.metric, code))
    return code
