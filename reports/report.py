"""``report plot``: the figures and tables of one run, as a static HTML page."""

import datetime as dt
import os
from collections import defaultdict

from . import atomic, inputs, plots, stability
from .htmlutil import esc, page, table
from .names import OP_FORMS, human_size


def form_order(form):
    return OP_FORMS.index(form) if form in OP_FORMS else len(OP_FORMS)

CONTEXT_KEYS = ("actgrad_machine_id", "actgrad_cpu_model", "actgrad_git_commit", "actgrad_compiler",
                "actgrad_build_type", "actgrad_isa_targets", "actgrad_tiling_table", "date", "host_name",
                "num_cpus", "mhz_per_cpu", "library_build_type")


def _figure_html(f):
    return (f'<figure id="{esc(f.id)}"><a href="{esc(f.png)}"><img src="{esc(f.svg)}" alt="{esc(f.title)}" '
            f'loading="lazy"></a><figcaption><b>{esc(f.title)}</b>. {esc(f.caption)} '
            f'(<a href="{esc(f.png)}">PNG</a>, <a href="{esc(f.svg)}">SVG</a>)</figcaption></figure>')


def _best_table(points):
    """Per op form, dtype, threads and n: the fastest variant, its GB/s and % of bandwidth, the best peer
    (GELU erf and GELU tanh are rows of their own: ``names.Name.form``)."""
    best = {}
    peers = {}
    for p in points:
        if not (p.gbps and p.op and p.dtype):
            continue
        key = (p.form, p.dtype, p.thr, p.n)
        if p.kind == "variant" and (key not in best or p.gbps > best[key].gbps):
            best[key] = p
        elif (p.kind == "peer" and p.layout in (None, "contig")  # the variants run contiguous
              and (key not in peers or p.gbps > peers[key].gbps)):
            peers[key] = p
    rows = []
    for key in sorted(best, key=lambda k: (form_order(k[0]), plots._dorder(k[1]), k[2], k[3])):
        b = best[key]
        pe = peers.get(key)
        rows.append([b.form, b.dtype, b.thr, human_size(b.n), b.label, f"{b.gbps:.2f}",
                     "-" if b.pct is None else f"{b.pct:.0f}%",
                     pe.label if pe else "-", f"{pe.gbps:.2f}" if pe else "-",
                     f"{b.gbps / pe.gbps:.2f}x" if pe else "-"])
    return rows


def build(paths, out):
    """Read every input, then write the whole report directory at once."""
    inp = inputs.load_all(paths)
    notes = []
    for r in inp.runs:
        notes.extend(f"{os.path.basename(r.path)}: {n}" for n in r.notes)
    points = plots.collect(inp.runs, notes)
    with atomic.AtomicDir(out) as tmp:
        sections = {}
        skipped = []
        if inp.runs:
            sections["throughput"] = plots.throughput_figures(points, tmp)
            if not sections["throughput"]:
                skipped.append(("throughput", "no variant/peer/api benchmark with an op and a dtype in the runs"))
        else:
            skipped.append(("throughput", "no Google Benchmark JSON given"))
        if inp.tables:
            sections["table"] = [plots.heatmap_figure(p, t, tmp, i) for i, (p, t) in enumerate(inp.tables)]
        else:
            skipped.append(("tuned table heat map", "no tiling table given (pass tiling/tables/<machine>.json)"))
        pareto_rows = []
        if inp.accuracy and inp.runs:
            sections["pareto"], pareto_rows = plots.pareto_figures(points, inp.accuracy, tmp)
            if not sections["pareto"]:
                skipped.append(("accuracy against speed", "no variant is both in the accuracy list and measured"))
        else:
            skipped.append(("accuracy against speed",
                            "no accuracy results given (pass docs/accuracy.json)" if not inp.accuracy
                            else "no benchmark results given"))
        sections["atlas"] = plots.atlas_figures(points, tmp)
        if not sections["atlas"]:
            skipped.append(("Atlas NPU model", "no atlas/ benchmark in the runs"))
        stable = _stability(inp.runs, tmp)
        html = _index(paths, inp, points, sections, skipped, notes, pareto_rows, stable)
        with open(os.path.join(tmp, "index.html"), "w", encoding="utf-8") as f:
            f.write(html)
    nfig = sum(len(v) for v in sections.values())
    return os.path.join(out, "index.html"), nfig, skipped, notes


