"""report tune-gain: the before/after table of scripts/tune from an actgrad-tune --verify-json file."""

from conftest import run_cli, write_json


def row(op, dtype, layout, octave, speedup, verdict, mode="none"):
    return {"cell": f"{op}/{dtype}/-/{layout}/o{octave}", "op": op, "dtype": dtype, "gelu_approx": mode,
            "layout": layout, "octave": octave, "n": int(2 ** octave * 1.4142), "entry": "a thr1", "base": "b thr2",
            "same": verdict == "same", "entry_ns": 100.0, "base_ns": 100.0 * speedup, "speedup": speedup,
            "p_faster": 0.01, "p_slower": 0.99, "verdict": verdict}


def gain_doc():
    return {"machine_id": "genuineintel-6-167", "cpu_model": "Test CPU", "table": "t.json",
            "baseline": "the fallback (genuineintel-6-143)", "date": "2026-12-01T00:00:00Z", "alpha": 0.05,
            "rows": [row("selu_bwd", "f16", "contig", 16, 1.5, "faster"),
                     row("selu_bwd", "f16", "contig", 24, 1.0, "same"),
                     row("gelu_bwd", "f32", "strided", 16, 0.8, "slower", mode="tanh")]}


def test_table_gives_each_cell_its_speedup_and_verdict(tmp_path):
    r = run_cli("tune-gain", write_json(tmp_path / "g.json", gain_doc()))
    assert r.code == 0, r
    assert "genuineintel-6-143" in r.out and "genuineintel-6-167" in r.out and "2026-12-01" in r.out
    assert "| op dtype layout | 64K | 16M | geomean |" in r.out
    assert "| selu_bwd f16 contig | 1.50x | 1.00x (same) | 1.22x |" in r.out
    assert "| gelu_bwd f32 tanh strided | 0.80x (slower) |  | 0.80x |" in r.out
    assert "1 significantly faster, 1 significantly slower, 0 not significant, 1 the same choice" in r.out


def test_a_near_exact_table_says_its_ratios_are_the_price_of_exactness(tmp_path):
    r = run_cli("tune-gain", write_json(tmp_path / "g.json", gain_doc()))
    assert "price of exactness" not in r.out
    doc = gain_doc()
    doc["accuracy_class"] = "near-exact"
    doc["baseline"] = "the table b.json (genuineintel-6-167, accuracy class rule)"
    r = run_cli("tune-gain", write_json(tmp_path / "g.json", doc))
    assert r.code == 0, r
    assert "accuracy class near-exact" in r.out and "price of exactness" in r.out
    assert "baseline time / new time" in r.out


def test_merged_layouts_give_one_row_per_op_and_dtype(tmp_path):
    doc = gain_doc()
    doc["rows"].append(row("selu_bwd", "f16", "strided", 16, 1.0 / 1.5, "slower"))
    r = run_cli("tune-gain", write_json(tmp_path / "g.json", doc), "--merge-layouts")
    assert r.code == 0, r
    assert "| op dtype | 64K | 16M | geomean |" in r.out
    assert "| selu_bwd f16 | 1.00x (1 slower) | 1.00x (same) | 1.00x |" in r.out
    assert "| gelu_bwd f32 tanh | 0.80x (slower) |  | 0.80x |" in r.out


def test_md_and_plot_are_written(tmp_path):
    g = write_json(tmp_path / "g.json", gain_doc())
    r = run_cli("tune-gain", g, "--md", tmp_path / "g.md", "--plot", tmp_path / "g.png")
    assert r.code == 0, r
    assert "| selu_bwd f16 contig |" in (tmp_path / "g.md").read_text()
    assert (tmp_path / "g.png").read_bytes()[:4] == b"\x89PNG"


def test_bad_input_exits_2_naming_the_file(tmp_path):
    (tmp_path / "bad.json").write_text("{")
    r = run_cli("tune-gain", tmp_path / "bad.json")
    assert r.code == 2 and "bad.json" in r.err and "not JSON" in r.err
    r = run_cli("tune-gain", write_json(tmp_path / "norows.json", {"rows": 3}))
    assert r.code == 2 and "no 'rows' list" in r.err
    doc = gain_doc()
    del doc["rows"][0]["octave"]
    r = run_cli("tune-gain", write_json(tmp_path / "missing.json", doc))
    assert r.code == 2 and "row 0: missing octave" in r.err
    doc = gain_doc()
    doc["rows"][1]["speedup"] = -1
    r = run_cli("tune-gain", write_json(tmp_path / "neg.json", doc))
    assert r.code == 2 and "row 1" in r.err
    r = run_cli("tune-gain", tmp_path / "absent.json")
    assert r.code == 2 and "absent.json" in r.err
