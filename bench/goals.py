#!/usr/bin/env python3
"""Reads Google Benchmark JSON results of actgrad-bench / actgrad-bench-variants
and prints the speed-goal table of the variants issue (met / not met, with the
figures) and, with --figures, the op x dtype x size table of
docs/performance.md. Python standard library only.

    python3 bench/goals.py results/<date>-<host>.json [more.json ...]
        [--accuracy docs/accuracy.json] [--markdown] [--figures] [--goals]

Figures per benchmark are medians over all its samples: the repetitions of
every placement (a name's /place:<k> segment, stripped by reports/names.py's
strip_placement, the one rule) and every process (actgrad_process, when
scripts/bench merged several runs); a file with aggregates only gives the
median of the per-placement "median" aggregates. cv is the coefficient of
variation of bytes_per_second (or of items_per_second) over those samples
(aggregates only: the median of the per-placement cv aggregates).

Each goal row also gives its margin (the shipping figure / the target - 1)
and its noise: the cvs of the figures it divides, combined as the root of
the sum of squares (a ratio goal: ours and the peer's, or ours and the
contiguous API's; a % of limit goal: ours only, the limit being the best of
the roofs). A verdict whose |margin| is below its noise is marked "(within
noise)" and counted apart after the per-goal counts: on a shared machine
such a verdict may flip in the next run of the same build.

"% of limit" is 100 x bytes_per_second / the best of the roof/stream_plain
and roof/stream_nt medians of the same n and threads in the results (the
definition of docs/conventions.md; with random interleaving the roof
repetitions are spread over the run like every other benchmark's); with
--counters, the programs' own pct_of_bandwidth counters (the limit measured
once per process at first use) are used instead.

Ops are op forms (reports/names.py OP_FORMS): the five ops with GELU in both
of its forms, gelu_bwd (erf) and gelu_bwd_tanh (approximate="tanh"), each a
case of its own; a goal of GELU holds for both forms.

The goals (N = 16M, 64K and 4K elements):
  G1  N=16M, 1 and 2 threads, every op and float dtype: >= 90 % of the in-run
      limit (pct_of_bandwidth: best of stream_plain / stream_nt, same n, threads)
  G2  N=64K, 1 thread, f32: SELU, Hardswish, Softshrink, LogitGrad >= 85 % of
      the in-run limit, and (G2p) >= the best peer (below); GELU
      >= 3x the best peer
  G3  N=64K, 1 thread, f16 and bf16: GELU >= 4x the best peer, LogitGrad
      >= 3x, SELU, Hardswish and Softshrink >= 2x; G3l SELU, Hardswish and
      Softshrink also >= 80 % of the in-run limit
  G4  N=4K, 1 thread, f32, through the API (phase one + phase two +
      synchronize: api/<op>.f32.contig.both): every op >= 1.5x PyTorch
The goals of the views (tools/inputs/views.h; API phase2 items/s):
  V1  layouts strided (views whose innermost dimension is contiguous for 64
      elements) and bcast (a [n/64, 1] self broadcast along rows): >= 80 %
      of the contiguous API's speed (api/<op>.<dtype>.contig.phase2, same
      n and threads) at 64K and 16M, 1 and 2 threads, every op (bcast: the
      ops that broadcast) and float dtype
  V2  layout transposed (a 2-D transpose: [n/1024, 1024] storages viewed as
      [1024, n/1024]): >= 50 % of the contiguous speed at 16M, 1 and 2 threads;
      V2p >= 1.5x PyTorch on the same view (peer/torch.<op>.<dtype>.transposed)
      at 64K and 16M, 1 and 2 threads
  V3  every layout (contig included), size and thread count measured: >= 1x
      PyTorch on the same view (peer/torch.<op>.<dtype>[.<layout>])
  Rows appear for the cases in the results only.
The verdict uses the shipping kernel: api/<op>.<dtype>.contig.phase2 (the
library's own choice of variant, threads and chunk, through the public API;
phase one, the per-call planning, is shown apart as `both`). The best variant
of the sweep (restricted to accuracy-passing ones with --accuracy) is shown
for reference.

The best peer of a case is the fastest (items_per_second) of the peers
measured on the same op form, dtype and layout at the same n and threads
(peer/<peer>.<op>.<dtype>[.<layout>]); a case without one has no peer ("no
peer measured"), never another dtype's kernel. A peer counts only for the op
forms it computes (PEER_FORMS: oneDNN has GELU erf, GELU tanh and Hardswish
backward; a peer/dnnl.selu_bwd row of an older file timed elu_use_dst, another
function, and is left out). A peer is named with the version the results'
context gives (actgrad_peers, e.g. "torch 2.15.0, dnnl 3.13.2 (sycl
runtime)": "torch 2.15.0"), else by its name alone.
"""
import argparse
import contextlib
import io
import gzip
import json
import math
import os
import re
import statistics
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from reports.names import OP_FORMS, split_form, strip_placement  # noqa: E402  (standard library only)
from reports.vocabulary import DTYPES, FLOAT_DTYPES  # noqa: E402  (the C++ lists: reports/vocabulary.json)

