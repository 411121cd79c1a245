"""Recognise and check the inputs of ``report plot``.

- Google Benchmark JSON (an object with a ``benchmarks`` list), with our names;
- a tiling table (``"schema": "actgrad-tiling-table"``, docs/conventions.md);
- the accuracy results (``docs/accuracy.json``: a list of objects with
  ``op``, ``dtype``, ``variant``, ``max_err``, ...).
Anything else is foreign: InputError naming the file.
"""

import math
from dataclasses import dataclass

from . import gbench
from .errors import InputError

TABLE_SCHEMA = "actgrad-tiling-table"
# docs/accuracy.json as actgrad-accuracy writes it: {"schema": ..., "results": [...]}.
ACCURACY_SCHEMA = "actgrad-accuracy"
TABLE_FIELDS = ("op", "dtype", "variant")
# The size range key of each schema version: v1 4x buckets, v2 octaves.
TABLE_RANGE = {1: ("bucket", 4), 2: ("octave", 2), 3: ("octave", 2), 4: ("octave", 2)}
ACCURACY_FIELDS = ("op", "dtype", "variant", "max_err")


@dataclass
class Inputs:
    runs: list
    tables: list        # [(path, doc)]
    accuracy: list      # [(path, [entries])]


def _finite(v):
    try:
        return math.isfinite(v)
    except OverflowError:      # an integer beyond the float range
        return False


def _check_names(path, where, e, keys):
    """The fields that name things (op, dtype, variant, ...) are non-empty strings."""
    for k in keys:
        if k in e and not (isinstance(e[k], str) and e[k]):
            raise InputError(path, f"{where}: {k} {e[k]!r} is not a name (expected a non-empty string)")


def _check_table(doc, path):
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version not in TABLE_RANGE:
        raise InputError(path, f"tiling table version {version!r} is not supported (expected 1 to 4)")
    key, base = TABLE_RANGE[version]
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise InputError(path, "tiling table has no 'entries' list")
    if not entries:
        raise InputError(path, "tiling table has no entries")
    for i, e in enumerate(entries):
        if not isinstance(e, dict):
            raise InputError(path, f"entries[{i}] is not an object")
        missing = [k for k in TABLE_FIELDS + (key,) if k not in e]
        if missing:
            raise InputError(path, f"entries[{i}] lacks {', '.join(missing)}")
        if not isinstance(e[key], int) or isinstance(e[key], bool) or not 0 <= e[key] < 64 // (base // 2):
            raise InputError(path, f"entries[{i}]: {key} {e[key]!r} is not a valid integer")
        _check_names(path, f"entries[{i}]", e, TABLE_FIELDS + ("layout",))
        # v1/v2 "tile" is the chunk (v3+ "chunk"); v4 CPU entries give "grain" instead of "threads".
        for k in ("tile", "chunk", "grain"):
            v = e.get(k)
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 2 ** 63):
                raise InputError(path, f"entries[{i}]: {k} {v!r} is not a size in elements")
        # The size range [lo, hi) in elements, whatever the version.
        e["_range"] = (base ** e[key], base ** (e[key] + 1))
    if not isinstance(doc.get("provenance", {}), (dict, type(None))):
        raise InputError(path, f"'provenance' is {type(doc['provenance']).__name__}, not an object")
    return doc


def _check_accuracy(doc, path):
    if not doc:
        raise InputError(path, "accuracy results are an empty list")
    for i, e in enumerate(doc):
        if not isinstance(e, dict):
            raise InputError(path, f"[{i}] is {type(e).__name__}, not an object "
                                   "(a JSON list is read as accuracy results: [{op, dtype, variant, max_err, ...}])")
        missing = [k for k in ACCURACY_FIELDS if k not in e]
        if missing:
            raise InputError(path, f"accuracy entry [{i}] lacks {', '.join(missing)}")
        _check_names(path, f"accuracy entry [{i}]", e, ("op", "dtype", "variant"))
        v = e["max_err"]
        if v is None:  # actgrad-accuracy's encoding of a non-finite error (never shippable)
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not _finite(v):
            raise InputError(path, f"accuracy entry [{i}] ({e.get('variant')}): max_err {v!r} is not a finite number")
    return doc


def classify(path):
    doc = gbench.read_json(path)
    if isinstance(doc, dict) and doc.get("schema") == TABLE_SCHEMA:
        return "table", _check_table(doc, path)
    if isinstance(doc, dict) and doc.get("schema") == ACCURACY_SCHEMA:
        if not isinstance(doc.get("results"), list):
            raise InputError(path, f"'{ACCURACY_SCHEMA}' file without a \"results\" list")
        return "accuracy", _check_accuracy(doc["results"], path)
    if isinstance(doc, dict) and "schema" in doc and "benchmarks" not in doc:
        raise InputError(path, f"unknown schema {doc.get('schema')!r} (expected Google Benchmark JSON, "
                               f"'{TABLE_SCHEMA}', '{ACCURACY_SCHEMA}' or the accuracy list)")
    if isinstance(doc, list):
        return "accuracy", _check_accuracy(doc, path)
    if isinstance(doc, dict) and "benchmarks" in doc:
        return "gbench", gbench.parse(doc, path)
    raise InputError(path, "not Google Benchmark JSON (no 'benchmarks' list), not a tiling table "
                           f"(no \"schema\": \"{TABLE_SCHEMA}\") and not the accuracy list "
                           f"(found a JSON {type(doc).__name__ if not isinstance(doc, dict) else 'object with keys ' + ', '.join(sorted(map(str, doc))[:6])})")


def load_all(paths):
    runs, tables, acc = [], [], []
    for p in paths:
        kind, obj = classify(p)
        if kind == "gbench":
            ours = [b for b in obj.benches.values() if b.parsed.ours]
            if not ours:
                sample = next(iter(obj.benches))
                raise InputError(p, f"no actgrad benchmark in this file (names start with variant/, api/, "
                                    f"peer/, roof/ or atlas/; found e.g. {sample!r})")
            for b in ours:
                if b.parsed.n is None:
                    raise InputError(p, f"benchmark '{b.name}' lacks the size part n:<elements>")
                if b.parsed.kind != "atlas" and not b.has("bytes_per_second"):
                    raise InputError(p, f"benchmark '{b.name}' has no bytes_per_second counter "
                                        "(docs/conventions.md requires it on every benchmark)")
            runs.append(obj)
        elif kind == "table":
            tables.append((str(p), obj))
        else:
            acc.append((str(p), obj))
    return Inputs(runs=runs, tables=tables, accuracy=acc)
