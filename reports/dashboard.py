"""``report dashboard``: a static HTML site from the history database.

index.html            summary: open regressions (linked), every change point,
                      and every benchmark grouped by machine with its status
bench/<slug>.html     one page per benchmark: per machine (section id
                      m-<machine>) a plot of the per-commit median over
                      commits with the detected steps, and the numbers

Plots are inline SVG written here (no JavaScript, nothing fetched), so the
site opens from disk in any browser.
"""

import datetime as dt
import hashlib
import math
import os
import re
from collections import defaultdict

from . import atomic
from .errors import InputError
from .htmlutil import esc, page, table
from .names import parse as parse_name
from .changepoint import DEFAULT_ALPHA, DEFAULT_MIN_STEP, analyse_series

STATUS_OPEN = "open regression"


def slug(name):
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:90]
    return f"{s}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"


def machine_anchor(machine):
    return "m-" + re.sub(r"[^A-Za-z0-9_-]+", "_", machine)


def _unit(vmax):
    for u, s in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if vmax >= s:
            return u, s
    return "ns", 1.0


def _nice_ticks(lo, hi, n=5):
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0) * 0.1
    span = hi - lo
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=10 * mag)
    start = math.floor(lo / step + 1e-9)
    end = math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(start, max(end, start + 1) + 1)]


def _ok(v):
    return v is not None and math.isfinite(v)