NAME_RE = re.compile(r"^(roof|variant|api|peer)/(.+)/n:(\d+)/thr:(\d+)$")
LAYOUTS = ["contig", "strided", "bcast", "transposed"]  # tools/inputs/views.h
N16M = 16 * 1024 * 1024
N64K = 64 * 1024
N4K = 4 * 1024
# The op forms a peer computes, for the peers that lack some (any other peer: every form).
PEER_FORMS = {"dnnl": ("gelu_bwd", "gelu_bwd_tanh", "hardswish_bwd")}


def peer_versions(text):
    """actgrad_peers ("torch 2.15.0, dnnl 3.13.2 (sycl runtime)") -> {"torch": "torch 2.15.0", "dnnl":
    "dnnl 3.13.2"}: each peer's name and version; a part without a version ("torch,dnnl") or "none"
    gives nothing."""
    out = {}
    depth, part, parts = 0, "", []
    for ch in str(text or "") + ",":
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    for part in parts:
        words = re.sub(r"\(.*?\)", "", part).split()
        if len(words) >= 2:
            out[words[0]] = " ".join(words[:2])
    return out


def form_rank(op):
    return OP_FORMS.index(op) if op in OP_FORMS else len(OP_FORMS)


class BadInput(Exception):
    """A results or accuracy file that cannot be used; the message names it."""


def read_json(path):
    try:
        opener = gzip.open if str(path).endswith(".gz") else open  # results kept as data files are compressed
        with opener(path, "rt") as f:
            return json.load(f)
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise BadInput(f"{path}: not a readable gzip file: {e}")
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}")
    except (ValueError, RecursionError) as e:  # JSONDecodeError, bad UTF-8, nesting
        raise BadInput(f"{path}: not valid JSON: {e}")


def load(paths):
    """Returns (context, {(binary, run_name): {"median": {...}, "cv": {...}, "reps": int, "cpus": [...]}}).
    binary: the entry's "actgrad_binary" (set by scripts/bench when it merges
    the two programs' results) or the file's context actgrad_binary; run_name
    without its /place:<k>: placements and processes are samples of one benchmark.
    cpus: the rows' actgrad_cpus (the CPUs the process of that thread count was
    pinned to), empty when the rows have none."""
    context = {}
    reps = {}
    aggs = {}
    for path in paths:
        data = read_json(path)
        if not isinstance(data, dict) or not isinstance(data.get("benchmarks", []), list):
            raise BadInput(f"{path}: not a Google Benchmark JSON file (an object with a \"benchmarks\" array)")
        for k, v in data.get("context", {}).items():
            context.setdefault(k, v)
        default_binary = data.get("context", {}).get("actgrad_binary", "")
        for b in data.get("benchmarks", []):
            if b.get("error_occurred"):
                continue
            key = (b.get("actgrad_binary", default_binary), strip_placement(b.get("run_name", b["name"]))[0])
            if b.get("run_type") == "aggregate":
                aggs.setdefault(key, {}).setdefault(b.get("aggregate_name"), []).append(b)
            else:
                reps.setdefault(key, []).append(b)
    keys = ("bytes_per_second", "items_per_second", "pct_of_bandwidth",
            "pct_of_bandwidth_same_bytes", "roof_bytes_per_second", "real_time")
    out = {}
    for key in set(reps) | set(aggs):
        med, cv = summarize(reps.get(key, []), aggs.get(key, {}), keys)
        if med:
            rows = reps.get(key, []) + [r for rs in aggs.get(key, {}).values() for r in rs]
            cpus = sorted({r["actgrad_cpus"] for r in rows if isinstance(r.get("actgrad_cpus"), int)})
            out[key] = {"median": med, "cv": cv, "reps": max(len(reps.get(key, [])), 1), "binary": key[0],
                        "cpus": cpus}
    return context, out


