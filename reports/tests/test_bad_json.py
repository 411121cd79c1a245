"""Hostile JSON: nesting 100,000 deep, numbers too big for
a float or for Python's int parser, NaN and Infinity, missing fields, empty
and binary files. Each one, to every command, in a real process: exit 2, one
message naming the file, no traceback, nothing written."""

import json

import pytest

from conftest import assert_bad_input, run_module, write_json


def _first_real_time(doc, value_text):
    """The document as text with the first real_time replaced by value_text (any JSON token)."""
    text = json.dumps(doc)
    key = '"real_time": '
    i = text.index(key) + len(key)
    j = i
    while text[j] not in ",}":
        j += 1
    return text[:i] + value_text + text[j:]


def hostile_files(tmp_path, doc):
    """name -> (path, words the message must hold)."""
    cases = {
        "deep array": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        "deep object": ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
        "5000-digit integer": (_first_real_time(doc, "1" + "0" * 5000), "digits"),
        "integer beyond float": (_first_real_time(doc, "1" + "0" * 400), "real_time", "out of range"),
        "1e999": (_first_real_time(doc, "1e999"), "real_time", "inf"),
        "NaN": (_first_real_time(doc, "NaN"), "real_time", "nan"),
        "-Infinity": (_first_real_time(doc, "-Infinity"), "real_time", "inf"),
        "empty file": ("", "empty file"),
        "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not a text file"),
        "missing name": (json.dumps(dict(doc, benchmarks=[{"real_time": 1.0}])), "has no 'name'"),
    }
    # a valid document with 990 levels in its context: more than anything downstream can print or store
    deep = '{"x":' * 990 + "0" + "}" * 990
    cases["deep context"] = (json.dumps(dict(doc, context=dict(doc["context"], host_name="DEEP"))).replace(
        '"DEEP"', deep), "nested too deeply")
    out = {}
    for i, (name, (content, *words)) in enumerate(cases.items()):
        p = tmp_path / f"hostile{i}.json"
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)
        out[name] = (p, words)
    return out


CASES = ["deep array", "deep object", "deep context", "5000-digit integer", "integer beyond float", "1e999",
         "NaN", "-Infinity", "empty file", "binary", "missing name"]


@pytest.mark.parametrize("case", CASES)
def test_hostile_json_is_a_message_for_every_command(tmp_path, small_run, case):
    doc = small_run(atlas=False)
    path, words = hostile_files(tmp_path, doc)[case]
    good = write_json(tmp_path / "good.json", doc)
    db, out, verdict = tmp_path / "h.sqlite", tmp_path / "out", tmp_path / "verdict.json"
    for args in (["compare", path, good, "--json", verdict], ["compare", good, path], ["record", path, "--db", db],
                 ["plot", path, "--out", out]):
        r = run_module(*args)
        assert_bad_input(r, path.name, *words)
    assert not db.exists() and not out.exists() and not verdict.exists()


def test_huge_date_number_is_a_message(tmp_path, small_run):
    doc = small_run()
    doc["context"]["date"] = 1e300
    f = write_json(tmp_path / "r.json", doc)
    r = run_module("record", f, "--db", tmp_path / "h.sqlite")
    assert_bad_input(r, "r.json", "date")
    assert not (tmp_path / "h.sqlite").exists()
    r = run_module("record", write_json(tmp_path / "ok.json", small_run()), "--db", tmp_path / "h.sqlite",
                   "--date", "99999-01-01")
    assert_bad_input(r, "--date")
