# Stand-in for actgrad-bench / actgrad-bench-variants in the scripts/bench
# tests (the test writes it out with a #! line). It answers
# --actgrad_variant_table (actgrad-bench-variants: the fields of its variants)
# and --benchmark_list_tests=true with the benchmark names of the real programs'
# scheme for --actgrad_sizes/--actgrad_threads/--actgrad_placements, filtered by --benchmark_filter
# (a regular expression search, as Google Benchmark does), logs every call to
# $FAKE_BENCH_LOG, and fails any other call: the tests run nothing.
import json
import os
import re
import sys

OPS = ["selu_bwd", "hardswish_bwd", "gelu_bwd", "softshrink_bwd", "logit_grad"]
DTYPES = ["f32", "f16", "bf16"]

prog = os.path.basename(sys.argv[0])
opts = dict(a.split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
names = []
places = opts.get("--actgrad_placements", "0,1,2,3").split(",")
for n in opts.get("--actgrad_sizes", "65536").split(","):
    for t, k in ((t, k) for t in opts.get("--actgrad_threads", "1").split(",") for k in places):
        tail = f"/n:{n}/thr:{t}/place:{k}"
        names += [f"roof/{r}{tail}" for r in ("memcpy", "stream_plain", "stream_nt")]
        for op in OPS:
            for dt in DTYPES:
                if prog == "actgrad-bench":
                    layouts = ["contig", "strided", "transposed"] + (["bcast"] if op in ("gelu_bwd", "softshrink_bwd") else [])
                    names += [f"peer/torch.{op}.{dt}{tail}"]
                    names += [f"peer/torch.{op}.{dt}.{layout}{tail}" for layout in layouts[1:]]
                    names += [f"api/{op}.{dt}.{layout}.{phase}{tail}" for layout in layouts
                              for phase in ("phase1", "phase2", "both")]
                else:
                    names += [f"variant/{op}.{dt}.reg.exact.u{u}.{tgt}{nt}{tail}" for u in (1, 2, 4)
                              for tgt in ("avx2", "sse4") for nt in ("", ".nt")]
if "--actgrad_variant_table" in sys.argv[1:] and prog == "actgrad-bench-variants":
    with open(os.environ["FAKE_BENCH_LOG"], "a") as f:
        f.write(json.dumps({"prog": prog, "args": sys.argv[1:], "listed": []}) + "\n")
    for op in OPS:
        for dt in DTYPES:
            for u in (1, 2, 4):
                for tgt in ("avx2", "sse4"):
                    for nt in (False, True):
                        name = f"{op}.{dt}.reg.exact.u{u}.{tgt}" + (".nt" if nt else "")
                        print(json.dumps({"name": name, "op": op, "dtype": dt, "upcast": "reg", "approx": "exact",
                                          "unroll": u, "target": tgt, "nt_stores": nt, "supported": True}))
    sys.exit(0)
listing = opts.get("--benchmark_list_tests") == "true"
flt = re.compile(opts.get("--benchmark_filter", "."))
shown = [nm for nm in names if flt.search(nm)] if listing else []
with open(os.environ["FAKE_BENCH_LOG"], "a") as f:
    f.write(json.dumps({"prog": prog, "args": sys.argv[1:], "listed": shown}) + "\n")
if not listing:
    sys.exit(3)
print("\n".join(shown))
