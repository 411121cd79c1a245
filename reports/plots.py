"""Figures of one run (``report plot``), drawn with matplotlib, PNG and SVG."""

import math
import os
from collections import defaultdict
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # noqa: E402

from .names import human_size  # noqa: E402
from .stats import geomean  # noqa: E402
from .vocabulary import DTYPES, OPS  # noqa: E402

matplotlib.rcParams.update({
    "font.size": 10, "axes.titlesize": 12, "axes.labelsize": 11, "legend.fontsize": 9,
    "svg.fonttype": "none", "svg.hashsalt": "actgrad", "axes.grid": True, "grid.alpha": 0.3,
})

PALETTE = [matplotlib.colormaps["tab20"](i) for i in range(0, 20, 2)] + \
          [matplotlib.colormaps["tab20"](i) for i in range(1, 20, 2)] + \
          [matplotlib.colormaps["tab20b"](i) for i in range(20)]
STYLES = ["-", "--", "-.", ":"]
MARKERS = ["o", "s", "^", "v", "D", "P", "X", "<", ">", "*"]
ROOF_STYLE = {"memcpy": ":", "stream_plain": "--", "stream_nt": "-."}


@dataclass
class Point:
    kind: str
    name: str
    series: str
    label: str
    op: str
    dtype: str
    n: int
    thr: int
    tile: int
    time_ns: float
    gbps: float
    pct: float
    file: str
    layout: str = None      # api and peer: contig, strided, bcast, transposed
    form: str = None        # the op token (names.Name.form): gelu_bwd_tanh for GELU tanh, else op


@dataclass
class Fig:
    id: str
    title: str
    caption: str
    section: str
    png: str
    svg: str


def _order(op):
    return OPS.index(op) if op in OPS else len(OPS)


def _dorder(dt):
    return DTYPES.index(dt) if dt in DTYPES else len(DTYPES)


def collect(runs, notes):
    """Flatten the runs into points; later files win for a repeated benchmark."""
    seen = {}
    for run in runs:
        roofs = defaultdict(dict)   # (thr) -> {n: best stream bytes/s}
        for b in run.benches.values():
            p = b.parsed
            if p.kind == "roof" and p.subject.startswith("stream") and b.center("bytes_per_second"):
                d = roofs[p.thr]
                d[p.n] = max(d.get(p.n, 0), b.center("bytes_per_second"))
        for b in run.benches.values():
            p = b.parsed
            if not p.ours:
                continue
            bps = b.center("bytes_per_second")
            pct = b.center("pct_of_bandwidth")
            if pct is None and bps and p.kind != "roof" and roofs.get(p.thr):
                d = roofs[p.thr]
                ref = d.get(p.n) or d[max(d)]
                pct = 100.0 * bps / ref
            if b.name in seen:
                notes.append(f"{b.name}: in {os.path.basename(seen[b.name].file)} and "
                             f"{os.path.basename(run.path)}; plotted from the latter")
            seen[b.name] = Point(kind=p.kind, name=b.name, series=p.series, label=p.label, op=p.op, dtype=p.dtype,
                                 n=p.n, thr=p.thr if p.thr is not None else 1, tile=p.tile,
                                 time_ns=b.center("real_time"), gbps=bps / 1e9 if bps else None, pct=pct,
                                 file=run.path, layout=p.layout, form=p.form)
    return list(seen.values())


def _size_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(LogLocator(base=4))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: human_size(int(round(v))) if v >= 1 else f"{v:g}"))
    ax.set_xlabel("elements per call (n)")


def _save(fig, outdir, stem, title, caption, section):
    png, svg = stem + ".png", stem + ".svg"
    fig.savefig(os.path.join(outdir, png), dpi=100)
    fig.set_layout_engine("none")     # keep the layout just computed; do not solve it again for the SVG
    fig.savefig(os.path.join(outdir, svg), metadata={"Date": None})
    return Fig(id=stem, title=title, caption=caption, section=section, png=png, svg=svg)


def _lines(points):
    by = defaultdict(list)
    for p in points:
        by[p.series].append(p)
    for v in by.values():
        v.sort(key=lambda p: p.n)
    return by


