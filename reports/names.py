"""Benchmark names of docs/conventions.md, parsed for display and grouping only.

``<kind>/<subject>/n:<elements>/thr:<threads>`` with kinds variant, api, peer
(``peer/<peer>.<op>.<dtype>`` or, on a view, ``peer/<peer>.<op>.<dtype>.<layout>``),
roof, and atlas (``atlas/<atlas variant>/n:N/tile:T``, modelled NPU time).

Op forms: in api and peer subjects the op token is an op of the vocabulary or
``gelu_bwd_tanh``, GELU with approximate="tanh" (``gelu_bwd`` is GELU erf).
A parsed name keeps the op (``gelu_bwd`` for both GELU forms, so grouping by op
joins them) and the GELU mode in ``approx``: ``"erf"`` or ``"tanh"`` on api and
peer rows of GELU, the variant's approx field (``erf_as``, ``tanh_pw5``, ...)
on variants, whose first word is the mode; None elsewhere. ``form`` gives the
op token back (``gelu_bwd_tanh`` for the tanh form, else the op): the key of
a table row or of a comparison with a peer. ``label`` marks the tanh form,
so the two GELU forms never share a legend label.
Google Benchmark may append its own parts (``/repeats:5``, ``/real_time``,
``/threads:2``, a bare ``/1024`` argument); they are kept in ``extra``.
Any other name (a foreign benchmark) parses as kind ``other``.

A trailing ``/place:<k>`` (k >= 0) names the operand placement the benchmark
was measured at (docs/conventions.md). It is a sample of the benchmark, not
another benchmark: ``strip_placement`` is the one rule that removes it (and
Google Benchmark's ``/real_time`` marker), and the identity (``base``),
``series`` and ``label`` never include it.

Standard library only: bench/goals.py imports this module.
"""

import re

from dataclasses import dataclass, field

from .vocabulary import DTYPES, OPS

KINDS = ("variant", "api", "peer", "roof", "atlas")
GELU = "gelu_bwd"
GELU_TANH = "gelu_bwd_tanh"
# Every op form in the order of the tables: the vocabulary's ops with GELU tanh after GELU erf.
OP_FORMS = tuple(f for op in OPS for f in ((op, GELU_TANH) if op == GELU else (op,)))
_PLACE = re.compile(r"^place:(\d{1,9})$")     # at most 9 digits: fits every integer column


def split_form(token):
    """An op token of an api or peer subject -> (op, approx): ``gelu_bwd_tanh`` -> (gelu_bwd, tanh),
    ``gelu_bwd`` -> (gelu_bwd, erf), any other -> (token, None)."""
    if token == GELU_TANH:
        return GELU, "tanh"
    return token, ("erf" if token == GELU else None)


def form_of(op, approx):
    """The op token of (op, approx): ``gelu_bwd_tanh`` when approx is the tanh mode (``tanh`` or a
    variant's ``tanh_*``), else op."""
    if op == GELU and approx and approx.split("_")[0] == "tanh":
        return GELU_TANH
    return op


def strip_placement(name):
    """(name without its ``/place:<k>`` segment, k) or (name, None) when it has none.

    Only a segment after ``<kind>/<subject>`` counts (normally the last one;
    Google Benchmark may append its own parts after it). The programs register
    every benchmark with wall-clock iteration sizing, for which Google
    Benchmark appends ``/real_time``: on our kinds that marker is no part of
    the identity either and goes too."""
    parts = name.split("/")
    if parts[0] in KINDS and len(parts) > 2 and parts[-1] == "real_time":
        parts = parts[:-1]
        name = "/".join(parts)
    for i in range(2, len(parts)):
        m = _PLACE.match(parts[i])
        if m:
            return "/".join(parts[:i] + parts[i + 1:]), int(m.group(1))
    return name, None


