"""report figures: the tables of a scripts/bench results file (README, docs/performance.md).

The fixture data/bench-figures.json is a small merged run (two processes, placements 0 and 1) whose
figures are chosen so that every cell of the table is known: GELU f32 64K one thread at 75 % of a
100 GB/s limit and 2x oneDNN, 16M two threads at 80 % of 60 GB/s and 3x PyTorch, SELU f16 64K against
PyTorch's bf16 kernel (no fp16 peer) at 1.6x, a strided view at 90 % of contiguous and 4x PyTorch on it.
"""

import gzip
import json
import os

from conftest import DATA, run_cli, write_json

FIXTURE = os.path.join(DATA, "bench-figures.json")


def rows(text):
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| op ")]


def test_readme_table_names_the_machine_and_date_and_gives_each_cell():
    r = run_cli("figures", FIXTURE, "--section", "readme")
    assert r.code == 0, r
    caption = r.out.splitlines()[0]
    assert "2026-12-01" in caption and "Intel(R) Xeon(R) Test CPU" in caption
    assert "genuineintel-6-167" in caption and "authenticamd-25-17" in caption and "abc1234" in caption
    assert "--section readme" in caption
    assert "| op | dtype | n | threads | ours (median) | GB/s | % of in-run limit | faster peer | ours / peer |" \
        in r.out
    assert rows(r.out) == [
        "| selu_bwd | f16 | 64K | 1 | 5 us | 78.6 | 79 % | torch vs bf16 | 1.60x |",
        "| gelu_bwd | f32 | 64K | 1 | 10.49 us | 75.0 | 75 % | dnnl | 2.00x |",
        "| gelu_bwd | f32 | 16M | 2 | 4.194 ms | 48.0 | 80 % | torch | 3.00x |",
    ]


def test_performance_section_has_views_phase_one_limits_and_goals():
    r = run_cli("figures", FIXTURE, "--section", "performance")
    assert r.code == 0, r
    out = r.out
    assert "| gelu_bwd | f32 | strided | 64K | 1 | 11.65 us | 90 % | 4.00x |" in out
    assert "| gelu_bwd | f32 | 500 ns |" in out                        # phase one
    assert "| 16M | 2 | 60.0 | 50.0 | 60.0 |" in out                    # stream_nt, stream_plain, limit
    assert "| 16M | 1 | 45.0 | 40.0 | 45.0 |" in out
    assert "| G2 | 0 | 1 | 0 | 0 | gelu_bwd f32 64K t1 |" in out        # 2x oneDNN, goal 3x
    assert "| V1 strided | 1 | 1 | 0 | 0 | - |" in out


def test_write_replaces_only_the_marked_block_and_is_repeatable(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Title\n\nbefore\n<!-- figures:begin readme -->\nold table\n<!-- figures:end -->\nafter\n"
                   "<!-- figures:begin performance -->\nkept\n<!-- figures:end -->\n")
    r = run_cli("figures", FIXTURE, "--section", "readme", "--write", doc)
    assert r.code == 0, r
    text = doc.read_text()
    assert "old table" not in text and "| gelu_bwd | f32 | 16M | 2 | 4.194 ms |" in text
    assert text.startswith("# Title\n\nbefore\n<!-- figures:begin readme -->\n**Run of 2026-12-01**")
    assert text.endswith("<!-- figures:end -->\nafter\n<!-- figures:begin performance -->\nkept\n"
                         "<!-- figures:end -->\n")
    assert run_cli("figures", FIXTURE, "--section", "readme", "--write", doc).code == 0
    assert doc.read_text() == text


def test_write_without_markers_is_an_error_and_leaves_the_file(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("no markers here\n")
    r = run_cli("figures", FIXTURE, "--write", doc)
    assert r.code == 2
    assert "<!-- figures:begin performance -->" in r.err and "Traceback" not in r.err
    assert doc.read_text() == "no markers here\n"


def test_missing_file_is_a_clear_error(tmp_path):
    r = run_cli("figures", tmp_path / "nope.json")
    assert r.code == 2
    assert "nope.json: no such file" in r.err and "Traceback" not in r.err and r.out == ""


def test_bad_json_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"benchmarks": [')
    r = run_cli("figures", bad)
    assert r.code == 2 and "bad.json" in r.err and "not valid JSON" in r.err and "Traceback" not in r.err


def test_a_run_without_api_benchmarks_is_a_clear_error():
    r = run_cli("figures", os.path.join(DATA, "gbench-1.7-repetitions.json"))
    assert r.code == 2
    assert "no api/<op>.<dtype>.contig.phase2 benchmark" in r.err and "Traceback" not in r.err


def test_a_run_without_peers_has_no_peer_columns_and_says_so(tmp_path):
    with open(FIXTURE) as f:
        doc = json.load(f)
    doc["benchmarks"] = [b for b in doc["benchmarks"] if not b["name"].startswith("peer/")]
    doc["context"]["actgrad_peers"] = "none"
    r = run_cli("figures", write_json(tmp_path / "nopeers.json", doc))
    assert r.code == 0, r
    assert "no peers (the programs were built without PyTorch and oneDNN)" in r.out.splitlines()[0]
    assert "faster peer" not in r.out and "torch (same view)" not in r.out
    assert "| gelu_bwd | f32 | 64K | 1 | 10.49 us | 75.0 | 75 % |" in r.out
    assert "| gelu_bwd | f32 | strided | 64K | 1 | 11.65 us | 90 % |" in r.out
    assert "| G2 | 0 | 0 | 1 | 0 | - |" in r.out                         # no peer: not measured, not a miss


def test_a_gzip_results_file_reads_as_the_plain_one(tmp_path):
    # Results kept as data files (docs/data) are stored compressed.
    gz = str(tmp_path / "run.json.gz")
    with open(FIXTURE, "rb") as src, gzip.open(gz, "wb") as dst:
        dst.write(src.read())
    plain = run_cli("figures", FIXTURE, "--section", "performance")
    packed = run_cli("figures", gz, "--section", "performance")
    assert packed.code == 0, packed.err
    body = lambda out: out.split("\n", 1)[1]  # all but the caption, which names the file
    assert body(packed.out) == body(plain.out)


def test_a_truncated_gzip_file_is_a_clear_error(tmp_path):
    with open(FIXTURE, "rb") as f:
        packed = gzip.compress(f.read())
    bad = tmp_path / "cut.json.gz"
    bad.write_bytes(packed[: len(packed) // 2])
    r = run_cli("figures", str(bad))
    assert r.code == 2
    assert "not a readable gzip file" in r.err and "Traceback" not in r.err