def summarize(rs, a, keys):
    """({key: median}, {key: cv}) of one benchmark: over its repetitions (every
    placement and process) when the file has them, else over its per-placement
    aggregates (a: {aggregate name: [rows]}; one row per placement and process)."""
    med, cv = {}, {}
    for k in keys:
        if rs and all(k in r for r in rs):
            med[k] = statistics.median(r[k] for r in rs)
        elif a.get("median") and all(k in r for r in a["median"]):
            med[k] = statistics.median(r[k] for r in a["median"])
        if len(rs) > 1 and all(k in r for r in rs):
            m = statistics.mean(r[k] for r in rs)
            cv[k] = statistics.stdev(r[k] for r in rs) / m if m else 0.0
        elif a.get("cv") and all(k in r for r in a["cv"]):
            cv[k] = statistics.median(r[k] for r in a["cv"])
    return med, cv


def index(results):
    """Groups results by kind: {kind: {(subject, n, thr): entry}}; the roof
    benchmarks (which both programs may run) by program: {"roof": {binary:
    {(subject, n, thr): entry}}}. Each entry gains its subject, n and thr."""
    idx = {"roof": {}, "variant": {}, "api": {}, "peer": {}}
    for (binary, run), e in results.items():
        m = NAME_RE.match(run)
        if not m:
            continue
        kind, subject, n, thr = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
        e["subject"], e["n"], e["thr"] = subject, n, thr
        if kind == "roof":
            idx["roof"].setdefault(binary, {})[(subject, n, thr)] = e
        else:
            idx[kind][(subject, n, thr)] = e
    return idx


def load_accuracy(path):
    if not path:
        return None
    data = read_json(path)
    # A bare list (docs/conventions.md) or {"schema": "actgrad-accuracy", "results": [...]}.
    rows = data.get("results", []) if isinstance(data, dict) else data
    return {r["variant"] for r in rows if r.get("shippable")}


