"""Placements, processes and runs: how stable a benchmark's figure is.

Per benchmark of one file (``of_bench``): the median over all samples, the
per-placement and per-process medians with their spreads ((max - min) /
median), and the two-state flag of ``stats.two_states``. The detector sees one
value per (program, process, placement) cell, the cell's median, when there
are at least 4 cells; otherwise every sample.

Across whole ``scripts/bench`` runs (``report stability RUN.json...``): every
ours/peer ratio the speed goals use (bench/goals.py): the items/s of
``api/<op>.<dt>.contig.phase2/n:N/thr:T`` over the best peer
``peer/<peer>.<op>.<dt>/n:N/thr:T`` of the same op form (GELU tanh,
``gelu_bwd_tanh``, apart from GELU erf) and dtype (none of another dtype
stands in), per run, with the median ratio and each ratio's largest deviation
from it.
"""

import functools
import statistics
from dataclasses import dataclass

from . import atomic, gbench
from .errors import InputError
from .stats import TWO_STATE_MIN_VALUES, spread, two_states
from .names import GELU_TANH, OP_FORMS

DETECTOR_METRIC = "real_time"
GOAL_CELLS = {("gelu_bwd", "f32", 65536, 1): "G2", (GELU_TANH, "f32", 65536, 1): "G2"} | {
    (op, dt, 65536, 1): "G3" for op in OP_FORMS for dt in ("f16", "bf16")}


@dataclass
class Stability:
    name: str
    median: float
    placements: dict        # placement -> median
    processes: dict         # process -> median
    two: object             # stats.TwoStates or None
    where_high: str         # which cells form the high group ("" when not two-state)

    @property
    def placement_spread(self):
        return spread(self.placements.values())

    @property
    def process_spread(self):
        return spread(self.processes.values())


def detector_input(bench, metric=DETECTOR_METRIC):
    """([values], [Where or None]): the cell medians with >= 4 cells, else all samples."""
    cells = bench.cells(metric)
    if len(cells) >= TWO_STATE_MIN_VALUES:
        return [statistics.median(v) for v in cells.values()], list(cells)
    return bench.values(metric), [None] * len(bench.values(metric))


def two_state_of(bench, metric=DETECTOR_METRIC):
    """(TwoStates or None, a short text naming the high group's cells)."""
    values, wheres = detector_input(bench, metric)
    two = two_states(values)
    if two is None:
        return None, ""
    return two, _which([wheres[i] for i in two.high_index], [w for w in wheres if w is not None])


def _which(high, cells):
    """'process 1', 'place 2, 3' or '3 of 8 cells': where the slow state was."""
    if not high or any(w is None for w in high):
        return f"{len(high)} samples"
    for attr, word in (("process", "process"), ("placement", "place")):
        keys = {getattr(w, attr) for w in high}
        if len({getattr(w, attr) for w in cells}) > 1 and \
                all(w in high for w in cells if getattr(w, attr) in keys):
            return f"{word} " + ", ".join(str(k) for k in sorted(keys, key=str))
    return f"{len(high)} of {len(cells)} cells"


def of_bench(bench, metric=DETECTOR_METRIC):
    two, where = two_state_of(bench, metric)
    med = {k: statistics.median(v) for k, v in bench.by_placement(metric).items()}
    proc = {k: statistics.median(v) for k, v in bench.by_process(metric).items()}
    return Stability(name=bench.name, median=bench.center(metric), placements=med, processes=proc,
                     two=two, where_high=where)


# -- the table of one merged file (report plot) -------------------------------------------------

STABILITY_HEADERS = ["benchmark", "median", "placements", "spread over placements", "per-process medians",
                     "spread over processes", "two states"]


def _pct(x):
    return "-" if x is None else f"{100 * x:.1f} %"


def rows_of_run(run, kinds=("api", "peer")):
    """The stability rows (strings) of a file's api and peer benchmarks, two-state ones first."""
    from .compare import fmt_time
    out = []
    for b in run.benches.values():
        if b.parsed.kind not in kinds or not b.has(DETECTOR_METRIC):
            continue
        s = of_bench(b)
        flag = f"yes: {s.two.describe()}, slow: {s.where_high}" if s.two else "no"
        out.append((s.two is None, b.name, [b.name, fmt_time(s.median), str(len(s.placements)),
                                           _pct(s.placement_spread),
                                           " / ".join(fmt_time(v) for v in s.processes.values()),
                                           _pct(s.process_spread), flag]))
    out.sort(key=lambda t: (t[0], t[1]))
    return [r for _, _, r in out]


def markdown(headers, rows):
    esc = [[str(c).replace("|", "\\|") for c in r] for r in rows]
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in esc]) + "\n"


# -- ratios across runs (report stability) -------------------------------------------------------

def _items(run, name):
    b = run.benches.get(name)
    return b.center("items_per_second") if b is not None and b.has("items_per_second") else None


def _peers(run):
    return sorted({b.parsed.peer for b in run.benches.values() if b.parsed.kind == "peer" and b.parsed.peer})


@functools.lru_cache(maxsize=1)
def _peer_forms():
    from .figures import goals_module      # imported when used: the parser imports figures
    return goals_module().PEER_FORMS