def _style_for(kind, i):
    if kind == "variant":
        return dict(color=PALETTE[i % len(PALETTE)], linestyle="-", marker=MARKERS[i % len(MARKERS)],
                    markersize=4, linewidth=1.4)
    if kind == "peer":
        return dict(color=["black", "dimgray", "saddlebrown"][i % 3], linestyle="--", marker="s",
                    markersize=5, linewidth=2.2)
    return dict(color=PALETTE[(i * 3 + 5) % len(PALETTE)], linestyle=":", marker="^", markersize=4, linewidth=1.6)


def throughput_figures(points, outdir):
    """Per op, dtype and thread count: GB/s and % of bandwidth against n."""
    figs = []
    groups = defaultdict(list)
    roofs = defaultdict(list)
    for p in points:
        if p.kind in ("variant", "peer", "api") and p.gbps and p.op and p.dtype:
            groups[(p.op, p.dtype, p.thr)].append(p)
        elif p.kind == "roof" and p.gbps:
            roofs[p.thr].append(p)
    for (op, dtype, thr) in sorted(groups, key=lambda k: (_order(k[0]), _dorder(k[1]), k[2])):
        pts = groups[(op, dtype, thr)]
        fig = Figure(figsize=(13, 8.5), layout="constrained")
        ax, ax2 = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
        handles = []
        counters = defaultdict(int)
        lines = _lines(pts)
        # variants sorted by their best throughput, so the legend reads best first
        keys = sorted(lines, key=lambda s: ({"peer": 0, "api": 1, "variant": 2}[lines[s][0].kind],
                                            -max(p.gbps for p in lines[s])))
        for s in keys:
            ls = lines[s]
            kind = ls[0].kind
            st = _style_for(kind, counters[kind])
            counters[kind] += 1
            xs = [p.n for p in ls]
            h, = ax.plot(xs, [p.gbps for p in ls], label=ls[0].label, **st)
            handles.append(h)
            pct = [(p.n, p.pct) for p in ls if p.pct is not None]
            if pct:
                ax2.plot([a for a, _ in pct], [b for _, b in pct], **st)
        for rp in sorted(_lines(roofs.get(thr, [])).values(), key=lambda v: v[0].label):
            h, = ax.plot([p.n for p in rp], [p.gbps for p in rp], color="gray", linewidth=1.2,
                         linestyle=ROOF_STYLE.get(rp[0].label, "--"), label=f"roof {rp[0].label}")
            handles.append(h)
        ax2.axhline(100, color="gray", linewidth=1.2, linestyle="--")
        _size_axis(ax2)
        ax.tick_params(labelbottom=True)
        ax.set_xlabel("")
        ax.set_ylabel("throughput (GB/s, bytes read + written)")
        ax2.set_ylabel("% of measured bandwidth")
        ax.set_ylim(bottom=0)
        ax2.set_ylim(bottom=0)
        ax.set_title(f"{op} {dtype}, {thr} thread{'s' if thr != 1 else ''}: throughput against size")
        ax2.set_title("share of the best measured stream bandwidth (roof/stream_*) at the same size")
        ncol = 1 if len(handles) <= 24 else 2
        fig.legend(handles=handles, loc="outside right upper", ncol=ncol, title="variant / peer",
                   fontsize=8 if len(handles) > 16 else 9)
        nvar = counters["variant"]
        figs.append(_save(fig, outdir, f"throughput_{op}_{dtype}_thr{thr}",
                          f"{op} {dtype}, {thr} thread(s)",
                          f"{nvar} variant(s), {counters['peer']} peer(s), {counters['api']} API line(s); "
                          "log x (elements), higher is better; dashed gray lines: measured stream bandwidth.",
                          "throughput"))
    return figs


def _variant_short(op, dtype, variant):
    prefix = f"{op}.{dtype}."
    return variant[len(prefix):] if variant.startswith(prefix) else variant


