"""Google Benchmark JSON, any version our users have.

Handles
- current output (>= 1.5): ``run_name``, ``run_type`` ("iteration" or
  "aggregate"), ``aggregate_name`` (mean, median, stddev, cv, or a user
  statistic), ``aggregate_unit`` ("time" or "percentage"), ``repetition_index``;
- older output without ``run_type``/``run_name``: aggregates are recognised by
  the name suffix ``_mean``, ``_median``, ``_stddev`` (``_cv``), repetitions by
  repeated names;
- files written with ``--benchmark_report_aggregates_only`` (no iteration
  rows) or ``--benchmark_display_aggregates_only`` (both kinds);
- time units ns, us, ms, s (times are converted to nanoseconds);
- rows with ``error_occurred`` or ``skipped`` are left out (with a note).

Placements and processes (docs/conventions.md): a name's ``/place:<k>``
segment and a row's ``actgrad_process`` (scripts/bench merges several process
runs into one file) say where a sample was measured; they are samples of ONE
benchmark. A Bench is keyed by the name without ``/place:k``; its samples are
the iteration rows of every placement and process, each with its ``Where``.
Files without either are one placement (None) and one process (0).
"""

import gzip
import json
import math
import os
import re
import statistics
import sys
import zlib
from dataclasses import dataclass, field

from . import names as names_mod
from .errors import InputError

TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
METRICS = ("real_time", "cpu_time", "bytes_per_second", "items_per_second", "pct_of_bandwidth")
TIME_METRICS = ("real_time", "cpu_time")
MAX_DEPTH = 64          # JSON nesting we accept; Google Benchmark's is 3, a tiling table's 3
_AGG_SUFFIX = re.compile(r"^(?P<base>.+)_(?P<agg>mean|median|stddev|cv)$")


@dataclass(frozen=True)
class Where:
    """Where one sample (or one group of aggregates) was measured."""
    placement: int = None   # k of the name's /place:k; None when the name has none
    process: int = 0        # the row's actgrad_process (0 in a one-process file)
    binary: str = ""        # the row's actgrad_binary (scripts/bench: which program)


@dataclass
class Bench:
    """All rows of one benchmark (one run_name without /place:k) in one file."""
    name: str
    parsed: names_mod.Name
    samples: dict = field(default_factory=dict)      # metric -> [values] (iteration rows)
    where: dict = field(default_factory=dict)        # metric -> [Where], aligned with samples
    aggregates: dict = field(default_factory=dict)   # aggregate name -> {metric: value}, median over groups
    group_aggregates: dict = field(default_factory=dict)   # Where -> {aggregate name: {metric: value}}
    repetitions: int = None
    threads: int = None

    def center(self, metric="real_time"):
        """Median of all samples (every placement and process), else the median
        aggregate (the median of the per-placement medians), else the mean."""
        vals = self.samples.get(metric)
        if vals:
            return statistics.median(vals)
        for agg in ("median", "mean"):
            v = self.aggregates.get(agg, {}).get(metric)
            if v is not None:
                return v
        return None

    def values(self, metric="real_time"):
        return list(self.samples.get(metric, []))

    def has(self, metric):
        return bool(self.samples.get(metric)) or any(metric in a for a in self.aggregates.values())

    def sample_count(self, metric="real_time"):
        """Samples behind the center: the iteration rows, else repetitions x aggregate groups."""
        return len(self.samples.get(metric, [])) or (self.repetitions or 0) * len(self.group_aggregates)

    def cells(self, metric="real_time"):
        """{Where: [values]}: the samples of each (program, process, placement); with
        aggregates only, each group's median (else mean) aggregate as its one value."""
        out = {}
        if self.samples.get(metric):
            for w, v in zip(self.where[metric], self.samples[metric]):
                out.setdefault(w, []).append(v)
            return out
        for w, aggs in self.group_aggregates.items():
            v = aggs.get("median", {}).get(metric, aggs.get("mean", {}).get(metric))
            if v is not None:
                out[w] = [v]
        return out

    def by_placement(self, metric="real_time"):
        """{placement: [values]} over every process (placement None: names without /place:k)."""
        return self._grouped(metric, lambda w: w.placement)

    def by_process(self, metric="real_time"):
        """{process: [values]} over every placement. The key is actgrad_process, or
        "<binary>:<process>" when the benchmark comes from several programs (the roof)."""
        several = len({w.binary for w in self.wheres()}) > 1
        return self._grouped(metric, lambda w: f"{w.binary}:{w.process}" if several else w.process)

    def wheres(self):
        """Every (program, process, placement) this benchmark has rows of."""
        return set(self.group_aggregates) | {w for ws in self.where.values() for w in ws}

    def _grouped(self, metric, key):
        out = {}
        for w, vals in self.cells(metric).items():
            out.setdefault(key(w), []).extend(vals)
        return dict(sorted(out.items(), key=lambda kv: (kv[0] is None, str(kv[0]).zfill(8))))