def best_peer(run, form, dt, n, thr):
    """(peer, items/s) of the fastest peer of the op form and dtype, or (None, None) (goals.py's rule:
    same dtype only, each peer on the op forms it computes, PEER_FORMS)."""
    peer_forms = _peer_forms()
    cands = [(ips, p) for p in _peers(run) if form in peer_forms.get(p, (form,))
             and (ips := _items(run, f"peer/{p}.{form}.{dt}/n:{n}/thr:{thr}"))]
    if cands:
        ips, label = max(cands)
        return label, ips
    return None, None


def goal_ratios(run):
    """{(op form, dtype, n, thr): (ratio ours/best peer, peer label)} of one run."""
    out = {}
    for b in run.benches.values():
        p = b.parsed
        if p.kind != "api" or p.layout != "contig" or p.phase != "phase2" or p.n is None or p.thr is None:
            continue
        ours = _items(run, b.name)
        label, peer = best_peer(run, p.form, p.dtype, p.n, p.thr)
        if ours and peer:
            out[(p.form, p.dtype, p.n, p.thr)] = (ours / peer, label)
    return out


@dataclass
class RatioRow:
    key: tuple              # (op form, dtype, n, thr)
    goal: str               # "G2", "G3" or ""
    ratios: list            # per run: ratio or None
    peers: list             # per run: the best peer's label or None

    @property
    def present(self):
        return [r for r in self.ratios if r is not None]

    @property
    def median(self):
        return statistics.median(self.present)

    @property
    def max_dev(self):
        """Largest |ratio / median - 1| over the runs."""
        return max(abs(r / self.median - 1.0) for r in self.present)


def ratio_rows(runs):
    """RatioRows of the ratios found in at least two runs, and the keys found in only one."""
    per_run = [goal_ratios(r) for r in runs]
    for run, ratios in zip(runs, per_run):
        if not ratios:
            raise InputError(run.path, "no ours/peer ratio: no api/<op>.<dtype>.contig.phase2 benchmark with a "
                                       "peer/<peer>.<op>.<dtype> of the same n and threads (a scripts/bench "
                                       "result file?)")
    keys = sorted({k for r in per_run for k in r},
                  key=lambda k: (GOAL_CELLS.get(k) is None, k[2], k[3], k[0], k[1]))
    rows, lone = [], []
    for k in keys:
        row = RatioRow(key=k, goal=GOAL_CELLS.get(k, ""), ratios=[r.get(k, (None,))[0] for r in per_run],
                       peers=[r.get(k, (None, None))[1] for r in per_run])
        (rows if len(row.present) >= 2 else lone).append(row)
    if not rows:
        raise InputError(runs[-1].path, "no ours/peer ratio is found in two or more of the runs")
    return rows, lone


def ratio_table(rows, nruns):
    from .names import human_size
    headers = ["op", "dtype", "n", "thr", "goal", "best peer"] + [f"run {i + 1}" for i in range(nruns)] + \
              ["median", "max deviation"]
    body = []
    for r in rows:
        op, dt, n, thr = r.key
        peers = "/".join(sorted({p for p in r.peers if p}))
        body.append([op, dt, human_size(n), str(thr), r.goal or "-", peers] +
                    ["-" if x is None else f"{x:.2f}x" for x in r.ratios] +
                    [f"{r.median:.2f}x", f"{100 * r.max_dev:.1f} %"])
    return headers, body


def summary_line(rows, tolerance):
    within = sum(1 for r in rows if r.max_dev <= tolerance + 1e-12)
    goals = [r for r in rows if r.goal]
    line = f"{within} of {len(rows)} ratios within +-{100 * tolerance:g} % of their median"
    if goals:
        g = sum(1 for r in goals if r.max_dev <= tolerance + 1e-12)
        line += f" ({g} of {len(goals)} goal ratios)"
    return line


def plain(headers, rows):
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(headers), "  ".join("-" * w for w in widths)] + [fmt(r) for r in rows]) + "\n"


def run(args):
    """``report stability RUN.json...``: load every run first, then print (and --md) the table."""
    from .compare import parse_threshold
    tolerance = parse_threshold(args.tolerance, "--tolerance")
    if len(args.files) < 2:
        raise InputError(args.files[0], "one run: stability needs two or more result files")
    runs = [gbench.load(p) for p in args.files]
    rows, lone = ratio_rows(runs)
    headers, body = ratio_table(rows, len(runs))
    runs_text = "\n".join(f"run {i + 1}: {r.path} ({r.context.get('date', 'no date')})" for i, r in enumerate(runs))
    notes = [f"only in one run (left out): {', '.join('.'.join(map(str, r.key)) for r in lone)}"] if lone else []
    line = summary_line(rows, tolerance)
    print(runs_text + "\n\n" + plain(headers, body) + "\n" + "\n".join(notes + [line]))
    if args.md:
        text = (f"Ours/peer ratios (items/s of api contig phase2 over the best peer) in {len(runs)} runs:\n\n"
                + markdown(headers, body) + "\n" + "\n".join(notes + [line]) + "\n")
        atomic.write_text(args.md, text)
        print(f"wrote {args.md}")
    return 0
