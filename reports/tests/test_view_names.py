"""Peer benchmarks on views: peer/<peer>.<op>.<dtype>.<layout> beside the contiguous
peer/<peer>.<op>.<dtype>; the names parse with their layout, and the reports (plot, compare,
stability) take files that have them; the contiguous comparisons keep using the contiguous peer."""

import copy

from conftest import write_json
from reports import names, plots, report


def test_peer_names_carry_their_layout():
    contig = names.parse("peer/torch.gelu_bwd.f32/n:65536/thr:1/place:2")
    assert (contig.peer, contig.op, contig.dtype, contig.layout) == ("torch", "gelu_bwd", "f32", "contig")
    assert contig.label == "peer torch" and contig.placement == 2
    view = names.parse("peer/torch.gelu_bwd.bf16.transposed/n:16777216/thr:2/place:0")
    assert (view.peer, view.op, view.dtype, view.layout, view.n, view.thr) == \
        ("torch", "gelu_bwd", "bf16", "transposed", 16 << 20, 2)
    assert view.label == "peer torch transposed"
    assert view.base == "peer/torch.gelu_bwd.bf16.transposed/n:16777216/thr:2"
    assert view.series != contig.series
    api = names.parse("api/gelu_bwd.f32.transposed.phase2/n:65536/thr:1/place:0")
    assert api.layout == "transposed" and api.phase == "phase2"


def with_view_peers(doc):
    """The run plus, from its contiguous torch GELU f32 and API rows: torch on a strided view (10x
    faster), the API's phase two contiguous (as fast as its whole calls) and on the strided view (10x)."""
    doc = copy.deepcopy(doc)
    extra = []
    for b in doc["benchmarks"]:
        for src, dst, f in (("peer/torch.gelu_bwd.f32/", "peer/torch.gelu_bwd.f32.strided/", 10),
                            ("api/gelu_bwd.f32.contig.both/", "api/gelu_bwd.f32.contig.phase2/", 1),
                            ("api/gelu_bwd.f32.contig.both/", "api/gelu_bwd.f32.strided.phase2/", 10)):
            if b["name"].startswith(src):
                v = dict(b, name=b["name"].replace(src, dst), run_name=b.get("run_name", b["name"]).replace(src, dst))
                for k in ("bytes_per_second", "items_per_second"):
                    if k in v:
                        v[k] *= f
                extra.append(v)
    assert extra, "the synthetic run has no torch gelu f32 rows"
    doc["benchmarks"] += extra
    return doc


def test_reports_take_view_peers(tmp_path, cli_run, small_run):
    base = small_run(ops=("gelu_bwd",), dtypes=("f32",), sizes=[1024, 65536], atlas=False)
    run = write_json(tmp_path / "run.json", with_view_peers(base))
    other = write_json(tmp_path / "other.json", with_view_peers(base))
    r = cli_run("plot", run, "--out", tmp_path / "out")
    assert r.code == 0, r
    assert "peer torch strided" in "".join(p.read_text() for p in (tmp_path / "out").glob("*.svg"))
    r = cli_run("compare", run, other)
    assert r.code == 0, r
    r = cli_run("stability", run, other)
    assert r.code == 0, r
    assert "strided" not in r.out  # the ratios of the goals: contiguous API over the contiguous peer


def test_best_table_compares_with_the_contiguous_peer(tmp_path, small_run):
    from reports import inputs
    base = small_run(ops=("gelu_bwd",), dtypes=("f32",), sizes=[65536], atlas=False)
    path = write_json(tmp_path / "run.json", with_view_peers(base))
    points = plots.collect(inputs.load_all([path]).runs, [])
    rows = report._best_table(points)
    assert rows and all(r[7] == "peer torch" or r[7] == "peer dnnl" or r[7] == "-" for r in rows), rows