class Figures:
    """The results of a run by kind; `context` (the results' context) names the peers' versions."""

    def __init__(self, idx, shippable, context=None):
        self.idx = idx
        self.shippable = shippable
        self.versions = peer_versions((context or {}).get("actgrad_peers"))

    def api(self, op, dt, n, thr, phase="phase2", layout="contig"):
        return self.idx["api"].get((f"{op}.{dt}.{layout}.{phase}", n, thr))

    def best_variant(self, op, dt, n, thr):
        """The fastest variant of the op form (GELU erf: the erf_* variants; gelu_bwd_tanh: the tanh_*
        ones, each the other's other function)."""
        best = None
        base, mode = split_form(op)
        for (subject, vn, vt), e in self.idx["variant"].items():
            parts = subject.split(".")
            if len(parts) < 4 or parts[0] != base or parts[1] != dt or vn != n or vt != thr:
                continue
            if mode and parts[3].split("_")[0] != mode:
                continue
            if self.shippable is not None and subject not in self.shippable:
                continue
            if best is None or e["median"]["items_per_second"] > best[1]["median"]["items_per_second"]:
                best = (subject, e)
        return best

    def peer(self, name, op, dt, n, thr, layout="contig"):
        """peer/<name>.<op>.<dt>/... (contig) or peer/<name>.<op>.<dt>.<layout>/... (the same views as
        api/<op>.<dt>.<layout>)."""
        suffix = "" if layout == "contig" else f".{layout}"
        return self.idx["peer"].get((f"{name}.{op}.{dt}{suffix}", n, thr))

    def peers(self):
        return sorted({s.split(".")[0] for (s, _, _) in self.idx["peer"]})

    def peer_label(self, name):
        """The peer's name and version ("torch 2.15.0"), or its name when the context has no version."""
        return self.versions.get(name, name)

    def best_peer(self, op, dt, n, thr, only=None, layout="contig"):
        """(peer label, benchmark entry) of the fastest peer (or of peer `only`) on the same op form,
        dtype and layout's views at the same n and threads, or (None, None): no other dtype stands in."""
        cands = []
        for p in self.peers():
            if (only and p != only) or op not in PEER_FORMS.get(p, (op,)):
                continue
            e = self.peer(p, op, dt, n, thr, layout)
            if e and e["median"].get("items_per_second"):
                cands.append((e["median"]["items_per_second"], p, e))
        if not cands:
            return None, None
        _, p, e = max(cands, key=lambda c: c[:2])
        return self.peer_label(p), e



def gbps(e):
    return e["median"]["bytes_per_second"] / 1e9


# binary -> {(n, thr) -> the best of the roof/stream_plain and roof/stream_nt
# medians} (set in main). Empty: the programs' own counters are used.
ROOF = {}


def limit_of(binary, n, thr):
    """docs/conventions.md: the best roof/stream_* figure of the same n and
    threads measured in that run (the same program's, else the other's), or
    the largest-n figure when that n was not run. As in the programs, the
    limit for T threads is the best over the thread counts t <= T (a T-thread
    budget may use fewer threads)."""
    order = [binary] + sorted(b for b in ROOF if b != binary)
    for b in order:
        same_n = [v for (rn, rt), v in ROOF.get(b, {}).items() if rn == n and rt <= thr]
        if same_n:
            return max(same_n)
    for b in order:
        largest = [(rn, v) for (rn, rt), v in ROOF.get(b, {}).items() if rt <= thr]
        if largest:
            top = max(rn for rn, _ in largest)
            return max(v for rn, v in largest if rn == top)
    return None


def pct(e):
    lim = limit_of(e.get("binary", ""), e["n"], e["thr"]) if "n" in e else None
    if lim:
        return 100.0 * e["median"]["bytes_per_second"] / lim
    return e["median"].get("pct_of_bandwidth")


def pct_same_bytes(e):
    """Against a stream of the same footprint: the programs' ratio of the two
    limits applied to pct()."""
    m = e["median"]
    if m.get("pct_of_bandwidth") and m.get("pct_of_bandwidth_same_bytes") is not None:
        return pct(e) * m["pct_of_bandwidth_same_bytes"] / m["pct_of_bandwidth"]
    return None


def fmt_num(v, spec):
    """v formatted, or "?" when it cannot be computed (no roof figure and no counter)."""
    return "?" if v is None else format(v, spec)


def fmt_pct(e):
    if not e or pct(e) is None:
        return "-"
    s = f"{pct(e):.0f} %"
    same = pct_same_bytes(e)
    if same is not None and abs(same - pct(e)) > 0.5:
        s += f" ({same:.0f} % same-bytes)"
    return s