def _stability(runs, out_dir):
    """HTML of the stability tables of the merged runs (placements, processes), and stability.md
    beside index.html with the same tables; "" when no run is merged."""
    html, md = [], []
    for r in runs:
        if not r.merged:
            continue
        rows = stability.rows_of_run(r)
        if not rows:
            continue
        name = os.path.basename(r.path)
        flagged = sum(1 for row in rows if row[-1] != "no")
        said = (f"{len(rows)} api and peer benchmarks of {name}, "
                f"{r.context.get('actgrad_processes', 'one or more')} process(es); {flagged} with two states "
                "(docs/reports.md: the rule). Times per call; spreads are (max - min) / median.")
        html.append(f"<h3>{esc(name)}</h3><p>{esc(said)}</p>" + _stability_tables(rows, flagged))
        md.append(f"### {name}\n\n{said}\n\n" + stability.markdown(stability.STABILITY_HEADERS, rows))
    if not html:
        return ""
    with open(os.path.join(out_dir, "stability.md"), "w", encoding="utf-8") as f:
        f.write("## Stability over placements and processes\n\n" + "\n".join(md))
    return ('<h2 id="stability">Stability over placements and processes</h2>'
            '<p>The same tables as markdown: <a href="stability.md">stability.md</a>.</p>' + "".join(html))


def _stability_tables(rows, flagged, fold=30):
    """The table; a long one folded, its two-state rows (first in rows) shown above it."""
    def t(rs):
        return table(stability.STABILITY_HEADERS, rs, num_cols=(1, 2, 3, 5))
    if len(rows) <= fold:
        return t(rows)
    head = t(rows[:flagged]) if flagged else "<p>No benchmark has two states.</p>"
    return head + f"<details><summary>All {len(rows)} benchmarks</summary>{t(rows)}</details>"


def _index(paths, inp, points, sections, skipped, notes, pareto_rows, stable=""):
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    titles = {"throughput": "Throughput against size", "table": "Tuned table",
              "pareto": "Accuracy against speed", "atlas": "Atlas NPU cost model"}
    b = [f"<h1>actgrad benchmark report</h1>",
         f'<p class="muted">Generated {esc(now)} from {len(paths)} file(s).</p>', "<nav>"]
    b += [f'<a href="#{k}">{esc(v)}</a>' for k, v in titles.items() if sections.get(k)]
    b += ['<a href="#stability">Stability</a>'] if stable else []
    b += ['<a href="#best">Best per size</a>', '<a href="#inputs">Inputs</a>', "</nav>"]
    if skipped:
        b.append('<div class="note" id="skipped"><b>Not drawn:</b><ul>' +
                 "".join(f"<li>{esc(w)}: {esc(why)}</li>" for w, why in skipped) + "</ul></div>")
    for k, title in titles.items():
        figs = sections.get(k) or []
        if not figs:
            continue
        b.append(f'<h2 id="{k}">{esc(title)}</h2>')
        if k == "throughput":
            b.append("<p>" + " ".join(f'<a href="#{esc(f.id)}">{esc(f.title)}</a> ·' for f in figs)[:-2] + "</p>")
        b.extend(_figure_html(f) for f in figs)
        if k == "pareto" and pareto_rows:
            rows = [[r["op"], r["dtype"], r["variant"], f"{r['max_err']:.3g}",
                     "-" if r["max_ulp"] is None else r["max_ulp"], "yes" if r["shippable"] else "no",
                     f"{r['gbps']:.2f}", "yes" if r["front"] else ""] for r in pareto_rows]
            b.append("<details><summary>Accuracy and speed table</summary>" +
                     table(["op", "dtype", "variant", "max err", "max ulp", "shippable", "GB/s", "Pareto"],
                           rows, num_cols=(3, 4, 6)) + "</details>")
    if stable:
        b.append(stable)
    b.append('<h2 id="best">Best variant per size</h2>')
    rows = _best_table(points)
    if rows:
        b.append(table(["op", "dtype", "threads", "n", "fastest variant", "GB/s", "% of bandwidth",
                        "best peer", "peer GB/s", "speed-up"], rows, num_cols=(2, 3, 5, 6, 8, 9)))
    else:
        b.append("<p>No variant measured.</p>")
    b.append('<h2 id="inputs">Inputs</h2>')
    for r in inp.runs:
        ctx = r.context
        kinds = defaultdict(int)
        for x in r.benches.values():
            kinds[x.parsed.kind] += 1
        b.append(f"<h3>{esc(os.path.basename(r.path))}</h3>")
        b.append(table(["key", "value"], [[k, ctx[k]] for k in CONTEXT_KEYS if k in ctx] +
                       [["benchmarks", ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))]]))
    for p, t in inp.tables:
        b.append(f"<p>Tiling table <code>{esc(p)}</code>: machine {esc(t.get('machine_id'))}, "
                 f"{len(t['entries'])} entries.</p>")
    for p, a in inp.accuracy:
        b.append(f"<p>Accuracy results <code>{esc(p)}</code>: {len(a)} entries.</p>")
    if notes:
        b.append('<div class="note"><b>Notes</b><ul>' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul></div>")
    return page("actgrad benchmark report", "\n".join(b))
