#!/usr/bin/env python3
"""scripts/tune end to end with a tiny budget: the table written and installed
in a user cache of its own, the before/after comparison as JSON, markdown and
PNG, the closing lines; a run narrowed to other cells keeps the cached table's
entries outside them; a near-exact run's table holds only variants within the
class's bound and is compared with the table the library used before it; an
quick pass on a table that records what it was tuned among tunes only the
series with new candidates, and nothing on a fresh table; an interrupted run
exits 130 with its log kept and the same command resumes it;
bad options exit 2.

Usage: scripts_tune_test.py SOURCE_DIR BUILD_DIR WORK_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

SRC, BUILD, WORK = (os.path.abspath(a) for a in sys.argv[1:4])
TUNE = os.path.join(SRC, "scripts", "tune")
ENV = dict(os.environ, ACTGRAD_TABLE_CACHE=os.path.join(WORK, "cache"))
ENV.pop("ACTGRAD_TILING_TABLE", None)
TINY = ["--ops", "selu", "--dtypes", "f32", "--sizes", "16K-64K", "--layouts", "contig", "--compare-sizes", "64K",
        "--plain", "--build-dir", BUILD]
failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}\n{detail}", file=sys.stderr)


def tune(*extra, **kw):
    return subprocess.run([TUNE, *extra], capture_output=True, text=True, env=ENV, cwd=WORK, timeout=600, **kw)


def which_table():
    out = subprocess.run([os.path.join(BUILD, "tools", "tune", "actgrad-tune"), "--which-table"],
                         capture_output=True, text=True, env=ENV, check=True).stdout
    return json.loads(out)


def machine_id():
    return which_table()["machine_id"]


BEFORE_OWN = None  # whether the library used a table of this machine's own before the first run (main)


def test_bad_options():
    p = tune("--no-such-flag")
    check(p.returncode == 2 and "usage" in p.stderr.lower(), "a bad option exits 2 with the usage", p.stderr)


def test_tiny_run(mid):
    table, log = os.path.join(WORK, "t.json"), os.path.join(WORK, "t.log.jsonl")
    p = tune("--out", table, "--log", log, "--budget", "4s", *TINY)
    check(p.returncode == 0, "the tiny run succeeds", p.stdout + p.stderr)
    if p.returncode != 0:
        return
    with open(table) as f:
        t = json.load(f)
    check(t["machine_id"] == mid and t["entries"], "the table names this machine and has entries")
    cached = os.path.join(WORK, "cache", mid + ".json")
    check(os.path.isfile(cached) and json.load(open(cached))["entries"] == t["entries"],
          "the table is installed in the user cache")
    gain = json.load(open(os.path.join(WORK, "t-gain.json")))
    check(gain["machine_id"] == mid and gain["rows"] and all("verdict" in r for r in gain["rows"]),
          "the comparison rows have verdicts", json.dumps(gain)[:2000])
    check(("baseline.json" in gain["baseline"]) if BEFORE_OWN else ("fallback" in gain["baseline"]),
          "the comparison is against the table the library used before the run", gain["baseline"])
    md = open(os.path.join(WORK, "t-gain.md")).read()
    check("| selu_bwd f32 contig |" in md and "Overall:" in md, "the markdown table has the cell", md)
    with open(os.path.join(WORK, "t-gain.png"), "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", "the heat map is a PNG")
    check(f"installed as {cached}" in p.stdout and "To contribute" in p.stdout, "the closing lines", p.stdout)
    check("Gain of this machine's table" in p.stdout, "the comparison table is printed", p.stdout)


def test_narrow_run_keeps_the_other_cells(mid):
    """After test_tiny_run (the user cache holds a table of this machine): a run narrowed to another op
    replaces the cached table with one that keeps every cell it did not measure."""
    cached = os.path.join(WORK, "cache", mid + ".json")
    key = lambda e: (e["op"], e["dtype"], e.get("layout", "contig"), e["octave"], e["variant"])
    before = {key(e) for e in json.load(open(cached))["entries"]}
    table, log = os.path.join(WORK, "n.json"), os.path.join(WORK, "n.log.jsonl")
    p = tune("--out", table, "--log", log, "--budget", "4s", "--ops", "softshrink", "--dtypes", "f32", "--sizes",
             "64K", "--layouts", "contig", "--no-compare", "--plain", "--build-dir", BUILD)
    check(p.returncode == 0, "the narrowed run succeeds", p.stdout + p.stderr)
    if p.returncode != 0:
        return
    after = {key(e) for e in json.load(open(cached))["entries"]}
    lost = sorted(k for k in before - after if k[0] != "softshrink_bwd")
    check(not lost, "the cells outside the run keep their entries", str(lost[:10]))
    check(any(k[0] == "softshrink_bwd" for k in after), "the run's cells are in the installed table")


def test_quick_pass_tunes_only_what_is_new(mid):
    """A user-cache table whose SELU f32 cells were tuned among no candidate (recorded, empty): the quick pass
    tunes that series alone; once every cell records today's candidates it tunes nothing."""
    cached = os.path.join(WORK, "cache", mid + ".json")
    t = json.load(open(os.path.join(WORK, "t.json")))
    t["entries"] = [e for e in t["entries"] if e["op"] == "selu_bwd" and e["dtype"] == "f32"]
    for e in t["entries"]:
        e.setdefault("extra", {}).setdefault("tuning", {}).update(search_version=15, candidate_set="e0", tuned="2026-01-01")
    t["provenance"]["candidate_sets"] = {"e0": []}
    t["provenance"].pop("merged_from", None)
    json.dump(t, open(cached, "w"))
    fresh = which_table()["table"]["freshness"]
    check(fresh["stale_cells"] == len(t["entries"]) and list(fresh["new_candidates"]) == ["selu_bwd f32"],
          "--which-table names the stale cells", json.dumps(fresh)[:1000])
    table, log = os.path.join(WORK, "s.json"), os.path.join(WORK, "s.log.jsonl")
    p = tune("--out", table, "--log", log, "--budget", "20s", "--no-compare", "--plain", "--build-dir", BUILD)
    check(p.returncode == 0, "the quick pass on a stale table succeeds", p.stdout + p.stderr)
    check("selu_bwd f32: new candidates" in p.stderr and p.stderr.count("--ops") == 1 and
          "--ops selu_bwd --dtypes f32" in p.stderr, "it tunes the stale series alone", p.stderr)
    if p.returncode != 0:
        return
    out = json.load(open(table))
    sets = out["provenance"].get("candidate_sets", {})
    today = [h for h, names in sets.items() if names]
    check(today, "the run records the candidates it tuned among", json.dumps(out["provenance"])[:1000])
    if not today:
        return
    for e in out["entries"]:
        e["extra"]["tuning"].update(candidate_set=today[0])
    out["provenance"]["candidate_sets"] = {today[0]: sets[today[0]]}
    json.dump(out, open(cached, "w"))
    check(which_table()["table"]["freshness"]["stale_cells"] == 0, "a table tuned among today's candidates is fresh")
    p = tune("--out", table, "--log", log, "--no-compare", "--plain", "--build-dir", BUILD)
    check(p.returncode == 0 and "nothing to tune" in p.stderr, "a fresh table is not tuned again", p.stderr)