def goal_rows(F):
    """Yields dicts: goal, op, dtype, n, thr, target, measure, shipping, both, best, verdict."""
    rows = []

    def pct_goal(goal, op, dt, n, thr, target):
        ship = F.api(op, dt, n, thr)
        both = F.api(op, dt, n, thr, "both")
        best = F.best_variant(op, dt, n, thr)
        if not ship and not best:
            return
        ship_v = pct(ship) if ship else None
        best_v = pct(best[1]) if best else None
        verdict = verdict_of(ship_v, best_v, target)
        rows.append(dict(goal=goal, op=op, dtype=dt, n=n, thr=thr, target=f">= {target:.0f} % of limit",
                         shipping=(f"{fmt_num(ship_v, '.0f')} % ({gbps(ship):.1f} GB/s)" if ship else "-"),
                         both=(f"{fmt_num(pct(both), '.0f')} %" if both else "-"),
                         best=(f"{fmt_num(best_v, '.0f')} % {best[0]}" if best else "-"),
                         cv=(f"{100 * cv_of(ship, 'bytes_per_second'):.1f} %" if ship and ship["cv"] else "-"),
                         verdict=verdict, **noise_fields(ship_v, target, cv_of(ship, "bytes_per_second"))))

    def ratio_goal(goal, op, dt, n, thr, target, phase="phase2", only=None, layout="contig"):
        """items/s of the API (`phase`: phase2, or both for a whole call) over the best peer's (or
        `only`'s), both on the layout's views."""
        ship = F.api(op, dt, n, thr, phase, layout)
        both = F.api(op, dt, n, thr, "both", layout)
        best = F.best_variant(op, dt, n, thr) if phase == "phase2" and layout == "contig" else None
        label, peer = F.best_peer(op, dt, n, thr, only, layout)
        peer_ips = peer["median"]["items_per_second"] if peer else None
        if not ship and not best:
            return
        if not peer_ips:
            rows.append(dict(goal=goal, op=op, dtype=dt, n=n, thr=thr,
                             target=f">= {target:g}x {F.peer_label(only) if only else 'best peer'}",
                             shipping="-", both="-", best="-", cv="-", verdict="no peer measured",
                             **noise_fields(None, target)))
            return
        r_ship = ship["median"]["items_per_second"] / peer_ips if ship else None
        r_both = both["median"]["items_per_second"] / peer_ips if both else None
        r_best = best[1]["median"]["items_per_second"] / peer_ips if best else None
        rows.append(dict(goal=goal, op=op, dtype=dt, n=n, thr=thr,
                         target=f">= {target:g}x {label}",
                         shipping=(f"{r_ship:.2f}x" if r_ship else "-"),
                         both=(f"{r_both:.2f}x" if r_both else "-"),
                         best=(f"{r_best:.2f}x {best[0]}" if best else "-"),
                         cv=(f"{100 * cv_of(ship, 'items_per_second'):.1f} %" if ship and ship["cv"] else "-"),
                         verdict=verdict_of(r_ship, r_best, target),
                         **noise_fields(r_ship, target, cv_of(ship, "items_per_second"),
                                        cv_of(peer, "items_per_second"))))

    def contig_goal(goal, op, dt, n, thr, layout, target):
        """items/s of the API on the layout's views as a % of the contiguous API's (phase2; both: the
        same for whole calls)."""
        ship = F.api(op, dt, n, thr, layout=layout)
        if not ship:
            return
        contig = F.api(op, dt, n, thr)
        both, both_c = F.api(op, dt, n, thr, "both", layout), F.api(op, dt, n, thr, "both")
        r = 100.0 * ship["median"]["items_per_second"] / contig["median"]["items_per_second"] if contig else None
        r_both = (100.0 * both["median"]["items_per_second"] / both_c["median"]["items_per_second"]
                  if both and both_c else None)
        rows.append(dict(goal=goal, op=op, dtype=dt, n=n, thr=thr, target=f">= {target:.0f} % of contig",
                         shipping=(f"{r:.0f} % ({gbps(ship):.1f} GB/s)" if r is not None else "-"),
                         both=(f"{r_both:.0f} %" if r_both is not None else "-"), best="-",
                         cv=(f"{100 * cv_of(ship, 'items_per_second'):.1f} %" if ship["cv"] else "-"),
                         verdict=(verdict_of(r, None, target) if contig else "no contiguous figure"),
                         **noise_fields(r, target, cv_of(ship, "items_per_second"), cv_of(contig, "items_per_second"))))

    for thr in (1, 2):
        for op in OP_FORMS:
            for dt in FLOAT_DTYPES:
                pct_goal("G1", op, dt, N16M, thr, 90.0)
    for op in OP_FORMS:
        if split_form(op)[0] == "gelu_bwd":
            ratio_goal("G2", op, "f32", N64K, 1, 3.0)
        else:
            pct_goal("G2", op, "f32", N64K, 1, 85.0)
            ratio_goal("G2p", op, "f32", N64K, 1, 1.0)
    for dt in ("f16", "bf16"):
        for op in OP_FORMS:
            base = split_form(op)[0]
            ratio_goal("G3", op, dt, N64K, 1, {"gelu_bwd": 4.0, "logit_grad": 3.0}.get(base, 2.0))
            if base not in ("gelu_bwd", "logit_grad"):
                pct_goal("G3l", op, dt, N64K, 1, 80.0)
    for op in OP_FORMS:
        ratio_goal("G4", op, "f32", N4K, 1, 1.5, phase="both", only="torch")
    # Views
    for layout in ("strided", "bcast"):
        for n in (N64K, N16M):
            for thr in (1, 2):
                for op in OP_FORMS:
                    for dt in FLOAT_DTYPES:
                        contig_goal(f"V1 {layout}", op, dt, n, thr, layout, 80.0)
    for thr in (1, 2):
        for op in OP_FORMS:
            for dt in FLOAT_DTYPES:
                contig_goal("V2 transposed", op, dt, N16M, thr, "transposed", 50.0)
    for n in (N64K, N16M):
        for thr in (1, 2):
            for op in OP_FORMS:
                for dt in FLOAT_DTYPES:
                    if F.api(op, dt, n, thr, layout="transposed"):
                        ratio_goal("V2p transposed", op, dt, n, thr, 1.5, only="torch", layout="transposed")
    for layout in LAYOUTS:
        cases = sorted({(s.split(".")[0], s.split(".")[1], n, thr) for (s, n, thr) in F.idx["api"]
                        if s.endswith(f".{layout}.phase2") and s.split(".")[1] in FLOAT_DTYPES},
                       key=lambda k: (k[2], k[3], form_rank(k[0]), dtype_rank(k[1])))
        for op, dt, n, thr in cases:
            ratio_goal(f"V3 {layout}", op, dt, n, thr, 1.0, only="torch", layout=layout)
    return rows


