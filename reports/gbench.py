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
"""

import json
import math
import os
import re
import statistics
import sys
from dataclasses import dataclass, field

from . import names as names_mod
from .errors import InputError

TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
METRICS = ("real_time", "cpu_time", "bytes_per_second", "items_per_second", "pct_of_bandwidth")
TIME_METRICS = ("real_time", "cpu_time")
MAX_DEPTH = 64          # JSON nesting we accept; Google Benchmark's is 3, a tiling table's 3
_AGG_SUFFIX = re.compile(r"^(?P<base>.+)_(?P<agg>mean|median|stddev|cv)$")


@dataclass
class Bench:
    """All rows of one benchmark (one run_name) in one file."""
    name: str
    parsed: names_mod.Name
    samples: dict = field(default_factory=dict)      # metric -> [values] (iteration rows)
    aggregates: dict = field(default_factory=dict)   # aggregate name -> {metric: value}
    repetitions: int = None
    threads: int = None

    def center(self, metric="real_time"):
        """Median of the repetitions, else the median aggregate, else the mean."""
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


def read_json(path):
    """Read a JSON file; InputError naming the file on any problem."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
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
    ordinal = {}
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
        b = benches.get(base)
        if b is None:
            b = benches[base] = Bench(name=base, parsed=names_mod.parse(base))
        reps = row.get("repetitions")
        if isinstance(reps, int) and not isinstance(reps, bool):
            b.repetitions = reps
        if isinstance(row.get("threads"), int):
            b.threads = row["threads"]
        if agg:
            b.aggregates.setdefault(agg, {}).update(values)
        else:
            ordinal[base] = ordinal.get(base, 0) + 1
            for k, v in values.items():
                b.samples.setdefault(k, []).append(v)
    if not benches:
        raise InputError(path, "empty run: every benchmark reported an error")
    return Run(path=str(path), context=context, benches=benches, notes=notes)


def load(path):
    return parse(read_json(path), path)


def basename(path):
    return os.path.basename(os.fspath(path))
