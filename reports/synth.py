"""Synthetic runs in our formats, for the tests and for trying the tools.

``report synth run OUT.json`` writes a Google Benchmark file,
``report synth history DB`` records a history of commits with a step,
``report synth table OUT.json`` / ``synth accuracy OUT.json`` the other inputs.
"""

import datetime as dt
import json

import numpy as np

BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i8": 1}
DEFAULT_OPS = ("gelu_bwd", "hardswish_bwd")
DEFAULT_DTYPES = ("f32", "bf16")
VARIANTS = (("none", "erf_as", "u4", "avx3", 1.00), ("reg", "erf_as", "u2", "avx2", 0.80),
            ("staged", "erf_r12", "u4", "avx3", 0.92), ("none", "exact", "u4", "avx3.nt", 0.95))


def variant_names(op, dtype):
    out = []
    for upcast, approx, u, target, speed in VARIANTS:
        if dtype == "f32" and upcast != "none":
            continue
        if dtype != "f32" and upcast == "none":
            upcast = "bf16cvt" if dtype == "bf16" else "f16native"
        out.append((f"{op}.{dtype}.{upcast}.{approx}.{u}.{target}", speed))
    return out


def make_run(seed=0, ops=DEFAULT_OPS, dtypes=DEFAULT_DTYPES, sizes=None, reps=5, noise=0.01, scale=1.0,
             scale_fn=None, commit="c000", machine="genuineintel-6-143", date=None, aggregates_only=False,
             atlas=True, threads=(1,), unit="ns", placements=None, processes=1, cell_fn=None):
    """A Google Benchmark document. scale multiplies every time (1.1 = 10 % slower);
    scale_fn(name) -> factor for selected benchmarks.

    placements ([0, 1, 2, 3]) and processes (2): as scripts/bench writes a merged
    run, every benchmark at each placement (``/place:k``, counter ``placement``)
    in each process (``actgrad_process``); cell_fn(name, process, placement) ->
    factor puts a benchmark's cells in different states (name without /place)."""
    rng = np.random.default_rng(seed)
    sizes = sizes or [4 ** k for k in range(5, 11)]
    div = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[unit]
    cells = [(proc, k) for proc in range(processes) for k in (placements or [None])]

    def cell(name, n, nbytes, base_ns, proc, k):
        f = scale * (scale_fn(name) if scale_fn else 1.0) * (cell_fn(name, proc, k) if cell_fn else 1.0)
        times = base_ns * f * (1 + noise * rng.standard_normal(reps))
        times = np.maximum(times, base_ns * 0.5)
        where = {} if k is None else {"placement": k}
        where.update({"actgrad_process": proc} if processes > 1 else {})
        full = name if k is None else f"{name}/place:{k}"
        recs = []
        for i, t in enumerate(times):
            recs.append({"name": full, "run_name": full, "run_type": "iteration", "repetitions": reps,
                         "repetition_index": i, "threads": 1, "iterations": 1000,
                         "real_time": t / div, "cpu_time": t * 1.01 / div, "time_unit": unit,
                         "bytes_per_second": nbytes / (t * 1e-9), "items_per_second": n / (t * 1e-9), **where})
        aggs = []
        for agg, fn in (("mean", np.mean), ("median", np.median), ("stddev", np.std)):
            t = float(fn(times))
            aggs.append({"name": f"{full}_{agg}", "run_name": full, "run_type": "aggregate",
                         "repetitions": reps, "threads": 1, "aggregate_name": agg, "aggregate_unit": "time",
                         "iterations": reps, "real_time": t / div, "cpu_time": t * 1.01 / div, "time_unit": unit,
                         "bytes_per_second": nbytes / (t * 1e-9) if agg != "stddev" else 0.0,
                         "items_per_second": n / (t * 1e-9) if agg != "stddev" else 0.0, **where})
        return recs, aggs

    def bench(name, n, nbytes, base_ns):
        recs, aggs = [], []
        for proc, k in cells:
            r, a = cell(name, n, nbytes, base_ns, proc, k)
            recs += r
            aggs += a
        return recs, aggs

    def bw(n, base):   # GB/s falling from cache to DRAM
        return base * (1.0 if n < 65536 else 0.55 if n < 4 ** 10 else 0.35)

    out = []
    for thr in threads:
        roof = {}
        for rname, eff in (("memcpy", 0.9), ("stream_plain", 1.0), ("stream_nt", 1.05)):
            for n in sizes:
                gbps = bw(n, 60.0) * eff * thr
                recs, aggs = bench(f"roof/{rname}/n:{n}/thr:{thr}", n, 8 * n, 8 * n / gbps)
                out.append((recs, aggs, None))
                if rname.startswith("stream"):
                    roof[n] = max(roof.get(n, 0), 8 * n / (8 * n / gbps) * 1e9)
        for op in ops:
            for dtype in dtypes:
                nb = 3 * BYTES[dtype]
                for vname, speed in variant_names(op, dtype):
                    for n in sizes:
                        gbps = bw(n, 60.0) * speed * thr * (0.9 if dtype != "f32" else 1.0)
                        recs, aggs = bench(f"variant/{vname}/n:{n}/thr:{thr}", n, nb * n, nb * n / gbps)
                        out.append((recs, aggs, roof[n]))
                for peer, speed in (("torch", 0.6), ("dnnl", 0.75)):
                    for n in sizes:
                        gbps = bw(n, 60.0) * speed * thr
                        recs, aggs = bench(f"peer/{peer}.{op}.{dtype}/n:{n}/thr:{thr}", n, nb * n, nb * n / gbps)
                        out.append((recs, aggs, roof[n]))
                for n in sizes:
                    gbps = bw(n, 60.0) * 0.97 * thr
                    recs, aggs = bench(f"api/{op}.{dtype}.contig.both/n:{n}/thr:{thr}", n, nb * n,
                                       nb * n / gbps + 300)
                    out.append((recs, aggs, roof[n]))
    if atlas:   # as atlas/tools/actgrad_atlas writes them
        for op in ops:
            for dtype, vname, k in (("f16", "atlas.native.exact.db2", 1.0), ("f16", "atlas.f32up.exact.db1", 1.3),
                                    ("f32", "atlas.native.exact.db2", 1.6)):
                for n in sizes:
                    for tile in (2048, 8192, 32768):
                        t = 2000 + k * n * 3 * 2 / 900.0 * (1 + 0.3 * abs(np.log2(tile / 8192)) / 2)
                        recs, aggs = bench(f"atlas/{op}.{dtype}.{vname}/n:{n}/tile:{tile}", n, 6 * n, t)
                        out.append((recs, aggs, None))
    benchmarks = []
    for recs, aggs, ref in out:
        for r in recs + aggs:
            if ref is not None:
                r["pct_of_bandwidth"] = 100.0 * r["bytes_per_second"] / ref if r.get("aggregate_name") != "stddev" else 0.0
            elif not r["name"].startswith("atlas/"):
                r["pct_of_bandwidth"] = 100.0 * r["bytes_per_second"] / (bw(1, 60.0) * 1e9) if r.get("aggregate_name") != "stddev" else 0.0
        benchmarks.extend(aggs if aggregates_only else recs + aggs)
    benchmarks.sort(key=lambda r: r.get("actgrad_process", 0))    # scripts/bench: one process after the other
    date = date or dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    merged = {"actgrad_processes": str(processes)} if processes > 1 else {}
    if placements:
        merged["actgrad_placements"] = ",".join(map(str, placements))
    return {"context": {**merged, "date": date.isoformat(), "host_name": "synthetic", "executable": "actgrad-bench",
                        "num_cpus": 2, "mhz_per_cpu": 2000, "library_build_type": "release",
                        "actgrad_machine_id": machine, "actgrad_git_commit": commit,
                        "actgrad_cpu_model": "Synthetic CPU", "actgrad_compiler": "GNU 12.2.0",
                        "actgrad_build_type": "Release", "actgrad_isa_targets": "avx3,avx2,sse4"},
            "benchmarks": benchmarks}