@dataclass(frozen=True)
class Name:
    full: str
    kind: str = "other"
    subject: str = ""
    n: int = None
    thr: int = None
    tile: int = None
    placement: int = None      # k of a /place:k segment, None without one
    extra: tuple = ()
    op: str = None
    dtype: str = None
    # variant fields
    upcast: str = None
    approx: str = None
    unroll: str = None
    target: str = None
    nt: bool = False
    # peer / api / roof fields
    peer: str = None
    layout: str = None
    phase: str = None
    fields: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def ours(self):
        return self.kind in KINDS

    @property
    def form(self):
        """The op token: ``gelu_bwd_tanh`` for GELU tanh (any kind), else the op."""
        return form_of(self.op, self.approx)

    @property
    def tanh(self):
        return self.form == GELU_TANH

    @property
    def base(self):
        """The benchmark's identity: the name without its placement."""
        return strip_placement(self.full)[0]

    @property
    def series(self):
        """What one plotted line stands for: the name without n (and tile)."""
        s = f"{self.kind}/{self.subject}"
        if self.thr is not None:
            s += f"/thr:{self.thr}"
        return s

    @property
    def label(self):
        """Short legend label within one (op, dtype) plot."""
        if self.kind == "variant":
            rest = self.subject.split(".")[2:]
            return ".".join(rest) or self.subject
        mode = " tanh" if self.tanh else ""
        if self.kind == "peer":
            return f"peer {self.peer}{mode}" + ("" if self.layout in (None, "contig") else f" {self.layout}")
        if self.kind == "api":
            return f"api{mode} {self.layout}.{self.phase}"
        if self.kind == "atlas":
            parts = self.subject.split(".")
            rest = parts[2:] if self.op and self.dtype else parts
            return "atlas " + (".".join(rest) or self.subject)
        return self.subject or self.full


def _int(v):
    try:
        return int(v)
    except ValueError:
        try:
            f = float(v)
        except ValueError:
            return None
        return int(f) if f.is_integer() else None


def parse(name):
    parts = name.split("/")
    if len(parts) < 2 or parts[0] not in KINDS:
        return Name(full=name, kind="other", subject=name)
    base, placement = strip_placement(name)
    parts = base.split("/")
    kind, subject = parts[0], parts[1]
    kv = {}
    extra = []
    for p in parts[2:]:
        k, sep, v = p.partition(":")
        if sep and k in ("n", "thr", "tile") and _int(v) is not None and k not in kv:
            kv[k] = _int(v)
        else:
            extra.append(p)
    f = {}
    sub = subject.split(".")
    if kind == "variant":
        keys = ("op", "dtype", "upcast", "approx", "unroll", "target")
        f = {k: v for k, v in zip(keys, sub)}
        f["nt"] = len(sub) > 6 and sub[6] == "nt"
    elif kind == "peer":
        # peer/<peer>.<op>.<dtype> (contiguous) or peer/<peer>.<op>.<dtype>.<layout>: the peer on the
        # same views as api/<op>.<dtype>.<layout> (tools/inputs/views.h)
        f = {k: v for k, v in zip(("peer", "op", "dtype", "layout"), sub)}
        if len(sub) >= 3:
            f.setdefault("layout", "contig")
    elif kind == "api":
        f = {k: v for k, v in zip(("op", "dtype", "layout", "phase"), sub)}
    if kind in ("api", "peer") and "op" in f:
        f["op"], approx = split_form(f["op"])
        if approx:
            f["approx"] = approx
    elif kind == "atlas":
        if sub and sub[0] in OPS:
            f["op"] = sub[0]
            if len(sub) > 1 and sub[1] in DTYPES:
                f["dtype"] = sub[1]
        else:
            for s in sub:
                if s in OPS and "op" not in f:
                    f["op"] = s
                elif s in DTYPES and "dtype" not in f:
                    f["dtype"] = s
    return Name(full=name, kind=kind, subject=subject, n=kv.get("n"), thr=kv.get("thr"),
                tile=kv.get("tile"), placement=placement, extra=tuple(extra), fields=dict(f),
                **{k: v for k, v in f.items()})


def human_size(n):
    """1024 -> '1K', 4194304 -> '4M' (binary prefixes, as the size buckets)."""
    if n is None:
        return "?"
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{unit}"
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g}{unit}"
    return str(n)