def heatmap_figure(path, table, outdir, idx):
    entries = table["entries"]
    def row_of(e):  # GELU's two formulas are separate rows
        form = (e.get("gelu_approx", "none"),) if e["op"] == "gelu_bwd" else ()
        return (e["op"], e["dtype"]) + form + (e.get("layout", "contig"),)

    rows = sorted({row_of(e) for e in entries}, key=lambda r: (_order(r[0]), _dorder(r[1]), r[2:]))
    buckets = sorted({e["_range"] for e in entries})
    fams = sorted({_variant_short(e["op"], e["dtype"], e["variant"]) for e in entries})
    color = {f: PALETTE[i % len(PALETTE)] for i, f in enumerate(fams)}
    cell = {row_of(e) + (e["_range"],): e for e in entries}
    w = max(9, 0.9 * len(buckets) + 5)
    h = max(3.5, 0.42 * len(rows) + 2.5)
    fig = Figure(figsize=(w, h), layout="constrained")
    ax = fig.subplots()
    for i, r in enumerate(rows):
        for j, b in enumerate(buckets):
            e = cell.get(r + (b,))
            if e is None:
                ax.add_patch(matplotlib.patches.Rectangle((j, i), 1, 1, facecolor="white", edgecolor="lightgray",
                                                          hatch="//"))
                continue
            fam = _variant_short(e["op"], e["dtype"], e["variant"])
            ax.add_patch(matplotlib.patches.Rectangle((j, i), 1, 1, facecolor=color[fam], edgecolor="white"))
            parts = fam.split(".")
            short = ".".join(parts[-3:]) if len(parts) > 3 else fam
            sub = []
            if e.get("tile") or e.get("chunk"):
                sub.append(human_size(int(e.get("tile") or e["chunk"])))
            if "grain" in e:  # v4: one thread per grain elements (0: one thread)
                sub.append(f"/{human_size(int(e['grain']))}" if e["grain"] else "x1")
            elif e.get("threads"):
                sub.append(f"x{e['threads']}")
            ax.text(j + 0.5, i + 0.5, short + ("\n" + "".join(sub) if sub else ""), ha="center", va="center",
                    fontsize=7, color="black",
                    bbox=dict(boxstyle="round,pad=0.1", facecolor="white", alpha=0.55, linewidth=0))
    ax.set_xlim(0, len(buckets))
    ax.set_ylim(len(rows), 0)
    ax.set_xticks([j + 0.5 for j in range(len(buckets))])
    ax.set_xticklabels([f"{human_size(lo)}..\n{human_size(hi)}" for lo, hi in buckets], fontsize=7)
    ax.set_yticks([i + 0.5 for i in range(len(rows))])
    ax.set_yticklabels([".".join(r) for r in rows])
    ax.grid(False)
    ax.set_xlabel("size range [lo, hi) (elements)")
    mid = table.get("machine_id", "?")
    ax.set_title(f"tuned table {mid} ({table.get('backend', '?')}): chosen variant per op, dtype, layout and size"
                 "\ncell text: unroll.target[.nt], chunk x threads (or /grain: a thread per grain elements)")
    handles = [Patch(facecolor=color[f], label=f) for f in fams]
    fig.legend(handles=handles, loc="outside right upper", title="variant (upcast.approx.unroll.target)",
               fontsize=8, ncol=1 if len(fams) <= 30 else 2)
    prov = table.get("provenance", {}) or {}
    return _save(fig, outdir, f"table_{idx}_{_safe(mid)}", f"tuned table {mid}",
                 f"{os.path.basename(path)}: {len(entries)} entries, {len(fams)} distinct variants; "
                 f"cpu {prov.get('cpu_model', '?')}, commit {prov.get('git_commit', '?')}. Hatched: no entry.",
                 "table")


def _safe(s):
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in str(s))


def speed_by_variant(points):
    """variant name -> geometric mean GB/s over all sizes at the lowest thread count."""
    by = defaultdict(list)
    for p in points:
        if p.kind == "variant" and p.gbps:
            by[p.name.split("/")[1]].append(p)
    out = {}
    for v, pts in by.items():
        tmin = min(p.thr for p in pts)
        out[v] = geomean([p.gbps for p in pts if p.thr == tmin])
    return out


def pareto_front(items):
    """items: [(err, speed, key)]; the ones no other is both more accurate and faster than."""
    front = []
    best = -math.inf
    for err, speed, key in sorted(items, key=lambda t: (t[0], -t[1])):
        if speed > best:
            front.append(key)
            best = speed
    return front


