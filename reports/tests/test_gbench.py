"""Parsing Google Benchmark JSON of several versions, and our names."""

import os

import pytest

from conftest import DATA, write_json
from reports import gbench, names
from reports.errors import InputError


def test_current_format_with_repetitions():
    run = gbench.load(os.path.join(DATA, "gbench-1.7-repetitions.json"))
    assert run.machine_id == "genuineintel-6-143" and run.commit == "abc123"
    assert len(run.benches) == 2
    b = run.benches["variant/gelu_bwd.f32.none.erf_as.u4.avx3/n:1024/thr:1/1024"]
    assert len(b.samples["real_time"]) == 3
    assert set(b.aggregates) == {"mean", "median", "stddev", "cv"}
    assert b.center() == pytest.approx(sorted(b.samples["real_time"])[1])
    p = b.parsed
    assert (p.kind, p.op, p.dtype, p.upcast, p.approx, p.unroll, p.target, p.n, p.thr) == \
        ("variant", "gelu_bwd", "f32", "none", "erf_as", "u4", "avx3", 1024, 1)
    assert p.extra == ("1024",)
    # microseconds converted to nanoseconds
    peer = run.benches["peer/torch.gelu_bwd.f32/n:4096/thr:1/4096"]
    assert 100 < peer.center() < 300
    assert peer.parsed.peer == "torch"


def test_aggregates_only():
    run = gbench.load(os.path.join(DATA, "gbench-1.7-aggregates-only.json"))
    for b in run.benches.values():
        assert not b.samples
        assert b.center() == b.aggregates["median"]["real_time"]
    peer = run.benches["peer/torch.gelu_bwd.f32/n:4096/thr:1/4096"]
    # the time aggregates are scaled from us, the cv (a fraction) is not
    assert peer.aggregates["median"]["real_time"] == pytest.approx(144.9414179904013)
    assert peer.aggregates["cv"]["real_time"] == pytest.approx(0.02177784630957604)


def test_old_format_without_run_type():
    run = gbench.load(os.path.join(DATA, "gbench-1.1-old-format.json"))
    v = run.benches["variant/selu_bwd.f32.none.exact.u2.avx2/n:4096/thr:1"]
    assert v.samples["real_time"] == pytest.approx([1500.0, 1520.0, 1480.0])
    assert v.aggregates["mean"]["real_time"] == pytest.approx(1500.0)
    assert v.aggregates["stddev"]["real_time"] == pytest.approx(20.0)
    assert v.center() == pytest.approx(1500.0)
    assert run.benches["BM_memcpy/8"].parsed.kind == "other"
    assert run.benches["BM_slow"].center() == pytest.approx(2e9)
    assert "BM_broken" not in run.benches
    assert any("buffer too small" in n for n in run.notes)


@pytest.mark.parametrize("unit,scale", [("ns", 1), ("us", 1e3), ("ms", 1e6), ("s", 1e9)])
def test_time_units(tmp_path, unit, scale):
    doc = {"context": {}, "benchmarks": [
        {"name": "x", "run_name": "x", "run_type": "iteration", "real_time": 2.5, "cpu_time": 2.0, "time_unit": unit}]}
    run = gbench.parse(doc, "mem")
    assert run.benches["x"].center() == pytest.approx(2.5 * scale)
    assert run.benches["x"].center("cpu_time") == pytest.approx(2.0 * scale)


def test_bad_unit_and_missing_field_name_the_problem():
    with pytest.raises(InputError, match="time_unit 'fortnights'"):
        gbench.parse({"benchmarks": [{"name": "x", "real_time": 1, "time_unit": "fortnights"}]}, "f.json")
    with pytest.raises(InputError, match="'x' has no 'real_time'"):
        gbench.parse({"benchmarks": [{"name": "x", "time_unit": "ns"}]}, "f.json")
    with pytest.raises(InputError, match="empty run"):
        gbench.parse({"context": {}, "benchmarks": []}, "f.json")
    with pytest.raises(InputError, match="not a number"):
        gbench.parse({"benchmarks": [{"name": "x", "real_time": "fast"}]}, "f.json")


def test_read_json_errors(tmp_path):
    p = tmp_path / "t.json"
    p.write_text('{"benchmarks": [')
    with pytest.raises(InputError, match="not valid JSON") as e:
        gbench.read_json(p)
    assert str(p) in str(e.value)
    p.write_text("")
    with pytest.raises(InputError, match="empty file"):
        gbench.read_json(p)
    with pytest.raises(InputError, match="no such file"):
        gbench.read_json(tmp_path / "missing.json")


def test_names():
    n = names.parse("variant/hardswish_bwd.f32.none.exact.u2.avx2.nt/n:4096/thr:2/repeats:5")
    assert (n.kind, n.op, n.dtype, n.nt, n.n, n.thr, n.extra) == \
        ("variant", "hardswish_bwd", "f32", True, 4096, 2, ("repeats:5",))
    assert n.label == "none.exact.u2.avx2.nt"
    a = names.parse("api/gelu_bwd.bf16.bcast.phase2/n:1048576/thr:1")
    assert (a.layout, a.phase, a.label) == ("bcast", "phase2", "api bcast.phase2")
    r = names.parse("roof/stream_nt/n:65536/thr:1")
    assert (r.kind, r.subject) == ("roof", "stream_nt")
    t = names.parse("atlas/gelu_bwd.f16.atlas.native.exact.db2/n:65536/tile:8192")
    assert (t.kind, t.op, t.dtype, t.n, t.tile, t.thr) == ("atlas", "gelu_bwd", "f16", 65536, 8192, None)
    f = names.parse("BM_memcpy/8")
    assert f.kind == "other" and not f.ours
    assert names.human_size(1024) == "1K" and names.human_size(64 << 20) == "64M"


def test_synthetic_run_roundtrip(tmp_path, small_run):
    path = write_json(tmp_path / "r.json", small_run(unit="us", reps=5))
    run = gbench.load(path)
    kinds = {b.parsed.kind for b in run.benches.values()}
    assert kinds == {"variant", "peer", "api", "roof", "atlas"}
    assert all(len(b.samples["real_time"]) == 5 for b in run.benches.values())
