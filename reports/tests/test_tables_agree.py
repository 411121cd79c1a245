"""report tables-agree: two tables' choices per cell."""
import json

import pytest

from reports import tables, inputs
from reports.errors import InputError


def _table(entries, cores=2, version=4):
    return {"schema": "actgrad-tiling-table", "version": version, "machine_id": "m", "backend": "cpu",
            "provenance": {"topology": {"cpus": cores}}, "entries": entries}


def _entry(octave, variant, **kw):
    e = {"op": "selu_bwd", "dtype": "f32", "layout": "contig", "octave": octave, "variant": variant,
         "extra": {"tuning": {"n": int(2 ** octave * 1.414)}}}
    e.update(kw)
    return e


def _load(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return inputs.classify(str(p))[1], str(p)


def test_grains_compare_as_threads_at_the_tuned_size(tmp_path):
    a, pa = _load(tmp_path, "a.json", _table([_entry(13, "v.u2", grain=5504), _entry(20, "v.u4.nt", grain=5504),
                                              _entry(12, "v.u2", grain=0)]))
    # Another crossover (5760) is the same rule at the tuned sizes; a store change is not.
    b, pb = _load(tmp_path, "b.json", _table([_entry(13, "v.u2", grain=5760), _entry(20, "v.u4", grain=5760),
                                              _entry(12, "v.u2", grain=0)]))
    common, same, differ = tables.compare(a, pa, b, pb)
    assert len(common) == 3
    assert same["threads"] == 3
    assert same["all"] == 2
    assert same["stores"] == 2
    assert [d[0][-1] for d in differ] == [20]


def test_version_3_thread_counts_and_missing_cores(tmp_path):
    a, pa = _load(tmp_path, "a.json", _table([_entry(13, "v", threads=2)], version=3))
    b, pb = _load(tmp_path, "b.json", _table([_entry(13, "v", grain=100000)]))
    _, same, _ = tables.compare(a, pa, b, pb)
    assert same["threads"] == 0  # 2 threads against 11585 // 100000 -> 1
    doc = _table([_entry(13, "v", grain=0)])
    doc["provenance"] = {}
    c, pc = _load(tmp_path, "c.json", doc)
    with pytest.raises(InputError, match="no core count"):
        tables.compare(c, pc, b, pb)