def near_exact_variants():
    """The variants of docs/accuracy.json within the near-exact bound (the output's half-ulp plus 1e-6)."""
    bound = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
    with open(os.path.join(SRC, "docs", "accuracy.json")) as f:
        results = json.load(f)["results"]
    return {r["variant"] for r in results
            if r.get("shippable") and r["dtype"] in bound and r["max_err"] <= bound[r["dtype"]] + 1e-6}


def test_near_exact_run(mid):
    """After test_tiny_run: the user cache holds that run's rule table, the near-exact run's baseline."""
    cached = os.path.join(WORK, "cache", mid + ".json")
    before = open(cached).read()
    table, log = os.path.join(WORK, "ne.json"), os.path.join(WORK, "ne.log.jsonl")
    p = tune("--out", table, "--log", log, "--budget", "4s", "--accuracy-class", "near-exact", "--ops", "gelu",
             "--dtypes", "f32", "--sizes", "64K", "--layouts", "contig", "--compare-sizes", "64K", "--plain",
             "--build-dir", BUILD)
    check(p.returncode == 0, "the near-exact run succeeds", p.stdout + p.stderr)
    if p.returncode != 0:
        return
    t = json.load(open(table))
    check(t.get("accuracy_class") == "near-exact" and t["entries"], "the table says its class", json.dumps(t)[:500])
    allowed = near_exact_variants()
    outside = [e["variant"] for e in t["entries"] if e["variant"] not in allowed]
    check(not outside, "every choice is within the near-exact bound", str(outside))
    check(open(os.path.join(WORK, "ne-baseline.json")).read() == before,
          "the baseline is a copy of the table the library used before the run")
    gain = json.load(open(os.path.join(WORK, "ne-gain.json")))
    check(gain["accuracy_class"] == "near-exact" and "accuracy class rule" in gain["baseline"],
          "the comparison is against the rule table", json.dumps(gain)[:1000])
    check("price of exactness" in p.stdout, "the printed comparison says what its ratios are", p.stdout)
    check(json.load(open(cached)).get("accuracy_class") == "near-exact", "the near-exact table is installed")
    check("accuracy class near-exact" in p.stdout, "the closing lines say the class", p.stdout)
    p = tune("--accuracy-class", "exact", *TINY)
    check(p.returncode == 2 and "near-exact" in p.stderr, "an unknown class exits 2 naming the classes", p.stderr)


def test_interrupted_run_resumes():
    table, log = os.path.join(WORK, "i.json"), os.path.join(WORK, "i.log.jsonl")
    args = [TUNE, "--out", table, "--log", log, "--budget", "8s", "--no-compare", *TINY]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=WORK,
                            start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and not (os.path.exists(log) and sum(1 for _ in open(log)) > 20):
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C on a terminal: the script and actgrad-tune
    out, err = proc.communicate(timeout=120)
    check(proc.returncode == 130, "an interrupted run exits 130", err)
    check("interrupted" in err and log in err, "it says where the measurements are", err)
    check(not os.path.exists(table), "no table is written by an interrupted run")
    lines = sum(1 for _ in open(log))
    p = tune("--out", table, "--log", log, "--budget", "8s", "--no-compare", *TINY)
    check(p.returncode == 0 and "resuming" in p.stderr, "the same command resumes", p.stderr)
    check(os.path.isfile(table) and sum(1 for _ in open(log)) >= lines, "the resumed run writes the table")


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    global BEFORE_OWN
    mid = machine_id()
    BEFORE_OWN = which_table()["table"]["own"]
    test_bad_options()
    test_tiny_run(mid)
    test_narrow_run_keeps_the_other_cells(mid)
    test_near_exact_run(mid)
    test_quick_pass_tunes_only_what_is_new(mid)
    test_interrupted_run_resumes()
    print(f"{len(failures)} failures" if failures else "scripts/tune: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
