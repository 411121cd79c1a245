"""Bad, foreign, empty or incomplete inputs: a clear message naming the file,
exit code 2, and nothing written."""

import json
import os

import pytest

from conftest import write_json


def bad_files(tmp_path, small_run):
    out = {}
    (tmp_path / "empty.json").write_text("")
    out["empty file"] = (tmp_path / "empty.json", "empty file")
    (tmp_path / "trunc.json").write_text('{"context": {}, "benchmarks": [{"name": "a", "real_')
    out["truncated"] = (tmp_path / "trunc.json", "not valid JSON")
    (tmp_path / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    out["binary"] = (tmp_path / "bin.json", "not")
    out["foreign object"] = (write_json(tmp_path / "pkg.json", {"name": "left-pad", "version": "1.0"}),
                             "not Google Benchmark JSON")
    out["empty run"] = (write_json(tmp_path / "norun.json", {"context": {}, "benchmarks": []}), "empty run")
    doc = small_run()
    del doc["benchmarks"][3]["real_time"]
    out["missing real_time"] = (write_json(tmp_path / "noreal.json", doc), "has no 'real_time'")
    doc = small_run()
    doc["benchmarks"][0]["time_unit"] = "fortnight"
    out["bad unit"] = (write_json(tmp_path / "unit.json", doc), "time_unit")
    out["missing file"] = (tmp_path / "nope.json", "no such file")
    return out


@pytest.mark.parametrize("case", ["empty file", "truncated", "binary", "foreign object", "empty run",
                                  "missing real_time", "bad unit", "missing file"])
def test_every_command_rejects_bad_input(tmp_path, cli_run, small_run, case):
    path, msg = bad_files(tmp_path, small_run)[case]
    good = write_json(tmp_path / "good.json", small_run())
    out = tmp_path / "out"
    db = tmp_path / "h.sqlite"
    for args in (["plot", path, "--out", out], ["compare", good, path], ["compare", path, good],
                 ["record", path, "--db", db]):
        r = cli_run(*args)
        assert r.code == 2, (args, r)
        assert os.path.basename(str(path)) in r.err and msg in r.err, (args, r.err)
        assert "Traceback" not in r.err
    assert not out.exists()


def test_plot_specific_problems(tmp_path, cli_run, small_run):
    out = tmp_path / "out"
    doc = small_run()
    for b in doc["benchmarks"]:
        if b["name"].startswith("variant/"):
            b.pop("bytes_per_second", None)
    r = cli_run("plot", write_json(tmp_path / "nobytes.json", doc), "--out", out)
    assert r.code == 2 and "bytes_per_second" in r.err and "nobytes.json" in r.err
    foreign = {"context": {}, "benchmarks": [{"name": "BM_memcpy/8", "real_time": 3, "time_unit": "ns"}]}
    r = cli_run("plot", write_json(tmp_path / "foreign.json", foreign), "--out", out)
    assert r.code == 2 and "no actgrad benchmark" in r.err and "BM_memcpy/8" in r.err
    table = {"schema": "actgrad-tiling-table", "version": 7, "entries": []}
    r = cli_run("plot", write_json(tmp_path / "t.json", table), "--out", out)
    assert r.code == 2 and "version 7" in r.err
    r = cli_run("plot", write_json(tmp_path / "acc.json", [{"op": "gelu_bwd", "dtype": "f32", "variant": "v"}]),
                "--out", out)
    assert r.code == 2 and "max_err" in r.err and "acc.json" in r.err
    r = cli_run("plot", write_json(tmp_path / "nums.json", [1, 2, 3]), "--out", out)
    assert r.code == 2 and "nums.json" in r.err
    assert not out.exists()


def test_bad_input_leaves_the_previous_report_untouched(tmp_path, cli_run, small_run):
    out = tmp_path / "out"
    good = write_json(tmp_path / "good.json", small_run(atlas=False))
    assert cli_run("plot", good, "--out", out).code == 0
    before = sorted(os.listdir(out))
    index = (out / "index.html").read_text()
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    # a good file then a bad one: nothing is written at all
    r = cli_run("plot", good, bad, "--out", out)
    assert r.code == 2 and "bad.json" in r.err
    assert sorted(os.listdir(out)) == before and (out / "index.html").read_text() == index
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".out.")], "temporary directory left behind"


