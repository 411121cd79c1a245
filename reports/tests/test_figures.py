"""report figures: the tables of a scripts/bench results file (README, docs/performance.md).

The fixture data/bench-figures.json is a small merged run (two processes, placements 0 and 1, peers
without versions) whose figures are chosen so that every cell of the table is known: GELU f32 64K one
thread at 75 % of a 100 GB/s limit and 2x oneDNN, 16M two threads at 80 % of 60 GB/s and 3x PyTorch,
SELU f16 64K with PyTorch's bf16 kernel only (no f16 peer: none stands in), a strided view at 90 % of
contiguous and 4x PyTorch on it. ``peers_doc`` builds a run with today's peers and their versions (f16
rows, GELU tanh, cells without peers, each thread count in its own pinned process).
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
    assert "--section readme" in caption and "peers torch,dnnl" in caption
    assert "| op | dtype | n | threads | ours | % of in-run limit | best peer | peer | speed-up |" in r.out
    assert rows(r.out) == [
        "| selu_bwd | f16 | 64K | 1 | 5 us | 79 % | - | - | - |",        # PyTorch's bf16 SELU does not count
        "| gelu_bwd | f32 | 64K | 1 | 10.49 us | 75 % | dnnl | 20.97 us | 2.00x |",
        "| gelu_bwd | f32 | 16M | 2 | 4.194 ms | 80 % | torch | 12.58 ms | 3.00x |",
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
    assert "best peer" not in r.out and "torch (same view)" not in r.out
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


# -- the README table of a run with today's peers --------------------------------------------------

K4, K64, M1, M16 = 4 << 10, 64 << 10, 1 << 20, 16 << 20
ELEM = {"f32": 4, "f16": 2, "bf16": 2, "i8": 1}
PEERS = "torch 2.15.0, dnnl 3.13.2 (sycl runtime)"
# (benchmark subject, n, threads, median time in ns); bytes/s = 3 elements per item over the time.
CASES = [
    # GELU erf f32 64K/1: ours 10 us, torch 30 us, dnnl 20 us -> dnnl 3.13.2, 2.00x
    ("api/gelu_bwd.f32.contig.phase2", K64, 1, 10e3),
    ("peer/torch.gelu_bwd.f32", K64, 1, 30e3),
    ("peer/dnnl.gelu_bwd.f32", K64, 1, 20e3),
    # GELU tanh f32 64K/1: ours 8 us, torch's tanh 16 us, dnnl's tanh 40 us -> torch 2.15.0, 2.00x
    ("api/gelu_bwd_tanh.f32.contig.phase2", K64, 1, 8e3),
    ("peer/torch.gelu_bwd_tanh.f32", K64, 1, 16e3),
    ("peer/dnnl.gelu_bwd_tanh.f32", K64, 1, 40e3),
    # SELU f16 64K/1: torch's f16 kernel 15 us -> 3.00x; a dnnl SELU row (another function) is left out
    ("api/selu_bwd.f16.contig.phase2", K64, 1, 5e3),
    ("peer/torch.selu_bwd.f16", K64, 1, 15e3),
    ("peer/dnnl.selu_bwd.f16", K64, 1, 1e3),
    ("peer/torch.selu_bwd.bf16", K64, 1, 1e3),
    # Hardswish f16 16M/2: torch's f16 2 ms, dnnl's f16 8 ms -> torch, 0.50x (the peer is faster)
    ("api/hardswish_bwd.f16.contig.phase2", M16, 2, 4e6),
    ("peer/torch.hardswish_bwd.f16", M16, 2, 2e6),
    ("peer/dnnl.hardswish_bwd.f16", M16, 2, 8e6),
    # LogitGrad bf16 4K/1: no bf16 peer (torch's f32 kernel does not stand in) -> "-"
    ("api/logit_grad.bf16.contig.phase2", K4, 1, 1e3),
    ("peer/torch.logit_grad.f32", K4, 1, 0.5e3),
    # Softshrink f32 1M/2 against torch only
    ("api/softshrink_bwd.f32.contig.phase2", M1, 2, 200e3),
    ("peer/torch.softshrink_bwd.f32", M1, 2, 500e3),
    # not README rows: an integer dtype and a size outside 4K, 64K, 1M, 16M
    ("api/selu_bwd.i8.contig.phase2", K64, 1, 2e3),
    ("api/gelu_bwd.f32.contig.phase2", 256 << 10, 1, 40e3),
]
# in-run limits: stream_plain GB/s per (n, threads)
ROOFS = {(K64, 1): 100e9, (M16, 2): 60e9, (K4, 1): 50e9, (M1, 2): 80e9, (256 << 10, 1): 100e9}


def peers_doc():
    """Each thread count in its own process (actgrad_process 0 for 1 thread, 1 for 2) pinned to as many
    CPUs (actgrad_cpus), at placements 0 and 1 (times 0.99x and 1.01x: the median is the time given)."""
    out = []

    def row(name, n, thr, t, nbytes):
        for k, f in enumerate((0.99, 1.01)):
            full = f"{name}/n:{n}/thr:{thr}/place:{k}"
            out.append({"name": full, "run_name": full, "run_type": "iteration", "repetition_index": 0,
                        "real_time": t * f, "cpu_time": t * f, "time_unit": "ns",
                        "items_per_second": n / (t * f * 1e-9), "bytes_per_second": nbytes / (t * f * 1e-9),
                        "placement": k, "actgrad_process": thr - 1, "actgrad_cpus": thr,
                        "actgrad_binary": "actgrad-bench"})

    for subject, n, thr, t in CASES:
        row(subject, n, thr, t, 3 * n * ELEM[subject.split(".")[-3 if subject.startswith("api/") else -1]])
    for (n, thr), bps in ROOFS.items():
        row("roof/stream_plain", n, thr, 4 * n / bps * 1e9 * 2, 8 * n)
    context = {"date": "2027-03-02T08:00:00+00:00", "num_cpus": 2, "actgrad_cpu_model": "Test CPU 9000",
               "actgrad_machine_id": "genuineintel-6-207", "actgrad_git_commit": "def5678",
               "actgrad_binary": "actgrad-bench", "actgrad_tiling_table": "genuineintel-6-207 (compiled:/x.json)",
               "actgrad_peers": PEERS, "actgrad_placements": "0,1", "actgrad_processes": "2"}
    return {"context": context, "benchmarks": out}


def test_readme_table_of_todays_peers(tmp_path):
    r = run_cli("figures", write_json(tmp_path / "run.json", peers_doc()), "--section", "readme")
    assert r.code == 0, r
    caption = r.out.splitlines()[0]
    for words in ("2027-03-02", "Test CPU 9000", "genuineintel-6-207", "2 cores", "def5678",
                  f"peers {PEERS}", "pinned to that many CPUs", "above 1: ours is faster"):
        assert words in caption, (words, caption)
    assert rows(r.out) == [
        "| selu_bwd | f16 | 64K | 1 | 5 us | 79 % | torch 2.15.0 | 15 us | 3.00x |",
        "| hardswish_bwd | f16 | 16M | 2 | 4 ms | 42 % | torch 2.15.0 | 2 ms | 0.50x |",
        "| gelu_bwd | f32 | 64K | 1 | 10 us | 79 % | dnnl 3.13.2 | 20 us | 2.00x |",
        "| gelu_bwd_tanh | f32 | 64K | 1 | 8 us | 98 % | torch 2.15.0 | 16 us | 2.00x |",
        "| softshrink_bwd | f32 | 1M | 2 | 200 us | 79 % | torch 2.15.0 | 500 us | 2.50x |",
        "| logit_grad | bf16 | 4K | 1 | 1 us | 49 % | - | - | - |",
    ]


def test_performance_section_compares_the_same_dtype(tmp_path):
    r = run_cli("figures", write_json(tmp_path / "run.json", peers_doc()), "--section", "performance")
    assert r.code == 0, r
    assert "| gelu_bwd_tanh | f32 | 64K | 1 | 8 us |" in r.out
    line = next(ln for ln in rows(r.out) if ln.startswith("| selu_bwd | f16 | 64K | 1 |"))
    assert line.endswith("| torch 2.15.0 | 3.00x |"), line
    line = next(ln for ln in rows(r.out) if ln.startswith("| logit_grad | bf16 | 4K | 1 |"))
    assert line.endswith("| - | - |"), line
    # GELU erf and GELU tanh, each 2x its own best peer: the 3x goal missed twice
    assert "| G2 | 0 | 2 | 0 | 0 | gelu_bwd f32 64K t1, gelu_bwd_tanh f32 64K t1 |" in r.out