@dataclass
class Run:
    path: str
    context: dict
    benches: dict          # run name -> Bench, in file order
    notes: list = field(default_factory=list)

    @property
    def machine_id(self):
        return self.context.get("actgrad_machine_id")

    @property
    def commit(self):
        return self.context.get("actgrad_git_commit")

    @property
    def merged(self):
        """True when some benchmark was measured at several placements or in several processes."""
        return any(len(b.wheres()) > 1 for b in self.benches.values())


def read_json(path):
    """Read a JSON file; InputError naming the file on any problem."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
        if os.fspath(path).endswith(".gz"):
            raw = gzip.decompress(raw)  # results kept as data files are stored compressed
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise InputError(path, f"not a readable gzip file: {e}")
    except FileNotFoundError:
        raise InputError(path, "no such file")
    except IsADirectoryError:
        raise InputError(path, "is a directory, not a JSON file")
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}")
    if not raw.strip():
        raise InputError(path, "empty file (no JSON at all; did the benchmark crash?)")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, "not a text file (not UTF-8); expected JSON")
    except json.JSONDecodeError as e:
        raise InputError(path, f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
                               " (truncated or interrupted run?)")
    except RecursionError:
        raise InputError(path, f"JSON nested too deeply (more than {MAX_DEPTH} levels); not one of our files")
    except ValueError:             # an integer literal beyond sys.get_int_max_str_digits()
        raise InputError(path, f"a number with more than {sys.get_int_max_str_digits()} digits; "
                               "not a benchmark result")
    if _depth(doc) > MAX_DEPTH:
        raise InputError(path, f"JSON nested too deeply (more than {MAX_DEPTH} levels); not one of our files")
    return doc


def _depth(doc):
    """Nesting depth, without recursion (our files are 4 deep; later code recurses, e.g. json.dumps)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, d)
            if d > MAX_DEPTH:
                break
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


def _number(path, row_name, row, key, required):
    v = row.get(key)
    if v is None:
        if required:
            raise InputError(path, f"benchmark '{row_name}' has no '{key}' field")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(path, f"benchmark '{row_name}': '{key}' is {type(v).__name__} {v!r}, not a number")
    try:
        v = float(v)
    except OverflowError:      # an integer literal beyond the float range
        raise InputError(path, f"benchmark '{row_name}': '{key}' is out of range ({len(str(abs(v)))} digits)")
    if math.isnan(v) or math.isinf(v):
        if required:
            raise InputError(path, f"benchmark '{row_name}': '{key}' is {v}")
        return None
    return v


def is_gbench(doc):
    return isinstance(doc, dict) and isinstance(doc.get("benchmarks"), list)


