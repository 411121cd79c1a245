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


def test_gelu_tanh_is_gelu_with_its_mode_and_keeps_its_own_label():
    tanh = names.parse("api/gelu_bwd_tanh.f32.contig.phase2/n:65536/thr:1/place:0")
    erf = names.parse("api/gelu_bwd.f32.contig.phase2/n:65536/thr:1/place:0")
    assert (tanh.op, tanh.approx, tanh.form, tanh.dtype, tanh.layout, tanh.phase, tanh.n) == \
        ("gelu_bwd", "tanh", "gelu_bwd_tanh", "f32", "contig", "phase2", 65536)
    assert (erf.op, erf.approx, erf.form) == ("gelu_bwd", "erf", "gelu_bwd")
    assert tanh.label == "api tanh contig.phase2" and erf.label == "api contig.phase2"
    assert tanh.series != erf.series
    peer = names.parse("peer/torch.gelu_bwd_tanh.bf16/n:4096/thr:2/place:3")
    assert (peer.peer, peer.op, peer.approx, peer.form, peer.dtype, peer.layout, peer.thr, peer.placement) == \
        ("torch", "gelu_bwd", "tanh", "gelu_bwd_tanh", "bf16", "contig", 2, 3)
    assert peer.label == "peer torch tanh"
    view = names.parse("peer/dnnl.gelu_bwd_tanh.f16.strided/n:65536/thr:1")
    assert (view.peer, view.op, view.form, view.dtype, view.layout) == ("dnnl", "gelu_bwd", "gelu_bwd_tanh", "f16",
                                                                        "strided")
    assert view.label == "peer dnnl tanh strided"
    assert names.parse("peer/torch.gelu_bwd.bf16/n:4096/thr:2").label == "peer torch"
    # the other ops have no mode; variants keep their approx field, whose first word is the mode
    selu = names.parse("peer/torch.selu_bwd.f16/n:4096/thr:1")
    assert (selu.op, selu.approx, selu.form) == ("selu_bwd", None, "selu_bwd")
    var = names.parse("variant/gelu_bwd.f32.reg.tanh_pw5.u4.avx2/n:4096/thr:1")
    assert (var.op, var.approx, var.form, var.label) == ("gelu_bwd", "tanh_pw5", "gelu_bwd_tanh", "reg.tanh_pw5.u4.avx2")
    assert names.parse("variant/gelu_bwd.f32.reg.erf_as.u4.avx2/n:4096/thr:1").form == "gelu_bwd"
    assert names.OP_FORMS == ("selu_bwd", "hardswish_bwd", "gelu_bwd", "gelu_bwd_tanh", "softshrink_bwd",
                              "logit_grad")


def test_a_gelu_plot_keeps_erf_and_tanh_apart(tmp_path, small_run):
    """One plot per (op, dtype, threads) holds both GELU forms, each under its own label; the best-variant
    table compares the (erf) variants with the erf peer, not with the tanh peer (made 10x faster here)."""
    from reports import inputs
    base = small_run(ops=("gelu_bwd",), dtypes=("f32",), sizes=[4096, 65536], atlas=False)
    doc = copy.deepcopy(base)
    for b in base["benchmarks"]:
        for src, dst in (("api/gelu_bwd.", "api/gelu_bwd_tanh."), ("peer/torch.gelu_bwd.", "peer/torch.gelu_bwd_tanh.")):
            if b["name"].startswith(src):
                v = dict(b, name=b["name"].replace(src, dst), run_name=b.get("run_name", b["name"]).replace(src, dst))
                for k in ("bytes_per_second", "items_per_second"):
                    v[k] = v.get(k, 0) * 10
                v["real_time"] /= 10
                doc["benchmarks"].append(v)
    points = plots.collect(inputs.load_all([write_json(tmp_path / "run.json", doc)]).runs, [])
    labels = {}
    for p in points:
        if p.kind in ("api", "peer"):
            labels.setdefault(p.label, set()).add(p.name.split("/")[1].split(".")[p.kind == "peer"])
    assert "peer torch tanh" in labels and "peer torch" in labels
    assert all(len(tokens) == 1 for tokens in labels.values()), labels
    rows = report._best_table(points)
    assert rows and {r[0] for r in rows} == {"gelu_bwd"} and all(r[7] in ("peer torch", "peer dnnl") for r in rows), rows