def make_table(ops=DEFAULT_OPS, dtypes=DEFAULT_DTYPES, machine="genuineintel-6-143"):
    entries = []
    for op in ops:
        for dtype in dtypes:
            names = [v for v, _ in variant_names(op, dtype)]
            for h in range(10, 27):
                v = names[0] if h < 18 else names[-1] if h > 23 else names[min(1, len(names) - 1)]
                entries.append({"op": op, "dtype": dtype, "layout": "contig", "octave": h,
                                "size_lo": 2 ** h, "size_hi": 2 ** (h + 1), "variant": v,
                                "tile": 4096 if h < 18 else 16384, "threads": 1 if h < 20 else 2,
                                "median_ns": 100.0 * 2 ** (h - 10), "spread_pct": 1.0})
    return {"schema": "actgrad-tiling-table", "version": 2, "machine_id": machine, "backend": "cpu",
            "provenance": {"cpu_model": "Synthetic CPU", "cores": 2, "git_commit": "c000",
                           "date": "2026-11-01T00:00:00Z", "tool_version": "0.1.0"},
            "entries": entries}


def make_accuracy(ops=DEFAULT_OPS, dtypes=DEFAULT_DTYPES):
    out = []
    errs = {"erf_as": 2e-7, "erf_r12": 5e-8, "exact": 0.0}
    for op in ops:
        for dtype in dtypes:
            for v, speed in variant_names(op, dtype):
                approx = v.split(".")[3]
                e = errs.get(approx, 1e-6) * (1 if dtype == "f32" else 3e4)
                out.append({"op": op, "dtype": dtype, "variant": v, "count": 1000000, "share": 1.0,
                            "max_err": e, "max_ulp": round(e / 6e-8, 1), "shippable": speed > 0.85})
    # the layout actgrad-accuracy writes (docs/accuracy.json)
    return {"schema": "actgrad-accuracy", "version": 1, "machine_id": "genuineintel-6-143", "results": out}


def history_docs(commits=24, step_at=12, step=1.10, spike_at=None, noise=0.01, machines=("m1",),
                 ops=("gelu_bwd",), dtypes=("f32",), sizes=(4096, 65536), step_filter="gelu_bwd.f32.none",
                 reps=3):
    """Documents of a synthetic history: commit step_at onward is `step` times slower for
    benchmarks whose name contains step_filter; spike_at: one commit 30 % slower everywhere."""
    docs = []
    t0 = dt.datetime(2026, 10, 1, tzinfo=dt.timezone.utc)
    for mi, machine in enumerate(machines):
        for i in range(commits):
            def fn(name, i=i):
                f = 1.0
                if step_at is not None and i >= step_at and step_filter in name:
                    f *= step
                if spike_at is not None and i == spike_at:
                    f *= 1.3
                return f
            docs.append(make_run(seed=1000 * mi + i, ops=ops, dtypes=dtypes, sizes=list(sizes), reps=reps,
                                 noise=noise, scale_fn=fn, commit=f"c{i:03d}", machine=machine,
                                 date=t0 + dt.timedelta(hours=6 * i), atlas=False))
    return docs


def dump(doc, path):
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
