"""Do two tiling tables choose alike? (``report tables-agree A.json B.json``)

For the reproducibility goal: two independent ``actgrad-tune --fresh``
runs of one machine should choose the same (variant, thread rule, store type)
in nearly every cell. Per cell both tables have (op, dtype, GELU mode, layout,
octave): the variant, the threads each entry runs at its tuned size on the
cores the tables were tuned with (schema 4: clamp(n / grain, 1, cores); older
schemas: the entry's thread count), and the store type (".nt" variants stream).
"Threads" are compared at the tuned size, not as grains: two tunes bisect a
crossover to slightly different sizes, which is the same rule for every size
but the few between them.
"""

from collections import Counter
from dataclasses import dataclass

from . import inputs
from .errors import InputError


@dataclass(frozen=True)
class Pick:
    variant: str
    threads: int
    stores: str


def _cores(doc, path):
    prov = doc.get("provenance") or {}
    topo = prov.get("topology") or {}
    cores = topo.get("cpus") or prov.get("omp_max_threads") or prov.get("cores")
    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise InputError(path, "provenance names no core count (topology.cpus, omp_max_threads or cores)")
    return cores


def _picks(doc, path):
    cores = _cores(doc, path)
    out = {}
    for e in doc["entries"]:
        # The tuner's cell key: GELU's formula, "-" for the other ops.
        mode = e.get("gelu_approx", "none") if e["op"] == "gelu_bwd" else "-"
        key = (e["op"], e["dtype"], mode, e.get("layout", "contig"), e["octave"])
        n = ((e.get("extra") or {}).get("tuning") or {}).get("n") or e["_range"][0]
        if "grain" in e:
            g = e["grain"]
            threads = 1 if g == 0 else max(1, min(cores, n // g))
        else:
            threads = min(int(e.get("threads", 1)), cores)
        out[key] = Pick(e["variant"], threads, "nt" if e["variant"].endswith(".nt") else "plain")
    return out


def compare(a_doc, a_path, b_doc, b_path):
    a, b = _picks(a_doc, a_path), _picks(b_doc, b_path)
    common = sorted(set(a) & set(b))
    if not common:
        raise InputError(b_path, f"no cell in common with {a_path}")
    same = Counter()
    differ = []
    for k in common:
        x, y = a[k], b[k]
        same["all"] += x == y
        same["variant"] += x.variant == y.variant
        same["threads"] += x.threads == y.threads
        same["stores"] += x.stores == y.stores
        same["threads+stores"] += (x.threads, x.stores) == (y.threads, y.stores)
        if x != y:
            differ.append((k, x, y))
    return common, same, differ


def run(a):
    docs = []
    for path in (a.a, a.b):
        kind, doc = inputs.classify(path)
        if kind != "table":
            raise InputError(path, "not a tiling table")
        docs.append(doc)
    if docs[0].get("machine_id") != docs[1].get("machine_id"):
        print(f"note: machine ids differ ({docs[0].get('machine_id')} vs {docs[1].get('machine_id')})")
    common, same, differ = compare(docs[0], a.a, docs[1], a.b)
    n = len(common)
    print(f"{n} cells in both tables")
    for what in ("all", "variant", "threads", "stores", "threads+stores"):
        label = "variant, threads and stores" if what == "all" else what
        print(f"  same {label:28s} {same[what]:5d} of {n}  ({100.0 * same[what] / n:.1f} %)")
    if a.list:
        for (op, dt, mode, layout, h), x, y in differ:
            cell = f"{op}/{dt}/{mode}/{layout}/o{h}"
            print(f"  {cell:40s} {x.variant} t{x.threads}  |  {y.variant} t{y.threads}")
    return 0
