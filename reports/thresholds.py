"""Per-benchmark thresholds for ``compare`` and ``dashboard`` (``--config FILE``), a small TOML file:

    # reports/thresholds.toml
    [default]
    threshold = "5%"      # smallest change that counts (compare) / smallest step (dashboard)
    alpha = 0.05          # significance level

    [[benchmark]]         # rules in file order; the first whose regex matches the name wins
    match = "^api/.*phase2"
    threshold = "3%"
    alpha = 0.01

    [[benchmark]]
    match = "^peer/"
    threshold = "10%"

A key missing from a rule comes from ``[default]``, and one missing there
from the command line (``--threshold``/``--min-step``, ``--alpha``). A bad
file (unreadable, not TOML, an unknown key, a bad regex, a threshold that is
no percentage, alpha outside (0, 1)) is bad input: exit 2 naming the file.
"""

import math
import re
import tomllib
from dataclasses import dataclass

from .errors import InputError

KEYS = {"threshold", "alpha"}


@dataclass
class Rule:
    pattern: object       # compiled regex, None for the default
    threshold: float
    alpha: float
    source: str           # "default", "--threshold/--alpha" or "rule N (regex)"


def _pct(path, where, v):
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise InputError(path, f"{where}: threshold {v!r} is not a percentage (e.g. \"5%\")")
    t = str(v).strip()
    t = t[:-1].strip() if t.endswith("%") else t
    try:
        x = float(t)
    except ValueError:
        raise InputError(path, f"{where}: threshold {v!r} is not a percentage (e.g. \"5%\")")
    if not (0 <= x < 1000) or math.isnan(x):
        raise InputError(path, f"{where}: threshold {v!r} is out of range")
    return x / 100.0


def _alpha(path, where, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 < v < 1):
        raise InputError(path, f"{where}: alpha {v!r} is not a number in (0, 1)")
    return float(v)


class Thresholds:
    """The rules of a config file (or none) over the command line's threshold and alpha."""

    def __init__(self, threshold, alpha, path=None):
        self.path = path
        self.default = Rule(None, threshold, alpha, "command line")
        self.rules = []
        if path is None:
            return
        try:
            with open(path, "rb") as f:
                doc = tomllib.load(f)
        except OSError as e:
            raise InputError(path, f"cannot read: {e.strerror or e}")
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            raise InputError(path, f"not a valid TOML file: {e}")
        unknown = set(doc) - {"default", "benchmark"}
        if unknown:
            raise InputError(path, f"unknown section(s) {', '.join(sorted(unknown))} (expected [default], "
                                   "[[benchmark]])")
        d = doc.get("default", {})
        if not isinstance(d, dict) or set(d) - KEYS:
            raise InputError(path, f"[default]: only {', '.join(sorted(KEYS))} are allowed")
        thr = _pct(path, "[default]", d["threshold"]) if "threshold" in d else threshold
        alp = _alpha(path, "[default]", d["alpha"]) if "alpha" in d else alpha
        self.default = Rule(None, thr, alp, "default")
        rules = doc.get("benchmark", [])
        if not isinstance(rules, list):
            raise InputError(path, "benchmark must be an array of tables ([[benchmark]])")
        for i, r in enumerate(rules, 1):
            where = f"[[benchmark]] {i}"
            if not isinstance(r, dict) or "match" not in r or not isinstance(r["match"], str):
                raise InputError(path, f"{where}: needs match = \"REGEX\"")
            if set(r) - KEYS - {"match"}:
                raise InputError(path, f"{where}: unknown key(s) {', '.join(sorted(set(r) - KEYS - {'match'}))}")
            try:
                rx = re.compile(r["match"])
            except re.error as e:
                raise InputError(path, f"{where}: bad regex {r['match']!r}: {e}")
            self.rules.append(Rule(rx, _pct(path, where, r["threshold"]) if "threshold" in r else thr,
                                   _alpha(path, where, r["alpha"]) if "alpha" in r else alp,
                                   f"rule {i} ({r['match']})"))

    def for_name(self, name):
        for r in self.rules:
            if r.pattern.search(name):
                return r
        return self.default
