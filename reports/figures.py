"""``report figures RESULTS.json``: the figures of a ``scripts/bench`` run as markdown tables.

One caption names the machine (CPU model, machine id, cores), the date, the
commit, the tiling table and the peers with their versions (``actgrad_peers``)
of the run, from the file's context; then per section:

- ``readme``: the shipping path (``api/<op>.<dtype>.contig.phase2``) of every
  op form (GELU erf ``gelu_bwd`` and GELU tanh ``gelu_bwd_tanh`` apart), float
  dtype, n in 4K, 64K, 1M, 16M (every size measured when the run has none of
  them) and thread count measured: its median time, its share of the in-run
  limit, the best peer (name and version), that peer's median time and the
  speed-up (the peer's time / ours: above 1, ours is faster); "-" where no
  peer has the case;
- ``performance``: the shipping path at every size and thread count, the
  views (strided, broadcast, transposed) against the contiguous path and
  against PyTorch on the same view, phase one, the in-run limits (roof) and
  the count of speed goals met.

Figures per benchmark are medians over all its samples (every placement and
process, ``gbench.Bench.center``). The share of the in-run limit, the best
peer (the fastest peer of the same op form, dtype and layout at the same n and
threads; no other dtype stands in) and the goal verdicts are bench/goals.py's,
the one home of those rules and targets.

``--write FILE`` replaces the block between ``<!-- figures:begin SECTION -->``
and ``<!-- figures:end -->`` in FILE (docs/performance.md, README.md), so the
same command regenerates it.
"""

import importlib.util
import os
import re

from . import atomic, gbench
from .errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOALS_PY = os.path.join(ROOT, "bench", "goals.py")
SECTIONS = ("readme", "performance")
BEGIN = "<!-- figures:begin {} -->"
END = "<!-- figures:end -->"
README_SIZES = (4 << 10, 64 << 10, 1 << 20, 16 << 20)


def fmt_time(ns):
    from .compare import fmt_time as fmt      # imported when used: the parser imports this module
    return fmt(ns)


def markdown(headers, rows):
    from .stability import markdown as md
    return md(headers, rows)


