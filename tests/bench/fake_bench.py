# Stand-in for actgrad-bench / actgrad-bench-variants in the scripts/bench
# tests (the test writes it out with a #! line). It registers the benchmark
# names of the real programs' scheme for --actgrad_sizes/--actgrad_threads/
# --actgrad_placements: api and peers with both GELU forms (gelu_bwd,
# gelu_bwd_tanh), PyTorch on every layout, oneDNN (GELU and Hardswish,
# contiguous) only at thr:T where T is the number of CPUs of its affinity, as
# the real program does. It answers
#   --actgrad_variant_table (actgrad-bench-variants: the fields of its variants),
#   --actgrad_check_peers (actgrad-bench; $FAKE_CHECK_PEERS: ok, fail or none),
#   --benchmark_list_tests=true (the names --benchmark_filter searches, as
#     Google Benchmark does),
#   a run with --benchmark_out: console rows on stdout, one per benchmark
#     (aggregates with repetitions > 1), $FAKE_BENCH_DELAY seconds apart, and
#     the JSON file, whose context and rows carry its argv and CPU affinity;
#     $FAKE_BENCH_FAIL=<program> makes that program fail after a first row.
# Every call is logged to $FAKE_BENCH_LOG with its argv and affinity.
import json
import os
import re
import sys
import time

OPS = ["selu_bwd", "hardswish_bwd", "gelu_bwd", "gelu_bwd_tanh", "softshrink_bwd", "logit_grad"]
DNNL_OPS = ("gelu_bwd", "gelu_bwd_tanh", "hardswish_bwd")
DTYPES = ["f32", "f16", "bf16"]

prog = os.path.basename(sys.argv[0])
argv = sys.argv[1:]
opts = dict(a.split("=", 1) for a in argv if a.startswith("--") and "=" in a)
cpus = sorted(os.sched_getaffinity(0))


def log(listed):
    with open(os.environ["FAKE_BENCH_LOG"], "a") as f:
        f.write(json.dumps({"prog": prog, "args": argv, "cpus": cpus, "listed": listed}) + "\n")


def api_names(op, dt, tail, thr):
    layouts = ["contig", "strided", "transposed"] + (["bcast"] if op.startswith(("gelu", "softshrink")) else [])
    names = [f"peer/torch.{op}.{dt}{tail}"]
    names += [f"peer/torch.{op}.{dt}.{layout}{tail}" for layout in layouts[1:]]
    if op in DNNL_OPS and int(thr) == len(cpus):
        names += [f"peer/dnnl.{op}.{dt}{tail}"]
    return names + [f"api/{op}.{dt}.{layout}.{phase}{tail}" for layout in layouts
                    for phase in ("phase1", "phase2", "both")]


def registered():
    names = []
    places = opts.get("--actgrad_placements", "0,1,2,3").split(",")
    for n in opts.get("--actgrad_sizes", "65536").split(","):
        for t, k in ((t, k) for t in opts.get("--actgrad_threads", "1").split(",") for k in places):
            tail = f"/n:{n}/thr:{t}/place:{k}/real_time"  # the programs size iterations by wall time
            names += [f"roof/{r}{tail}" for r in ("memcpy", "stream_plain", "stream_nt")]
            for op in OPS:
                for dt in DTYPES:
                    if prog == "actgrad-bench":
                        names += api_names(op, dt, tail, t)
                    elif op != "gelu_bwd_tanh":
                        names += [f"variant/{op}.{dt}.reg.exact.u{u}.{tgt}{nt}{tail}" for u in (1, 2, 4)
                                  for tgt in ("avx2", "sse4") for nt in ("", ".nt")]
    return names


def variant_table():
    for op in OPS[:3] + OPS[4:]:
        for dt in DTYPES:
            for u in (1, 2, 4):
                for tgt in ("avx2", "sse4"):
                    for nt in (False, True):
                        name = f"{op}.{dt}.reg.exact.u{u}.{tgt}" + (".nt" if nt else "")
                        print(json.dumps({"name": name, "op": op, "dtype": dt, "upcast": "reg", "approx": "exact",
                                          "unroll": u, "target": tgt, "nt_stores": nt, "supported": True}))


def check_peers():
    mode = os.environ.get("FAKE_CHECK_PEERS", "ok")
    if mode == "none":
        print("actgrad_peers: none: no peer to check")
        return 0
    cases = [f"{p}.{op}.{dt}.contig" for p in ("torch", "dnnl") for op in DNNL_OPS for dt in DTYPES]
    for c in cases:
        bad = mode == "fail" and c == "dnnl.gelu_bwd_tanh.bf16.contig"
        print(f"{c}: {'DISAGREES max ulp 4096' if bad else 'agrees'}")
    if mode == "fail":
        print(f"1 of {len(cases)} cases disagree")
        print("peer check failed: dnnl.gelu_bwd_tanh.bf16.contig disagrees with the double reference",
              file=sys.stderr)
        return 1
    print(f"all {len(cases)} cases agree")
    return 0


def run(names):
    """Console rows and the JSON file of a Google Benchmark run."""
    reps = int(opts.get("--benchmark_repetitions", "1"))
    print(f"Running {sys.argv[0]}\nRun on ({len(cpus)} X 2000 MHz CPU s)\n" + "-" * 40 +
          "\nBenchmark      Time      CPU   Iterations\n" + "-" * 40, flush=True)
    rows = []
    for i, nm in enumerate(names):
        if os.environ.get("FAKE_BENCH_FAIL") == prog and i == 1:
            print("error: the fake failed on purpose", flush=True)
            return 1
        time.sleep(float(os.environ.get("FAKE_BENCH_DELAY", "0")))
        for suffix in (["_mean", "_median", "_stddev", "_cv"] if reps > 1 else [""]):
            print(f"{nm}{suffix}    1000 ns    1000 ns    100 bytes_per_second=1G/s", flush=True)
        rows += [{"name": nm, "run_name": nm, "run_type": "iteration", "repetitions": reps,
                  "repetition_index": r, "iterations": 100, "real_time": 1000.0, "cpu_time": 1000.0,
                  "time_unit": "ns", "bytes_per_second": 1e9, "fake_cpus": cpus} for r in range(reps)]
    context = {"actgrad_binary": prog, "actgrad_max_threads": str(len(cpus)), "fake_argv": argv,
               "actgrad_variant_targets": "avx2,sse4" if prog != "actgrad-bench" else "none"}
    with open(opts["--benchmark_out"], "w") as f:
        json.dump({"context": context, "benchmarks": rows}, f)
    return 0


if "--actgrad_variant_table" in argv and prog == "actgrad-bench-variants":
    log([])
    variant_table()
    sys.exit(0)
if "--actgrad_check_peers" in argv and prog == "actgrad-bench":
    log([])
    sys.exit(check_peers())
flt = re.compile(opts.get("--benchmark_filter", "."))
shown = [nm for nm in registered() if flt.search(nm)]
listing = opts.get("--benchmark_list_tests") == "true"
log(shown if listing else [])
if listing:
    print("\n".join(shown))
elif "--benchmark_out" in opts:
    sys.exit(run(shown))
else:
    sys.exit(3)