def pareto_figures(points, accuracy, outdir):
    speed = speed_by_variant(points)
    acc = {}
    for _, entries in accuracy:
        for e in entries:
            acc[e["variant"]] = e
    groups = defaultdict(list)
    for v, e in acc.items():
        if v in speed and speed[v]:
            groups[e["op"]].append((e, speed[v]))
    figs, tables = [], []
    for op in sorted(groups, key=_order):
        by_dt = defaultdict(list)
        for e, s in groups[op]:
            by_dt[e["dtype"]].append((e, s))
        dts = sorted(by_dt, key=_dorder)
        fig = Figure(figsize=(min(6.5 * len(dts), 20), 6.5), layout="constrained")
        axes = fig.subplots(1, len(dts), squeeze=False)[0]
        for ax, dt in zip(axes, dts):
            # A null max_err (a non-finite error) has no place on the log axis:
            # listed in the table as inf, never on the front.
            for e, s in by_dt[dt]:
                if e["max_err"] is None:
                    tables.append(dict(op=op, dtype=dt, variant=e["variant"], max_err=float("inf"),
                                       max_ulp=e.get("max_ulp"), shippable=e.get("shippable", False), gbps=s,
                                       front=False))
            items = [(e, s) for e, s in by_dt[dt] if e["max_err"] is not None]
            if not items:
                ax.set_axis_off()
                continue
            nz = [e["max_err"] for e, _ in items if e["max_err"] > 0]
            floor = min(nz) / 10 if nz else 1e-9
            pts = [(max(e["max_err"], floor), s, e["variant"]) for e, s in items]
            front = pareto_front(pts)
            fpts = sorted([p for p in pts if p[2] in front])
            for (err, s, v), (e, _) in zip(pts, items):
                ship = e.get("shippable", True)
                on = v in front
                ax.scatter([err], [s], s=60 if on else 30, marker="o" if ship else "x",
                           color="tab:red" if on else ("tab:blue" if ship else "gray"), zorder=3)
                if on:
                    ax.annotate(_variant_short(op, dt, v) + (" (err 0)" if e["max_err"] <= 0 else ""), (err, s),
                                textcoords="offset points", xytext=(-4, 6), ha="center", fontsize=8)
                tables.append(dict(op=op, dtype=dt, variant=v, max_err=e["max_err"], max_ulp=e.get("max_ulp"),
                                   shippable=ship, gbps=s, front=on))
            ax.step([p[0] for p in fpts], [p[1] for p in fpts], where="post", color="tab:red", alpha=0.6)
            ax.set_xscale("log")
            ax.margins(x=0.3, y=0.12)
            ax.set_xlabel("max relative error (log; 0 drawn at the left edge)")
            ax.set_ylabel("throughput, GB/s (geometric mean over sizes)")
            ax.set_title(f"{op} {dt}")
        fig.suptitle(f"{op}: accuracy against speed per variant (red: Pareto front, x: not shippable)")
        legend = [Line2D([], [], marker="o", color="tab:red", linestyle="-", label="Pareto front"),
                  Line2D([], [], marker="o", color="tab:blue", linestyle="", label="shippable"),
                  Line2D([], [], marker="x", color="gray", linestyle="", label="not shippable")]
        fig.legend(handles=legend, loc="outside lower center", ncol=3)
        figs.append(_save(fig, outdir, f"pareto_{op}", f"{op}: accuracy against speed",
                          "Each point a variant: its max relative error (docs/accuracy.json) against its "
                          "throughput (geometric mean over the measured sizes at the lowest thread count). "
                          "Up and left is better.", "pareto"))
    return figs, tables


def _plain_log_y(ax):
    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(fmt)
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))


DTYPE_COLOR = {"f32": "tab:blue", "f16": "tab:orange", "bf16": "tab:green", "i32": "tab:purple", "i8": "tab:brown"}