def cv_of(e, key):
    return e["cv"].get(key, 0.0) if e and e["cv"] else 0.0


def noise_fields(value, target, *cvs):
    """margin: how far the shipping figure is from the target (value / target - 1);
    noise: the figures' cvs combined (root of the sum of squares, the relative
    spread of a quotient of independent figures). A verdict whose |margin| is
    below the noise could flip in the next run of the same build."""
    if value is None or not target:
        return dict(margin="-", noise="-", close=False)
    margin = value / target - 1.0
    noise = math.sqrt(sum(c * c for c in cvs))
    return dict(margin=f"{100 * margin:+.0f} %", noise=(f"{100 * noise:.1f} %" if noise else "-"),
                close=abs(margin) < noise)


def verdict_of(ship, best, target):
    if ship is not None and ship >= target:
        return "met"
    if best is not None and best >= target:
        return "not met by the shipping choice (a variant meets it)"
    if ship is None and best is None:
        return "not measured"
    return "not met"


def print_table(headers, rows, markdown):
    if markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "|".join("---" for _ in headers) + "|")
        for r in rows:
            print("| " + " | ".join(str(c) for c in r) + " |")
        return
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths)))
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)))


def size_label(n):
    for unit, s in ((1 << 20, "M"), (1 << 10, "K")):
        if n % unit == 0 and n >= unit:
            return f"{n // unit}{s}"
    return str(n)


def dtype_rank(dt):
    return DTYPES.index(dt) if dt in DTYPES else len(DTYPES)