def test_refuses_to_replace_a_foreign_directory(tmp_path, cli_run, small_run):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    r = cli_run("plot", write_json(tmp_path / "g.json", small_run(atlas=False)), "--out", out)
    assert r.code == 2 and "not made by this tool" in r.err
    assert (out / "precious.txt").read_text() == "keep me"


def test_compare_needs_common_benchmarks(tmp_path, cli_run, small_run):
    a = write_json(tmp_path / "a.json", small_run(ops=("gelu_bwd",), atlas=False))
    doc = small_run(ops=("hardswish_bwd",), atlas=False)
    doc["benchmarks"] = [b for b in doc["benchmarks"] if not b["name"].startswith("roof/")]
    b = write_json(tmp_path / "b.json", doc)
    r = cli_run("compare", a, b)
    assert r.code == 2 and "no benchmark in common" in r.err


def test_bad_options(tmp_path, cli_run, small_run):
    a = write_json(tmp_path / "a.json", small_run())
    assert cli_run("compare", a, a, "--threshold", "lots").code == 2
    assert cli_run("compare", a, a, "--filter", "(").code == 2
    assert cli_run("compare", a, a, "--alpha", "3").code == 2
    assert cli_run("frobnicate").code == 2
    r = cli_run("record", a, "--db", tmp_path / "h.sqlite", "--date", "yesterday-ish")
    assert r.code == 2 and "date" in r.err
    r = cli_run("dashboard", "--db", tmp_path / "none.sqlite", "--out", tmp_path / "d")
    assert r.code == 2 and "none.sqlite: no such file" in r.err and not (tmp_path / "d").exists()
    assert not (tmp_path / "none.sqlite").exists()


def wrong_types(small_run):
    """name -> (command, document, words of the message): a field of the wrong JSON type."""
    from reports import synth
    run = small_run(atlas=False)
    cases = {}
    for key, value in (("time_unit", ["ns"]), ("aggregate_name", {"a": 1})):
        doc = small_run(atlas=False)
        for b in doc["benchmarks"]:
            if b.get("run_type") == "aggregate" or key == "time_unit":
                b[key] = value
        cases[key] = ("compare", doc, key)
    for key, value in (("op", 7), ("variant", None), ("layout", {"a": 1}), ("tile", "x"), ("tile", float("nan"))):
        doc = synth.make_table()
        doc["entries"][0][key] = value
        cases[f"table {key}={value!r}"] = ("plot", doc, key)
    doc = synth.make_table()
    doc["version"] = [2]
    cases["table version"] = ("plot", doc, "version")
    doc = synth.make_table()
    doc["provenance"] = "yesterday"
    cases["table provenance"] = ("plot", doc, "provenance")
    for key, value in (("dtype", ["f32"]), ("max_err", float("inf")), ("max_err", 10 ** 400)):
        doc = synth.make_accuracy()
        doc["results"][0][key] = value
        cases[f"accuracy {key}={str(value)[:8]}"] = ("plot", doc, key)
    return run, cases


CASE_NAMES = ["time_unit", "aggregate_name", "table op=7", "table variant=None", "table layout={'a': 1}",
              "table tile='x'", "table tile=nan", "table version", "table provenance", "accuracy dtype=['f32']",
              "accuracy max_err=inf", "accuracy max_err=10000000"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_fields_of_the_wrong_type(tmp_path, cli_run, small_run, case):
    run, cases = wrong_types(small_run)
    cmd, doc, word = cases[case]
    good = write_json(tmp_path / "good.json", run)
    bad = write_json(tmp_path / "wrong.json", doc)
    args = ["compare", good, bad] if cmd == "compare" else ["plot", good, bad, "--out", tmp_path / "out"]
    r = cli_run(*args)
    assert r.code == 2 and "wrong.json" in r.err and word in r.err and "Traceback" not in r.err, r
    assert not (tmp_path / "out").exists()