def atlas_figures(points, outdir):
    """Per op: the Atlas cost model's time per call beside the CPU's (one colour
    per dtype), and per op and dtype a tile-length sweep of the fastest Atlas
    variant."""
    figs = []
    atlas = [p for p in points if p.kind == "atlas" and p.time_ns]
    if not atlas:
        return figs
    groups = defaultdict(list)
    for p in atlas:
        groups[p.op or p.name.split("/")[1].split(".")[0]].append(p)
    cpu = defaultdict(list)
    for p in points:
        if p.kind in ("variant", "peer") and p.time_ns and p.op and p.layout in (None, "contig"):
            cpu[p.form].append(p)     # GELU tanh (form gelu_bwd_tanh) is not the Atlas GELU's CPU line
    for op in sorted(groups, key=_order):
        pts = groups[op]
        fig = Figure(figsize=(12.5, 6.5), layout="constrained")
        ax = fig.subplots()
        handles = []
        by_dt = defaultdict(lambda: defaultdict(list))
        for p in pts:
            by_dt[p.dtype or "?"][p.n].append(p)
        for i, (dtp, byn) in enumerate(sorted(by_dt.items(), key=lambda kv: _dorder(kv[0]))):
            ns = sorted(byn)
            nvar = len({q.name.split("/")[1] for ps in byn.values() for q in ps})
            h, = ax.plot(ns, [min(q.time_ns for q in byn[n]) / 1e3 for n in ns], marker="D", linewidth=2.4,
                         color=DTYPE_COLOR.get(dtp, PALETTE[i % len(PALETTE)]),
                         label=f"Atlas model {dtp} (best of {nvar} variant(s) and tiles)")
            handles.append(h)
        for kind, style in (("variant", dict(linestyle="-", marker="o", linewidth=1.2)),
                            ("peer", dict(linestyle="--", marker="s", linewidth=1.2))):
            byk = defaultdict(lambda: defaultdict(list))
            for p in cpu.get(op, []):
                if p.kind == kind:
                    byk[p.dtype][p.n].append(p)
            for i, (dtp, byn) in enumerate(sorted(byk.items(), key=lambda kv: _dorder(kv[0]))):
                ns = sorted(byn)
                h, = ax.plot(ns, [min(q.time_ns for q in byn[n]) / 1e3 for n in ns], markersize=4,
                             color=DTYPE_COLOR.get(dtp, PALETTE[i % len(PALETTE)]), alpha=0.8,
                             label=f"CPU fastest {kind} {dtp}", **style)
                handles.append(h)
        _size_axis(ax)
        ax.set_yscale("log")
        _plain_log_y(ax)
        ax.set_ylabel("time per call (us, log)")
        ax.set_title(f"{op}: Atlas NPU cost model beside the CPU (time per call, lower is better)")
        fig.legend(handles=handles, loc="outside right upper", fontsize=8)
        figs.append(_save(fig, outdir, f"atlas_{op}", f"{op}: Atlas model and CPU",
                          "Thick lines with diamonds: modelled time of the Atlas kernel (fastest variant and tile "
                          "per size); thin lines: measured CPU time of the fastest variant (solid) and peer "
                          "(dashed) per size, any thread count. One colour per dtype.", "atlas"))
        for dtp, byn in sorted(by_dt.items(), key=lambda kv: _dorder(kv[0])):
            by_var = defaultdict(lambda: defaultdict(list))
            for ps in byn.values():
                for q in ps:
                    if q.tile:
                        by_var[q.name.split("/")[1]][q.n].append(q)
            cands = {v: d for v, d in by_var.items() if len({q.tile for ps in d.values() for q in ps}) >= 2}
            if not cands:
                continue
            v = min(cands, key=lambda v: geomean([min(q.time_ns for q in ps) for ps in cands[v].values()]))
            fig = Figure(figsize=(11, 6), layout="constrained")
            ax = fig.subplots()
            for i, n in enumerate(sorted(cands[v])):
                ps = sorted(cands[v][n], key=lambda p: p.tile)
                if len(ps) < 2:
                    continue
                ax.plot([p.tile for p in ps], [p.time_ns / 1e3 for p in ps], marker="o",
                        color=PALETTE[i % len(PALETTE)], label=f"n = {human_size(n)}")
            ax.set_xscale("log", base=2)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: human_size(int(round(x)))))
            ax.set_yscale("log")
            _plain_log_y(ax)
            ax.set_xlabel("tile length (elements, log)")
            ax.set_ylabel("modelled time per call (us, log)")
            ax.set_title(f"Atlas tile-length sweep: {v}")
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), title="size")
            figs.append(_save(fig, outdir, f"atlas_tiles_{_safe(v)}", f"tile sweep {v}",
                              f"Modelled time against tile length, one line per size, for {v}, the fastest of "
                              f"{len(cands)} swept Atlas variant(s) for {op} {dtp}; the lowest point of each "
                              "line is the best tile for that size.", "atlas"))
    return figs