def figures_rows(F):
    peers = F.peers()
    keys = sorted({(s.split(".")[0], s.split(".")[1], n, t) for (s, n, t) in F.idx["api"]
                   if s.endswith(".contig.phase2")},
                  key=lambda k: (form_rank(k[0]), dtype_rank(k[1]), k[2], k[3]))
    rows = []
    for op, dt, n, thr in keys:
        ship = F.api(op, dt, n, thr)
        both = F.api(op, dt, n, thr, "both")
        best = F.best_variant(op, dt, n, thr)
        row = [op, dt, size_label(n), thr, f"{gbps(ship):.1f}", fmt_pct(ship),
               f"{gbps(both):.1f}" if both else "-",
               f"{gbps(best[1]):.1f}" if best else "-"]
        for p in peers:
            e = F.peer(p, op, dt, n, thr) if op in PEER_FORMS.get(p, (op,)) else None
            row.append(f"{ship['median']['items_per_second'] / e['median']['items_per_second']:.2f}x" if e else "-")
        row.append(f"{100 * ship['cv'].get('bytes_per_second', 0):.1f} %" if ship["cv"] else "-")
        rows.append(row)
    headers = ["op", "dtype", "n", "thr", "GB/s", "% of limit", "GB/s both", "GB/s best variant"] + \
              [f"x {F.peer_label(p)}" for p in peers] + ["cv"]
    return headers, rows


def layout_rows(F):
    rows = []
    def key(kv):
        (s, n, thr) = kv[0]
        op, dt = s.split(".")[:2]
        return (form_rank(op), dtype_rank(dt), s, n, thr)
    for (s, n, thr), e in sorted(F.idx["api"].items(), key=key):
        op, dt, layout, phase = s.split(".")
        if layout == "contig" or phase != "phase2":
            continue
        contig = F.api(op, dt, n, thr)
        torch = F.peer("torch", op, dt, n, thr, layout)
        rows.append([op, dt, layout, size_label(n), thr, f"{gbps(e):.1f}", fmt_pct(e),
                     f"{gbps(contig):.1f}" if contig else "-",
                     f"{100 * e['median']['items_per_second'] / contig['median']['items_per_second']:.0f} %"
                     if contig else "-",
                     f"{e['median']['items_per_second'] / torch['median']['items_per_second']:.2f}x"
                     if torch else "-"])
    return ["op", "dtype", "layout", "n", "thr", "GB/s", "% of limit", "GB/s contig", "of contig",
            "x torch (same view)"], rows


def phase1_rows(F):
    rows = []
    def key(kv):
        (s, n, thr) = kv[0]
        op, dt = s.split(".")[:2]
        return (form_rank(op), dtype_rank(dt), s, n, thr)
    for (s, n, thr), e in sorted(F.idx["api"].items(), key=key):
        op, dt, layout, phase = s.split(".")
        if phase != "phase1" or thr != 1:
            continue
        rows.append([op, dt, layout, size_label(n), f"{e['median']['real_time']:.0f} ns"])
    return ["op", "dtype", "layout", "n", "phase one (GetWorkspaceSize + destroy)"], rows