def goals_module():
    """bench/goals.py (standard library only) as a module: limits, peers, goals."""
    spec = importlib.util.spec_from_file_location("actgrad_bench_goals", GOALS_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Figures:
    """One results file: the reports' parsed run (times, context) beside goals.py's index."""

    def __init__(self, path):
        self.path = str(path)
        self.run = gbench.load(path)          # InputError on a missing or bad file
        self.goals = goals_module()
        try:
            context, results = self.goals.load([path])
        except self.goals.BadInput as e:
            raise InputError(path, str(e))
        self.F = self.goals.Figures(self.goals.index(results), None, context)
        roof = self.goals.ROOF                # goals.py's in-run limits: best roof/stream_* per program
        roof.clear()
        for binary, entries in self.F.idx["roof"].items():
            r = roof.setdefault(binary, {})
            for (subject, n, thr), e in entries.items():
                if subject.startswith("stream_"):
                    r[(n, thr)] = max(r.get((n, thr), 0.0), e["median"]["bytes_per_second"])
        self.has_peers = bool(self.F.idx["peer"])
        self.cells = sorted({(s.split(".")[0], s.split(".")[1], n, t) for (s, n, t) in self.F.idx["api"]
                             if s.endswith(".contig.phase2")}, key=self._order)
        if not self.cells:
            raise InputError(path, "no api/<op>.<dtype>.contig.phase2 benchmark: not a scripts/bench results "
                                   "file (or run without the API benchmarks)")

    def _order(self, k):
        op, dt, n, thr = k[:4]
        return (self.goals.form_rank(op), self.goals.dtype_rank(dt), n, thr) + tuple(k[4:])

    # -- the pieces of a row -------------------------------------------------------------------

    def time(self, name):
        """Median wall time (ns) of a benchmark over every placement and process."""
        b = self.run.benches.get(name)
        return b.center("real_time") if b is not None else None

    def pct(self, e):
        return self.goals.pct(e) if e else None

    def peer_ratio(self, op, dt, n, thr, layout="contig"):
        """(label of the best peer, ours / it in items/s) on the same layout, or (None, None)."""
        ours = self.F.api(op, dt, n, thr, layout=layout)
        if layout == "contig":
            label, peer = self.F.best_peer(op, dt, n, thr)
        else:
            label, peer = self.F.best_peer(op, dt, n, thr, only="torch", layout=layout)
        if not ours or not peer:
            return None, None
        return label, ours["median"]["items_per_second"] / peer["median"]["items_per_second"]

    # -- tables --------------------------------------------------------------------------------

    def caption(self, section):
        c = self.run.context
        cpu = c.get("actgrad_cpu_model") or "CPU model unknown"
        cores = c.get("num_cpus")
        date = str(c.get("date", "no date"))[:10]
        table = re.sub(r"\s*\((?:compiled|env):.*\)\s*$", "", str(c.get("actgrad_tiling_table", "none")))
        # Whose table it is and its cells with candidates it never measured (tiling/freshness.h).
        freshness = f" ({c['actgrad_tiling_table_freshness']})" if c.get("actgrad_tiling_table_freshness") else ""
        where = f"{cpu} (machine id `{c.get('actgrad_machine_id', '?')}`" + \
                (f", {cores} cores)" if cores else ")")
        places = c.get("actgrad_placements")
        procs = c.get("actgrad_processes", "1")
        rel = os.path.relpath(os.path.abspath(self.path), ROOT)
        if rel.startswith(".."):
            rel = self.path
        versions = c.get("actgrad_peers")
        peers = ((f"peers {versions}" if versions and versions != "none" else "peers (versions not recorded)")
                 if self.has_peers else "no peers (the programs were built without PyTorch and oneDNN)")
        pinned = any(e.get("cpus") for e in self.F.idx["api"].values())
        text = (f"**Run of {date}** on {where}; commit `{c.get('actgrad_git_commit', '?')}`, "
                f"tiling table `{table}`{freshness}, {peers}; medians over "
                f"{'placements ' + places if places else 'the placements'} and {procs} process(es)"
                + ("; each thread count ran in its own process pinned to that many CPUs" if pinned else "") + ". ")
        if section == "readme":
            text += ("ours: median time of a call's phase two (`api/<op>.<dtype>.contig.phase2`); best peer: the "
                     "fastest peer of the same op form and dtype at the same n and threads"
                     + ("" if self.has_peers else " (none in this run)") +
                     "; speed-up: the best peer's time / ours (above 1: ours is faster); \"-\": no peer has "
                     "the case. ")
        return text + f"Generated by `./scripts/report figures {rel} --section {section}`.\n"

    def contig_table(self, cells):
        headers = ["op", "dtype", "n", "threads", "ours (median)", "GB/s", "% of in-run limit"] + \
                  (["best peer", "ours / peer"] if self.has_peers else [])
        rows = []
        for op, dt, n, thr in cells:
            e = self.F.api(op, dt, n, thr)
            pct = self.pct(e)
            row = [op, dt, self.goals.size_label(n), str(thr),
                   fmt_time(self.time(f"api/{op}.{dt}.contig.phase2/n:{n}/thr:{thr}")),
                   f"{self.goals.gbps(e):.1f}", "-" if pct is None else f"{pct:.0f} %"]
            if self.has_peers:
                label, ratio = self.peer_ratio(op, dt, n, thr)
                row += [label or "-", "-" if ratio is None else f"{ratio:.2f}x"]
            rows.append(row)
        return markdown(headers, rows)

    def views_table(self):
        keys = sorted({(s.split(".")[0], s.split(".")[1], n, t, s.split(".")[2])
                       for (s, n, t) in self.F.idx["api"]
                       if s.endswith(".phase2") and s.split(".")[2] != "contig"}, key=self._order)
        headers = ["op", "dtype", "layout", "n", "threads", "ours (median)", "% of contiguous"] + \
                  (["ours / torch (same view)"] if self.has_peers else [])
        rows = []
        for op, dt, n, thr, layout in keys:
            e = self.F.api(op, dt, n, thr, layout=layout)
            contig = self.F.api(op, dt, n, thr)
            of = (f"{100 * e['median']['items_per_second'] / contig['median']['items_per_second']:.0f} %"
                  if contig else "-")
            row = [op, dt, layout, self.goals.size_label(n), str(thr),
                   fmt_time(self.time(f"api/{op}.{dt}.{layout}.phase2/n:{n}/thr:{thr}")), of]
            if self.has_peers:
                _, ratio = self.peer_ratio(op, dt, n, thr, layout)
                row.append("-" if ratio is None else f"{ratio:.2f}x")
            rows.append(row)
        return markdown(headers, rows) if rows else ""

    def phase1_table(self):
        keys = sorted({(s.split(".")[0], s.split(".")[1], n, t) for (s, n, t) in self.F.idx["api"]
                       if s.endswith(".contig.phase1")}, key=self._order)
        sizes = sorted({k[2] for k in keys})
        if not keys:
            return ""
        by = {(op, dt): {} for op, dt, _, _ in keys}
        for op, dt, n, thr in keys:
            by[(op, dt)][n] = fmt_time(self.time(f"api/{op}.{dt}.contig.phase1/n:{n}/thr:{thr}"))
        headers = ["op", "dtype"] + [f"phase one, n {self.goals.size_label(n)}" for n in sizes]
        return markdown(headers, [[op, dt] + [v.get(n, "-") for n in sizes] for (op, dt), v in by.items()])

    def roof_table(self):
        """The API program's roof/stream_* medians (else every program's) and the limit goals.py takes."""
        lim = {}
        roofs = self.F.idx["roof"]
        for binary, entries in roofs.items():
            if self._api_binary() in roofs and binary != self._api_binary():
                continue
            for (s, n, thr), e in entries.items():
                if s.startswith("stream_"):
                    lim.setdefault((n, thr), {}).setdefault(s, []).append(self.goals.gbps(e))
        if not lim:
            return ""
        kinds = sorted({s for v in lim.values() for s in v})
        headers = ["n", "threads"] + [f"{s} GB/s" for s in kinds] + ["in-run limit GB/s"]
        rows = []
        for (n, thr) in sorted(lim):
            best = [max(lim[(n, thr)][s]) if s in lim[(n, thr)] else None for s in kinds]
            limit = self.goals.limit_of(self._api_binary(), n, thr)
            rows.append([self.goals.size_label(n), str(thr)] + ["-" if b is None else f"{b:.1f}" for b in best] +
                        ["-" if limit is None else f"{limit / 1e9:.1f}"])
        return markdown(headers, rows)

    def _api_binary(self):
        e = next(iter(self.F.idx["api"].values()))
        return e.get("binary", "")

    def goals_table(self):
        rows = self.goals.goal_rows(self.F)
        groups = {}
        for r in rows:
            g = groups.setdefault(r["goal"], {"met": 0, "of": 0, "unmeasured": 0, "close": 0, "misses": []})
            if r["verdict"] in ("no peer measured", "not measured"):
                g["unmeasured"] += 1
                continue
            g["of"] += 1
            if r["verdict"] == "met":
                g["met"] += 1
            else:
                g["misses"].append(f"{r['op']} {r['dtype']} {self.goals.size_label(r['n'])} t{r['thr']}")
            g["close"] += bool(r["close"])
        if not groups:
            return ""
        headers = ["goal", "met", "of", "not measured (no peer)", "verdicts within the noise", "not met"]
        body = [[g, str(v["met"]), str(v["of"]), str(v["unmeasured"]), str(v["close"]),
                 ", ".join(v["misses"][:8]) + (f", ... ({len(v['misses'])} in all)" if len(v["misses"]) > 8 else "")
                 or "-"] for g, v in groups.items()]
        return markdown(headers, body)

    def readme_table(self):
        """One row per op form, float dtype, README size and thread count: ours, its share of the
        in-run limit, the best peer, its time and the speed-up (the peer's time / ours)."""
        headers = ["op", "dtype", "n", "threads", "ours", "% of in-run limit", "best peer", "peer",
                   "speed-up"]
        rows = []
        for op, dt, n, thr in self.readme_cells():
            e = self.F.api(op, dt, n, thr)
            pct = self.pct(e)
            ours = self.time(f"api/{op}.{dt}.contig.phase2/n:{n}/thr:{thr}")
            label, peer = self.F.best_peer(op, dt, n, thr)
            theirs = self.time(f"peer/{peer['subject']}/n:{n}/thr:{thr}") if peer else None
            rows.append([op, dt, self.goals.size_label(n), str(thr), fmt_time(ours),
                         "-" if pct is None else f"{pct:.0f} %", label or "-",
                         "-" if theirs is None else fmt_time(theirs),
                         f"{theirs / ours:.2f}x" if theirs and ours else "-"])
        return markdown(headers, rows)

    # -- sections ------------------------------------------------------------------------------

    def readme_cells(self):
        """The float-dtype cells at the README sizes (all sizes when the run has none of them)."""
        floats = [k for k in self.cells if k[1] in self.goals.FLOAT_DTYPES]
        return [k for k in floats if k[2] in README_SIZES] or floats

    def section(self, name):
        if name == "readme":
            return self.caption(name) + "\n" + self.readme_table()
        parts = [self.caption(name),
                 "Shipping path, contiguous tensors (`api/<op>.<dtype>.contig.phase2`):\n\n" +
                 self.contig_table(self.cells)]
        views = ("Views (`api/<op>.<dtype>.<layout>.phase2`): share of the contiguous path's items/s" +
                 (", and against PyTorch on the same view:" if self.has_peers else ":"))
        for title, table in ((views, self.views_table()),
                             ("Phase one (`aclnnXxxGetWorkspaceSize` + `aclDestroyAclOpExecutor`), "
                              "one thread:", self.phase1_table()),
                             ("In-run limits (the API program's `roof/stream_*` medians; the limit for T "
                              "threads is the best over t <= T):", self.roof_table()),
                             ("Speed goals (bench/goals.py) met in this run:", self.goals_table())):
            if table:
                parts.append(title + "\n\n" + table)
        return "\n".join(parts)


def replace_block(path, section, text):
    """FILE with the block between the section's begin marker and the next end marker replaced."""
    try:
        with open(path, encoding="utf-8") as f:
            doc = f.read()
    except FileNotFoundError:
        raise InputError(path, "no such file (--write replaces a marked block in an existing file)")
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(path, f"cannot read: {getattr(e, 'strerror', None) or e}")
    begin = BEGIN.format(section)
    i = doc.find(begin)
    j = doc.find(END, i + len(begin)) if i >= 0 else -1
    if i < 0 or j < 0:
        raise InputError(path, f"no '{begin}' ... '{END}' block to replace")
    return doc[:i] + begin + "\n" + text.rstrip("\n") + "\n" + doc[j:]


def run(args):
    fig = Figures(args.file)
    text = fig.section(args.section)
    if args.write:
        atomic.write_text(args.write, replace_block(args.write, args.section, text))
        print(f"wrote the {args.section} figures of {args.file} into {args.write}")
    else:
        print(text, end="")
    return 0
