"""``report plot``: figures, page, skipped parts, atomic output."""

import os
import re

from conftest import write_json
from reports import synth


def test_plot_everything(tmp_path, cli_run, small_run):
    run = write_json(tmp_path / "run.json", small_run(ops=("gelu_bwd",), dtypes=("f32", "bf16"), sizes=[1024, 65536]))
    table = write_json(tmp_path / "table.json", synth.make_table(ops=("gelu_bwd",), dtypes=("f32",)))
    acc = write_json(tmp_path / "acc.json", synth.make_accuracy(ops=("gelu_bwd",), dtypes=("bf16",)))
    out = tmp_path / "out"
    r = cli_run("plot", run, table, acc, "--out", out)
    assert r.code == 0, r
    html = (out / "index.html").read_text()
    for section in ('id="throughput"', 'id="table"', 'id="pareto"', 'id="atlas"', 'id="best"', 'id="inputs"'):
        assert section in html
    files = set(os.listdir(out))
    for stem in ("throughput_gelu_bwd_f32_thr1", "throughput_gelu_bwd_bf16_thr1", "pareto_gelu_bwd",
                 "atlas_gelu_bwd", "atlas_tiles_gelu_bwd.f16.atlas.native.exact.db2",
                 "atlas_tiles_gelu_bwd.f32.atlas.native.exact.db2"):
        assert {stem + ".png", stem + ".svg"} <= files, stem
    assert any(f.startswith("table_0_") and f.endswith(".png") for f in files)
    # every image and link of the page exists, and the PNGs are PNGs
    for ref in re.findall(r'(?:src|href)="([^"#]+)"', html):
        assert (out / ref).is_file(), ref
    for f in files:
        if f.endswith(".png"):
            assert (out / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if f.endswith(".svg"):
            assert "<svg" in (out / f).read_text()[:2000]
    assert "Not drawn" not in html
    assert "genuineintel-6-143" in html and "gelu_bwd" in html


def test_plot_without_optional_inputs_says_what_is_skipped(tmp_path, cli_run, small_run):
    out = tmp_path / "out"
    r = cli_run("plot", write_json(tmp_path / "run.json", small_run(atlas=False)), "--out", out)
    assert r.code == 0, r
    html = (out / "index.html").read_text()
    assert "Not drawn" in html
    assert "no tiling table given" in html and "no accuracy results given" in html
    assert "no atlas/ benchmark" in html
    assert "skipped tuned table heat map" in r.out


def test_plot_table_only_and_replacing_output(tmp_path, cli_run, small_run):
    out = tmp_path / "out"
    assert cli_run("plot", write_json(tmp_path / "run.json", small_run(atlas=False)), "--out", out).code == 0
    assert any(f.startswith("throughput_") for f in os.listdir(out))
    r = cli_run("plot", write_json(tmp_path / "t.json", synth.make_table(ops=("gelu_bwd",), dtypes=("f32",))),
                "--out", out)
    assert r.code == 0, r
    files = os.listdir(out)
    assert not any(f.startswith("throughput_") for f in files), "old figures must not linger"
    assert any(f.startswith("table_0_") for f in files)
    assert "no Google Benchmark JSON given" in (out / "index.html").read_text()


def test_pct_of_bandwidth_computed_when_missing(small_run):
    from reports import gbench, plots
    doc = small_run(atlas=False)
    for b in doc["benchmarks"]:
        b.pop("pct_of_bandwidth", None)
    notes = []
    pts = plots.collect([gbench.parse(doc, "r.json")], notes)
    v = [p for p in pts if p.kind == "variant"]
    assert v and all(p.pct is not None and 0 < p.pct < 150 for p in v)


def test_pareto_front():
    from reports.plots import pareto_front
    items = [(1e-7, 40, "a"), (1e-6, 50, "b"), (1e-6, 45, "c"), (1e-5, 48, "d"), (1e-8, 30, "e")]
    assert pareto_front(items) == ["e", "a", "b"]


def test_the_committed_accuracy_results_are_read(tmp_path, cli_run, small_run):
    """docs/accuracy.json as actgrad-accuracy writes it (schema 'actgrad-accuracy')
    is an input the plot accepts; a broken one is refused with a message."""
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "accuracy.json")
    run = write_json(tmp_path / "run.json", small_run(ops=("gelu_bwd",), dtypes=("f32",), sizes=[1024]))
    r = cli_run("plot", run, docs, "--out", tmp_path / "out")
    assert r.code == 0, r
    assert "no accuracy results given" not in (tmp_path / "out" / "index.html").read_text()
    bad = write_json(tmp_path / "acc.json", {"schema": "actgrad-accuracy", "version": 1})
    r = cli_run("plot", run, bad, "--out", tmp_path / "out2")
    assert r.code == 2 and "results" in r.err, r


def test_plot_reads_version_1_and_2_tables(tmp_path, cli_run):
    """v2 tables have octave cells ([2^h, 2^(h+1))); v1 tables 4x buckets."""
    from reports import inputs
    v2 = synth.make_table(ops=("gelu_bwd",), dtypes=("f32",))
    v1 = dict(v2, version=1, entries=[])
    for e in v2["entries"]:
        if e["octave"] % 2 == 0:
            b = e["octave"] // 2
            v1["entries"].append({k: x for k, x in e.items() if k != "octave"} |
                                 {"bucket": b, "size_lo": 4 ** b, "size_hi": 4 ** (b + 1)})
    p1, p2 = write_json(tmp_path / "v1.json", v1), write_json(tmp_path / "v2.json", v2)
    kind, doc = inputs.classify(p2)
    assert kind == "table" and doc["entries"][0]["_range"] == (1024, 2048)
    kind, doc = inputs.classify(p1)
    assert kind == "table" and doc["entries"][0]["_range"] == (1024, 4096)
    for p in (p1, p2):
        out = tmp_path / ("out_" + os.path.basename(p))
        r = cli_run("plot", p, "--out", out)
        assert r.code == 0, r
        assert any(f.startswith("table_0_") for f in os.listdir(out))
    bad = write_json(tmp_path / "bad.json", dict(v2, entries=[{k: x for k, x in v2["entries"][0].items()
                                                                if k != "octave"}]))
    r = cli_run("plot", bad, "--out", tmp_path / "bad_out")
    assert r.code != 0 and "lacks octave" in r.err, r


def test_a_null_max_err_is_listed_not_drawn(tmp_path, cli_run, small_run):
    """actgrad-accuracy writes "max_err": null for a non-finite error: the plot
    takes the file, lists that variant with an infinite error and draws the rest."""
    run = small_run(ops=("gelu_bwd",), dtypes=("bf16",), sizes=[65536])
    acc = synth.make_accuracy(ops=("gelu_bwd",), dtypes=("bf16",))
    acc["results"][0].update(max_err=None, shippable=False)
    lost = acc["results"][0]["variant"]
    r = cli_run("plot", write_json(tmp_path / "run.json", run), write_json(tmp_path / "acc.json", acc),
                "--out", tmp_path / "out")
    assert r.code == 0, r
    html = (tmp_path / "out" / "index.html").read_text()
    assert lost in html and "<td>inf</td>" in html.replace(' class="num"', "")
    assert "pareto_gelu_bwd.png" in os.listdir(tmp_path / "out")