def roof_rows(F):
    rows = []
    many = len(F.idx["roof"]) > 1
    for binary, entries in sorted(F.idx["roof"].items()):
        for (s, n, thr), e in sorted(entries.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
            rows.append(([binary] if many else []) +
                        [s, size_label(n), thr, f"{gbps(e):.1f}",
                         f"{100 * e['cv'].get('bytes_per_second', 0):.1f} %" if e["cv"] else "-"])
    return (["program"] if many else []) + ["roof", "n", "thr", "GB/s", "cv"], rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("json", nargs="+")
    ap.add_argument("--accuracy", help="docs/accuracy.json: best variant among shippable ones only")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--figures", action="store_true", help="also print the figure tables")
    ap.add_argument("--write-doc", metavar="FILE.md",
                    help="write the markdown tables into FILE.md between the lines "
                         "'<!-- goals.py:begin -->' and '<!-- goals.py:end -->' (docs/performance.md)")
    ap.add_argument("--counters", action="store_true",
                    help="%% of limit from the programs' pct_of_bandwidth counters (limit measured once, "
                         "at first use) instead of this run's roof/stream_* medians")
    args = ap.parse_args()
    try:
        return run(args)
    except BadInput as e:
        sys.exit(f"goals.py: {e}")


def run(args):
    if args.write_doc:
        args.markdown = args.figures = True
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            report(args)
        with open(args.write_doc) as f:
            doc = f.read()
        begin, end = "<!-- goals.py:begin -->", "<!-- goals.py:end -->"
        if begin not in doc or end not in doc:
            sys.exit(f"{args.write_doc}: no '{begin}' ... '{end}' block")
        head, rest = doc.split(begin, 1)
        _, tail = rest.split(end, 1)
        with open(args.write_doc, "w") as f:
            f.write(head + begin + "\n" + buf.getvalue().rstrip("\n") + "\n" + end + tail)
        print(f"wrote the tables into {args.write_doc}")
        return 0
    return report(args)


def report(args):
    context, results = load(args.json)
    F = Figures(index(results), load_accuracy(args.accuracy), context)
    if not args.counters:
        for binary, entries in F.idx["roof"].items():
            r = ROOF.setdefault(binary, {})
            for (subject, n, thr), e in entries.items():
                if subject.startswith("stream_"):
                    r[(n, thr)] = max(r.get((n, thr), 0.0), e["median"]["bytes_per_second"])
    md = args.markdown

    print(("**Context:** " if md else "Context: ") +
          ", ".join(f"{k}={context.get(k, '?')}" for k in
                    ("actgrad_cpu_model", "actgrad_machine_id", "actgrad_compiler", "actgrad_build_type",
                     "actgrad_git_commit", "actgrad_tiling_table", "actgrad_tiling_table_freshness", "actgrad_peers", "actgrad_processes",
                     "actgrad_placements", "date",
                     "actgrad_load_average_start", "actgrad_load_average_end", "actgrad_command")
                    if k in context))
    print()
    if md:
        print("### Speed goals")
        print()
    rows = goal_rows(F)
    headers = ["goal", "op", "dtype", "n", "thr", "target", "shipping (phase2)", "both", "best variant",
               "cv", "margin", "noise", "verdict"]
    print_table(headers, [[r["goal"], r["op"], r["dtype"], size_label(r["n"]), r["thr"], r["target"],
                           r["shipping"], r["both"], r["best"], r["cv"], r["margin"], r["noise"],
                           r["verdict"] + (" (within noise)" if r["close"] else "")] for r in rows], md)
    met = sum(1 for r in rows if r["verdict"] == "met")
    print()
    print(f"{met} of {len(rows)} goals met.")
    groups = {}  # goal -> [met, rows, met within the noise, not met within the noise]
    for r in rows:
        g = groups.setdefault(r["goal"], [0, 0, 0, 0])
        met_here = r["verdict"] == "met"
        g[0] += met_here
        g[1] += 1
        if r["close"]:
            g[2 if met_here else 3] += 1
    if groups:
        print("By goal: " + ", ".join(f"{g} {m} of {t}" for g, (m, t, _, _) in groups.items()) + ".")
    close = [(g, cm, cn) for g, (_, _, cm, cn) in groups.items() if cm or cn]
    if close:
        print("Within the noise (|margin| below the combined cv of the figures: the verdict may flip "
              "in the next run): " + ", ".join(f"{g} {m} met, {k} not" for g, m, k in close) + ".")
    if args.figures:
        for title, (h, r) in (("Roofline (in-run limits)", roof_rows(F)),
                              ("Shipping path, contiguous (api ... contig.phase2)", figures_rows(F)),
                              ("Views: strided, broadcast and transposed layouts (phase2)", layout_rows(F)),
                              ("Phase one", phase1_rows(F))):
            print()
            print(f"### {title}" if md else title)
            print()
            print_table(h, r, md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