def svg_chart(points, cps, title, metric_label="time", noise=(), excluded=()):
    """Inline SVG: values over commits, segment medians, change points, noise changes (purple),
    excluded points (grey crosses on the axis)."""
    W, H, L, R, T, B = 960, 380, 78, 24, 52, 96
    n = len(points)
    vals = [p.value for p in points]
    good = [v for v in vals if _ok(v)] or [1.0]
    unit, scale = _unit(max(good))
    ys = [v / scale if _ok(v) else None for v in vals]
    lo, hi = min(good) / scale, max(good) / scale
    pad = (hi - lo) * 0.08 or hi * 0.05 or 1.0
    ticks = _nice_ticks(max(0.0, lo - pad), hi + pad)
    y0, y1 = ticks[0], ticks[-1]

    def X(i):
        return L + (W - L - R) * (i / (n - 1) if n > 1 else 0.5)

    def Y(v):
        return T + (H - T - B) * (1 - (v - y0) / (y1 - y0))

    o = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" '
         f'role="img" aria-label="{esc(title)}" font-family="sans-serif" font-size="12">',
         f"<title>{esc(title)}</title>",
         f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="#fcfcfc" stroke="#999"/>']
    for t in ticks:
        o.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(t):.1f}" y2="{Y(t):.1f}" stroke="#e3e3e3"/>'
                 f'<text x="{L - 6}" y="{Y(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    o.append(f'<text x="16" y="{(T + H - B) / 2:.0f}" transform="rotate(-90 16 {(T + H - B) / 2:.0f})" '
             f'text-anchor="middle">{esc(metric_label)} ({unit}, median per commit)</text>')
    every = max(1, math.ceil(n / 40))
    for i, p in enumerate(points):
        if i % every == 0 or i == n - 1:
            x = X(i)
            o.append(f'<text x="{x:.1f}" y="{H - B + 14}" transform="rotate(-60 {x:.1f} {H - B + 14})" '
                     f'text-anchor="end" font-size="10">{esc(p.commit[:10])}</text>')
    o.append(f'<text x="{(L + W - R) / 2:.0f}" y="{H - 6}" text-anchor="middle">commit (oldest to newest)</text>')
    # segment medians
    bounds = [0] + [c.index for c in cps] + [n]
    for a, b in zip(bounds[:-1], bounds[1:]):
        seg = sorted(v for v in ys[a:b] if v is not None)
        if not seg:
            continue
        m = seg[len(seg) // 2] if len(seg) % 2 else (seg[len(seg) // 2 - 1] + seg[len(seg) // 2]) / 2
        o.append(f'<line class="level" x1="{X(a) - (3 if a else 0):.1f}" x2="{X(b - 1) + (3 if b < n else 0):.1f}" '
                 f'y1="{Y(m):.1f}" y2="{Y(m):.1f}" stroke="#f08c00" stroke-width="3" opacity="0.8"/>')
    for c in cps:
        x = (X(c.index - 1) + X(c.index)) / 2
        color = "#c62828" if c.change > 0 else "#2e7d32"
        o.append(f'<line class="changepoint" x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{H - B}" stroke="{color}" '
                 f'stroke-dasharray="6 4" stroke-width="2"/>'
                 f'<text x="{x + 4:.1f}" y="{T + 14}" fill="{color}" font-weight="bold">'
                 f'{esc(points[c.index].commit[:10])} {c.change * 100:+.1f}%</text>')
    for nc in noise:
        if nc.kind == "variance":
            x = (X(nc.index - 1) + X(nc.index)) / 2
            o.append(f'<line class="noisechange" x1="{x:.1f}" x2="{x:.1f}" y1="{T}" y2="{H - B}" stroke="#7b1fa2" '
                     f'stroke-dasharray="2 3" stroke-width="2"/><text x="{x + 4:.1f}" y="{T + 28}" fill="#7b1fa2">'
                     f'noise {nc.after / nc.before if nc.before else float("inf"):.1f}x</text>')
        else:
            x0, x1 = X(nc.index), X(nc.end - 1)
            o.append(f'<rect class="noisechange" x="{x0:.1f}" y="{T}" width="{max(x1 - x0, 2):.1f}" '
                     f'height="{H - T - B}" fill="#7b1fa2" opacity="0.07"/>'
                     f'<text x="{x0 + 4:.1f}" y="{T + 28}" fill="#7b1fa2">bimodal</text>')
    path, pen = [], "M"
    for i, v in enumerate(ys):
        if v is None:
            pen = "M"
            continue
        path.append(f"{pen}{X(i):.1f},{Y(v):.1f}")
        pen = "L"
    o.append(f'<path d="{" ".join(path)}" fill="none" stroke="#1565c0" stroke-width="1.5"/>')
    for i in excluded:
        x, y = X(i), H - B - 6
        o.append(f'<path class="excluded" d="M{x - 4:.1f},{y - 4:.1f}L{x + 4:.1f},{y + 4:.1f}M{x - 4:.1f},{y + 4:.1f}'
                 f'L{x + 4:.1f},{y - 4:.1f}" stroke="#777" stroke-width="2"><title>{esc(points[i].commit)}: '
                 f'no value ({esc(getattr(points[i], "status", "ok")) if getattr(points[i], "status", "ok") != "ok" else "not a number"}), '
                 f'left out</title></path>')
    for i, (p, v) in enumerate(zip(points, ys)):
        if v is None:
            continue
        o.append(f'<circle cx="{X(i):.1f}" cy="{Y(v):.1f}" r="3.5" fill="#1565c0">'
                 f"<title>{esc(p.commit)} {esc(p.date)}: {v:.4g} {unit}</title></circle>")
    o.append(f'<text x="{L}" y="20" font-size="13" font-weight="bold">{esc(title)}</text>')
    o.append(f'<g font-size="11"><line x1="{L}" x2="{L + 20}" y1="36" y2="36" stroke="#1565c0" '
             f'stroke-width="2"/><text x="{L + 25}" y="40">median per commit</text>'
             f'<line x1="{L + 150}" x2="{L + 170}" y1="36" y2="36" stroke="#f08c00" stroke-width="3"/>'
             f'<text x="{L + 175}" y="40">level between steps</text>'
             f'<line x1="{L + 310}" x2="{L + 310}" y1="29" y2="43" stroke="#c62828" stroke-dasharray="4 2" '
             f'stroke-width="2"/><text x="{L + 316}" y="40">step: slower (red) / faster (green)</text></g>')
    o.append("</svg>")
    return "\n".join(o)


NOT_ENOUGH = "not enough data"
RELIABLE_REPETITIONS = 9


def analyse(series, min_size=3, min_step=DEFAULT_MIN_STEP, alpha=DEFAULT_ALPHA, thresholds=None):
    """{(machine, name): dict(points, cps, noise, excluded, status, min_step, alpha)}; ``thresholds``
    (thresholds.Thresholds, --config) gives each benchmark its own min_step and alpha."""
    out = {}
    for key, pts in series.items():
        vals = [p.value for p in pts]
        if thresholds is not None:
            rule = thresholds.for_name(key[1])
            b_step, b_alpha = rule.threshold, rule.alpha
        else:
            b_step, b_alpha = min_step, alpha
        a = analyse_series(vals, min_size=min_size, min_step=b_step, alpha=b_alpha)
        cps = a.changes
        if len(pts) - len(a.excluded) < 2 * min_size:
            status = NOT_ENOUGH
        elif not cps:
            status = "stable"
        elif cps[-1].change > 0:
            status = STATUS_OPEN
        else:
            status = "improved"
        out[key] = dict(points=pts, cps=cps, noise=a.noise, excluded=a.excluded, status=status,
                        min_step=b_step, alpha=b_alpha)
    return out


def build(db, out, metric="real_time", min_size=3, min_step=DEFAULT_MIN_STEP, alpha=DEFAULT_ALPHA, machine=None,
          name_filter=None, thresholds=None):
    series = db.series(metric)
    if machine:
        series = {k: v for k, v in series.items() if k[0] == machine}
    if name_filter:
        rx = re.compile(name_filter)
        series = {k: v for k, v in series.items() if rx.search(k[1])}
    if not series:
        what = "the history is empty; record runs first (report record RESULTS.json)" if not db.count("runs") \
            else f"no '{metric}' series" + (f" for machine {machine!r}" if machine else "") + \
            (f" matching --filter {name_filter!r}" if name_filter else "")
        raise InputError(db.name, what)
    res = analyse(series, min_size=min_size, min_step=min_step, alpha=alpha, thresholds=thresholds)
    by_name = defaultdict(dict)
    for (m, name), r in res.items():
        by_name[name][m] = r
    with atomic.AtomicDir(out) as tmp:
        os.makedirs(os.path.join(tmp, "bench"))
        for name, per_m in by_name.items():
            with open(os.path.join(tmp, "bench", slug(name) + ".html"), "w", encoding="utf-8") as f:
                f.write(_bench_page(name, per_m, metric))
        with open(os.path.join(tmp, "index.html"), "w", encoding="utf-8") as f:
            f.write(_index(res, db, metric, min_size, min_step, alpha))
    opened = sum(1 for r in res.values() if r["status"] == STATUS_OPEN)
    return os.path.join(out, "index.html"), len(by_name), opened


def _fmt(ns):
    u, s = _unit(ns)
    return f"{ns / s:.4g} {u}"


def _bench_page(name, per_m, metric):
    b = [f'<p><a href="../index.html">&larr; summary</a></p>', f"<h1>{esc(name)}</h1>"]
    pn = parse_name(name)
    if pn.ours:
        b.append(f'<p class="muted">kind {esc(pn.kind)}, subject {esc(pn.subject)}'
                 + (f", n = {pn.n}" if pn.n else "") + (f", threads {pn.thr}" if pn.thr else "") + "</p>")
    b.append("<p>Machines: " + ", ".join(f'<a href="#{machine_anchor(m)}">{esc(m)}</a>' for m in sorted(per_m))
             + "</p>")
    for m in sorted(per_m):
        r = per_m[m]
        pts, cps = r["points"], r["cps"]
        cls = "bad" if r["status"] == STATUS_OPEN else "good" if r["status"] == "improved" else ""
        b.append(f'<section id="{machine_anchor(m)}" class="machine"><h2>machine {esc(m)}</h2>')
        b.append(f'<p>Status: <span class="{cls}">{esc(r["status"])}</span>; {len(pts)} commits.</p>')
        b.append(svg_chart(pts, cps, f"{name} on {m}", metric, r["noise"], r["excluded"]))
        if cps:
            b.append(table(["first commit of the new level", "date", "before", "after", "change", "p (adjusted)"],
                           [[pts[c.index].commit, pts[c.index].date, _fmt(c.before), _fmt(c.after),
                             f"{c.change * 100:+.1f}%", f"{c.p_value:.2g}"] for c in cps], num_cols=(2, 3, 4, 5)))
        if r["noise"]:
            b.append('<h3 class="noise">Noise changed (not a regression)</h3>' +
                     table(["from commit", "to commit", "what"],
                           [[pts[nc.index].commit, pts[nc.end - 1].commit if nc.kind == "bimodal" else "",
                             nc.describe()] for nc in r["noise"]]))
        if r["excluded"]:
            b.append(f'<p class="excluded muted">{len(r["excluded"])} commit(s) without a value (failed or not a '
                     "number), left out of the analysis and marked &times; on the axis: " +
                     ", ".join(esc(pts[i].commit[:10]) for i in r["excluded"]) + ".</p>")
        b.append("<details><summary>values per commit</summary>" +
                 table(["commit", "date", metric, "repetitions"],
                       [[p.commit, p.date, _fmt(p.value) if _ok(p.value) else
                         f"excluded ({p.status if getattr(p, 'status', 'ok') != 'ok' else 'no value'})", p.samples]
                        for p in pts], num_cols=(2, 3)) +
                 "</details></section>")
    return page(name, "\n".join(b))


def latest_change(res, machine):
    """(geomean, low, high, n, not_enough): the latest commit against the one before it, over the
    benchmarks of a machine measured in both (95 % CI on the log ratios); not_enough counts those
    whose latest commit has fewer than RELIABLE_REPETITIONS repetitions."""
    from .stats import geomean_ci
    ratios, few = [], 0
    for (m, _), r in res.items():
        pts = [p for p in r["points"] if _ok(p.value)]
        if m != machine or len(pts) < 2 or pts[-1].commit != r["points"][-1].commit:
            continue
        ratios.append(pts[-1].value / pts[-2].value)
        few += pts[-1].samples < RELIABLE_REPETITIONS
    g, lo, hi = geomean_ci(ratios)
    return g, lo, hi, len(ratios), few


def _latest_summary(res, machines):
    rows = []
    for m in machines:
        g, lo, hi, n, few = latest_change(res, m)
        if g is None:
            rows.append([esc(m), "-", "-", "0", ""])
            continue
        ci = f"{(lo - 1) * 100:+.1f}% to {(hi - 1) * 100:+.1f}%" if lo is not None else NOT_ENOUGH
        rows.append([esc(m), f"{(g - 1) * 100:+.2f}%", ci, str(n),
                     f'<span class="muted">{few} with fewer than {RELIABLE_REPETITIONS} repetitions: '
                     f"{NOT_ENOUGH}</span>" if few else ""])
    return ('<h2 id="latest">Latest commit against the one before</h2>' +
            table(["machine", "geometric mean of time ratios", "95 % confidence interval", "benchmarks", ""],
                  rows, raw=True, num_cols=(1, 2, 3), cls="latest-summary"))


def _index(res, db, metric, min_size, min_step, alpha):
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    machines = sorted({m for m, _ in res})
    nruns = db.count("runs")
    opened = sorted(((k, r) for k, r in res.items() if r["status"] == STATUS_OPEN),
                    key=lambda kr: -kr[1]["cps"][-1].change)
    b = ["<h1>actgrad performance dashboard</h1>",
         f'<p class="muted">Generated {esc(now)} from {nruns} recorded run(s), {len(machines)} machine(s), '
         f"{len({n for _, n in res})} benchmark(s). Metric: {esc(metric)} (median per commit). A step is flagged "
         f"where a Mann-Whitney U test between the levels before and after (Bonferroni-adjusted p &lt; {alpha:g}) "
         f"and a change of at least {min_step * 100:g}% agree, with at least {min_size} commits on each side; "
         "single outliers are not steps.</p>",
         "<nav>" + "".join(f'<a href="#{machine_anchor(m)}">{esc(m)}</a>' for m in machines) + "</nav>",
         _latest_summary(res, machines),
         f'<h2 id="open">Open regressions ({len(opened)})</h2>']
    if opened:
        rows = []
        for (m, name), r in opened:
            c = r["cps"][-1]
            href = f"bench/{slug(name)}.html#{machine_anchor(m)}"
            rows.append([f'<a class="regression" href="{esc(href)}">{esc(name)}</a>', esc(m),
                         esc(r["points"][c.index].commit), esc(r["points"][c.index].date),
                         f"{c.change * 100:+.1f}%", esc(_fmt(c.before)) + " &rarr; " + esc(_fmt(c.after)),
                         f"{c.p_value:.2g}"])
        b.append(table(["benchmark", "machine", "step at commit", "date", "change", "level", "p"], rows,
                       num_cols=(4, 5, 6), raw=True, cls="open-regressions"))
    else:
        b.append('<p class="good" id="no-open">No open regression.</p>')
    allcps = [(k, r, c) for k, r in res.items() for c in r["cps"]]
    b.append(f'<h2 id="changes">All detected steps ({len(allcps)})</h2>')
    if allcps:
        allcps.sort(key=lambda t: (t[0][0], t[1]["points"][t[2].index].order, t[0][1]))
        b.append(table(["benchmark", "machine", "commit", "change"],
                       [[f'<a href="bench/{esc(slug(n))}.html#{machine_anchor(m)}">{esc(n)}</a>', esc(m),
                         esc(r["points"][c.index].commit),
                         f'<span class="{"bad" if c.change > 0 else "good"}">{c.change * 100:+.1f}%</span>']
                        for (m, n), r, c in allcps], raw=True, num_cols=(3,)))
    else:
        b.append("<p>None.</p>")
    fails = db.failures()
    if fails:
        b.append(f'<h2 id="failed">Failed commits ({len(fails)})</h2>')
        b.append(table(["machine", "commit", "date", "status"],
                       [[esc(m), esc(c), esc(d), f'<span class="bad">{esc(st)}</span>'] for m, c, d, _, st in fails],
                       raw=True, cls="failed-commits"))
    allnoise = [(k, r, nc) for k, r in res.items() for nc in r["noise"]]
    b.append(f'<h2 id="noise">Noise changes ({len(allnoise)})</h2>')
    b.append('<p class="muted">The spread of a benchmark changed (variance) or its values sit at two levels at '
             "random (bimodal): not a regression, but its figures are less reliable there.</p>")
    if allnoise:
        allnoise.sort(key=lambda t: (t[0][0], t[0][1], t[2].index))
        b.append(table(["benchmark", "machine", "kind", "from commit", "what"],
                       [[f'<a href="bench/{esc(slug(n))}.html#{machine_anchor(m)}">{esc(n)}</a>', esc(m),
                         esc(nc.kind), esc(r["points"][nc.index].commit), esc(nc.describe())]
                        for (m, n), r, nc in allnoise], raw=True, cls="noise-changes"))
    else:
        b.append("<p>None.</p>")
    for m in machines:
        keys = sorted(n for mm, n in res if mm == m)
        b.append(f'<h2 id="{machine_anchor(m)}">Machine {esc(m)} ({len(keys)} benchmarks)</h2>')
        rows = []
        for n in keys:
            r = res[(m, n)]
            cls = "bad" if r["status"] == STATUS_OPEN else "good" if r["status"] == "improved" else ""
            last = r["points"][-1]
            flag = ' <span class="noise">noise changed</span>' if r["noise"] else ""
            rows.append([f'<a href="bench/{esc(slug(n))}.html#{machine_anchor(m)}">{esc(n)}</a>',
                         str(len(r["points"])), esc(last.commit),
                         (esc(_fmt(last.value)) if _ok(last.value) else "no value")
                         + (f' <span class="muted">({NOT_ENOUGH}: {last.samples} repetitions)</span>'
                            if _ok(last.value) and last.samples < RELIABLE_REPETITIONS else ""),
                         f'<span class="{cls}">{esc(r["status"])}</span>{flag}'])
        b.append(table(["benchmark", "commits", "latest commit", "latest", "status"], rows, raw=True,
                       num_cols=(1, 3), cls="machine-benchmarks"))
    return page("actgrad performance dashboard", "\n".join(b))
