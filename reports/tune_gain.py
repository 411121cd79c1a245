"""``report tune-gain GAIN.json``: what a machine's own table gained over the table it fell back to.

GAIN.json is what ``actgrad-tune --verify TABLE --against fallback --verify-json GAIN.json``
writes (``./scripts/tune`` runs it): per cell, the baseline's choice (the
fallback table's, or with ``--against FILE`` that table's) and the new
table's, measured with interleaved samples in one run, their medians, the
speed-up (baseline time / new time) and the tuner's verdict at its
significance level (faster, slower, n.s. or same choice). A table of an
accuracy class other than the rule (its ``accuracy_class``) is said so: its
ratios under 1 are the price of exactness.

Prints (or ``--md FILE`` writes) a markdown table, one row per op, dtype
(GELU formula) and layout (``--merge-layouts``: per op and dtype, the
geometric mean over the layouts), one column per size octave (labelled by its lower bound: 64K is [64K, 128K)), and ``--plot FILE.png`` draws
the same as a heat map. Bad input (missing file, not JSON, rows without the
fields) exits 2 naming the file; outputs are written atomically.
"""

import json
import math
import os
from collections import OrderedDict

from . import atomic
from .errors import InputError
from .names import human_size
from .stats import geomean

ROW_FIELDS = ("op", "dtype", "gelu_approx", "layout", "octave", "n", "entry", "base", "same")
MARKS = {"faster": "", "slower": " (slower)", "n.s.": " (n.s.)", "same": " (same)"}


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(path, f"not JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), list):
        raise InputError(path, "not an actgrad-tune --verify-json file (no 'rows' list)")
    for i, r in enumerate(doc["rows"]):
        missing = [k for k in ROW_FIELDS if not isinstance(r, dict) or k not in r]
        if missing:
            raise InputError(path, f"row {i}: missing {', '.join(missing)}")
        if "note" not in r and not all(isinstance(r.get(k), (int, float)) and r[k] > 0
                                       for k in ("entry_ns", "base_ns", "speedup")):
            raise InputError(path, f"row {i}: entry_ns, base_ns and speedup must be positive numbers")
    return doc


def group_of(r, layouts=True):
    formula = f" {r['gelu_approx']}" if r["op"] == "gelu_bwd" else ""
    return f"{r['op']} {r['dtype']}{formula}" + (f" {r['layout']}" if layouts else "")


def grid(doc, layouts=True):
    """(groups in file order, sizes ascending, {(group, octave): [rows]})."""
    cells, groups, octaves = {}, OrderedDict(), set()
    for r in doc["rows"]:
        g = group_of(r, layouts)
        groups[g] = True
        octaves.add(r["octave"])
        cells.setdefault((g, r["octave"]), []).append(r)
    return list(groups), sorted(octaves), cells


def _cell_text(rows):
    """One row: its speed-up and verdict; several (layouts merged): their geometric mean and counts."""
    if not rows:
        return ""
    measured = [r for r in rows if "note" not in r]
    if not measured:
        return "not measured"
    if len(rows) == 1:
        return f"{measured[0]['speedup']:.2f}x{MARKS.get(measured[0].get('verdict'), '')}"
    slower = sum(1 for r in measured if r.get("verdict") == "slower")
    return f"{geomean([r['speedup'] for r in measured]):.2f}x" + (f" ({slower} slower)" if slower else "")


def markdown(doc, layouts=True):
    groups, octaves, cells = grid(doc, layouts)
    measured = [r for r in doc["rows"] if "note" not in r]
    count = {v: sum(1 for r in measured if r.get("verdict") == v) for v in MARKS}
    lines = [
        f"Gain of this machine's table over {doc.get('baseline', 'the fallback')}: baseline time / new time "
        f"(> 1: the new table is faster), medians of interleaved samples in one run. "
        f"Machine {doc.get('machine_id', '?')} ({doc.get('cpu_model', '?')}), {doc.get('date', '?')}, "
        f"table {doc.get('table', '?')}; verdicts at p < {doc.get('alpha', 0.05)} (one-sided U tests).",
        "",
        "| op dtype" + (" layout" if layouts else "") + " | " + " | ".join(human_size(1 << k) for k in octaves) +
        " | geomean |",
        "|---|" + "---:|" * (len(octaves) + 1),
    ]
    if doc.get("accuracy_class", "rule") != "rule":
        lines[0] += (f" The new table is of accuracy class {doc['accuracy_class']}: where the baseline's choice is "
                     f"outside that class, a ratio under 1 is the price of exactness.")
    if not layouts:
        lines[0] += " Layouts merged: the geometric mean of a cell's layouts, and how many were significantly slower."
    for g in groups:
        row = [cells.get((g, k)) for k in octaves]
        ups = [r["speedup"] for rs in row if rs for r in rs if "note" not in r]
        mean = f"{geomean(ups):.2f}x" if ups else ""
        lines.append(f"| {g} | " + " | ".join(_cell_text(r) for r in row) + f" | {mean} |")
    if measured:
        lines += ["", f"Overall: {geomean([r['speedup'] for r in measured]):.3f}x over {len(measured)} cells; "
                  f"{count['faster']} significantly faster, {count['slower']} significantly slower, "
                  f"{count['n.s.']} not significant, {count['same']} the same choice."]
    return "\n".join(lines) + "\n"


def plot(doc, path):
    import matplotlib
    matplotlib.use("Agg")
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    groups, octaves, cells = grid(doc)
    values = [[cells[(g, k)][0]["speedup"] if (g, k) in cells and "note" not in cells[(g, k)][0] else math.nan
               for k in octaves] for g in groups]
    spread = max([abs(math.log(v)) for row in values for v in row if v == v] + [math.log(1.05)])
    fig = Figure(figsize=(2 + 1.1 * len(octaves), 1 + 0.28 * len(groups)))
    ax = fig.add_subplot()
    im = ax.imshow(values, cmap="RdBu", norm=LogNorm(math.exp(-spread), math.exp(spread)), aspect="auto")
    ax.set_xticks(range(len(octaves)), [human_size(1 << k) for k in octaves])
    ax.set_yticks(range(len(groups)), groups, fontsize=7)
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            if v == v:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=6)
    ax.set_title(f"{doc.get('machine_id', '?')}: own table vs {doc.get('baseline', 'fallback')}", fontsize=8)
    bar = fig.colorbar(im, ax=ax, label="baseline time / new time")
    ticks = [t for t in (0.25, 0.5, 0.8, 1, 1.25, 2, 4) if math.exp(-spread) <= t <= math.exp(spread)]
    bar.set_ticks(ticks, labels=[f"{t:g}x" for t in ticks])
    bar.minorticks_off()
    fig.tight_layout()
    from io import BytesIO
    buf = BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    atomic.write_bytes(path, buf.getvalue())


def run(a):
    doc = load(a.gain)
    text = markdown(doc, layouts=not a.merge_layouts)
    if a.md:
        atomic.write_text(a.md, text)
    else:
        print(text, end="")
    if a.plot:
        plot(doc, a.plot)
        print(f"wrote {os.path.abspath(a.plot)}")
    return 0