def parse(doc, path):
    """Turn a loaded Google Benchmark document into a Run (InputError on problems)."""
    if not isinstance(doc, dict) or "benchmarks" not in doc:
        if not isinstance(doc, dict):
            what = "a JSON " + {"list": "array", "str": "string", "dict": "object"}.get(
                type(doc).__name__, type(doc).__name__)
        elif doc:
            what = "an object with keys " + ", ".join(sorted(map(str, doc))[:8])
        else:
            what = "an empty object"
        raise InputError(path, f"not Google Benchmark JSON (no 'benchmarks' list; found {what})")
    rows = doc["benchmarks"]
    if not isinstance(rows, list):
        raise InputError(path, f"'benchmarks' is {type(rows).__name__}, not a list")
    context = doc.get("context", {})
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise InputError(path, f"'context' is {type(context).__name__}, not an object")
    if not rows:
        raise InputError(path, "empty run: 'benchmarks' is an empty list (no benchmark ran; check the filter)")

    has_run_type = any(isinstance(r, dict) and "run_type" in r for r in rows)
    benches = {}
    notes = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(path, f"benchmarks[{i}] is {type(row).__name__}, not an object")
        name = row.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(path, f"benchmarks[{i}] has no 'name'")
        if row.get("error_occurred") or row.get("skipped") is True:
            msg = row.get("error_message") or row.get("skip_message") or "no message"
            notes.append(f"{name}: skipped, the benchmark reported an error ({msg})")
            continue
        # Which benchmark, and is it an aggregate?
        if has_run_type:
            run_type = row.get("run_type", "iteration")
            agg = row.get("aggregate_name") if run_type == "aggregate" else None
            if agg is not None and not isinstance(agg, str):
                raise InputError(path, f"benchmark '{name}': aggregate_name is {type(agg).__name__} {agg!r}, "
                                       "not a string")
            if run_type == "aggregate" and not agg:
                m = _AGG_SUFFIX.match(name)
                agg = m.group("agg") if m else "aggregate"
            base = row.get("run_name")
            if not isinstance(base, str) or not base:
                m = _AGG_SUFFIX.match(name) if agg else None
                base = m.group("base") if m else name
            if run_type not in ("iteration", "aggregate"):
                raise InputError(path, f"benchmark '{name}': unknown run_type {run_type!r}")
        else:
            m = _AGG_SUFFIX.match(name)
            agg = m.group("agg") if m else None
            base = m.group("base") if m else (row.get("run_name") or name)
        unit = row.get("time_unit", "ns")
        if not isinstance(unit, str) or unit not in TIME_UNITS:
            raise InputError(path, f"benchmark '{name}': unknown time_unit {unit!r} (expected ns, us, ms or s)")
        scale = TIME_UNITS[unit]
        percentage = agg == "cv" or row.get("aggregate_unit") == "percentage"
        values = {}
        for key in METRICS:
            v = _number(path, name, row, key, required=(key == "real_time"))
            if v is None:
                continue
            if key in TIME_METRICS and not percentage:
                v *= scale
            values[key] = v
        base, where = _where(path, name, base, row)
        b = benches.get(base)
        if b is None:
            b = benches[base] = Bench(name=base, parsed=names_mod.parse(base))
        reps = row.get("repetitions")
        if isinstance(reps, int) and not isinstance(reps, bool):
            b.repetitions = reps
        if isinstance(row.get("threads"), int):
            b.threads = row["threads"]
        if agg:
            b.group_aggregates.setdefault(where, {}).setdefault(agg, {}).update(values)
        else:
            for k, v in values.items():
                b.samples.setdefault(k, []).append(v)
                b.where.setdefault(k, []).append(where)
    if not benches:
        raise InputError(path, "empty run: every benchmark reported an error")
    for b in benches.values():
        b.aggregates = _combine(b.group_aggregates)
    return Run(path=str(path), context=context, benches=benches, notes=notes)


MAX_INDEX = 2 ** 31      # a process or placement index fits the history's INTEGER columns


def _is_index(v):
    """0, 1, 2, ... (also as 2.0: counters are doubles)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return (isinstance(v, int) or v.is_integer()) and 0 <= v < MAX_INDEX


def _index(path, name, row, key):
    """A non-negative integer field of a row (actgrad_process), or None when absent."""
    v = row.get(key)
    if v is None:
        return None
    if not _is_index(v):
        raise InputError(path, f"benchmark '{name}': '{key}' is {v!r}, not an index (0, 1, ...)")
    return int(v)


def _where(path, name, run_name, row):
    """(the benchmark's name without /place:k, the Where of this row)."""
    base, placement = names_mod.strip_placement(run_name)
    if placement is None:   # the name is the contract; the user counter only stands in for it
        counter = row.get("placement")
        if _is_index(counter):
            placement = int(counter)
    process = _index(path, name, row, "actgrad_process")
    binary = row.get("actgrad_binary")
    return base, Where(placement=placement, process=process or 0, binary=binary if isinstance(binary, str) else "")


def _combine(groups):
    """Per aggregate name and metric, the median over the groups (one group: its value)."""
    out = {}
    for aggs in groups.values():
        for agg, metrics in aggs.items():
            for metric, v in metrics.items():
                out.setdefault(agg, {}).setdefault(metric, []).append(v)
    return {agg: {m: statistics.median(vs) for m, vs in metrics.items()} for agg, metrics in out.items()}


def load(path):
    return parse(read_json(path), path)


def basename(path):
    return os.path.basename(os.fspath(path))
