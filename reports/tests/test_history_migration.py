"""The history schema, version 2: results carry placement and process; record upgrades a
version-1 database (SQLite file here, PostgreSQL when ACTGRAD_TEST_POSTGRES_URL is set),
readers leave it as it was, and a merged run's value is the median over all its samples."""

import hashlib
import os
import sqlite3
import statistics
import uuid

import pytest

from conftest import write_json
from reports import gbench
from reports.history import SCHEMA_VERSION, HistoryDB

# The schema as version 1 of the reports package created it.
V1_DDL = [
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE runs (id {serial} PRIMARY KEY, run_key TEXT NOT NULL UNIQUE, "commit" TEXT NOT NULL,
         "date" TEXT NOT NULL, machine_id TEXT NOT NULL, context TEXT NOT NULL, source TEXT)""",
    """CREATE TABLE results (run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE, name TEXT NOT NULL,
         metric TEXT NOT NULL, value DOUBLE PRECISION NOT NULL, repetition INTEGER)""",
    "CREATE INDEX results_run ON results(run_id)",
    "CREATE INDEX results_name_metric ON results(name, metric)",
    'CREATE INDEX runs_machine_date ON runs(machine_id, "date")',
]
V1_ROWS = [
    "INSERT INTO meta (key, value) VALUES ('schema_version', '1')",
    """INSERT INTO runs (run_key, "commit", "date", machine_id, context, source)
         VALUES ('k-old', 'c-old', '2026-10-01T00:00:00Z', 'm1', '{}', 'old.json')""",
    """INSERT INTO results (run_id, name, metric, value, repetition)
         SELECT id, 'api/x/n:1/thr:1', 'real_time', 5.0, 0 FROM runs WHERE run_key = 'k-old'""",
]
NAME = "api/gelu_bwd.f32.contig.phase2/n:65536/thr:1"


def v1_sqlite(path):
    con = sqlite3.connect(path)
    for stmt in [s.format(serial="INTEGER") for s in V1_DDL] + V1_ROWS:
        con.execute(stmt)
    con.commit()
    con.close()
    return path


def merged_doc(commit="c-new"):
    """NAME at 4 placements in 2 processes, 2 repetitions each (process 1 is 10 % slower)."""
    rows = []
    for proc in (0, 1):
        for k in range(4):
            for rep in range(2):
                full = f"{NAME}/place:{k}"
                rows.append({"name": full, "run_name": full, "run_type": "iteration", "repetition_index": rep,
                             "real_time": (100.0 + k + rep) * (1.1 if proc else 1.0), "time_unit": "ns",
                             "placement": k, "actgrad_process": proc})
    return {"context": {"actgrad_git_commit": commit, "actgrad_machine_id": "m1", "date": "2026-11-25T00:00:00Z",
                        "actgrad_processes": "2"}, "benchmarks": rows}


def sqlite_columns(path):
    con = sqlite3.connect(path)
    try:
        return [r[1] for r in con.execute("PRAGMA table_info(results)")], \
            con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
    finally:
        con.close()


def digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_record_upgrades_a_version_1_sqlite_file(tmp_path, cli_run):
    db = v1_sqlite(str(tmp_path / "h.sqlite"))
    assert sqlite_columns(db) == (["run_id", "name", "metric", "value", "repetition"], "1")
    r = cli_run("record", write_json(tmp_path / "merged.json", merged_doc()), "--db", db)
    assert r.code == 0, r
    assert sqlite_columns(db) == (["run_id", "name", "metric", "value", "repetition", "placement", "process"],
                                  str(SCHEMA_VERSION))
    con = sqlite3.connect(db)
    old = con.execute("SELECT name, value, repetition, placement, process FROM results WHERE run_id = 1").fetchall()
    new = con.execute("SELECT name, repetition, placement, process FROM results WHERE run_id = 2 "
                      "AND metric = 'real_time' ORDER BY repetition").fetchall()
    con.close()
    assert old == [("api/x/n:1/thr:1", 5.0, 0, None, None)]          # kept as it was
    assert len(new) == 16 and {n for n, *_ in new} == {NAME}         # one benchmark, every sample
    assert [x[1:] for x in new[:3]] == [(0, 0, 0), (1, 0, 0), (2, 1, 0)]
    assert {(p, q) for _, _, p, q in new} == {(k, proc) for k in range(4) for proc in (0, 1)}
    # a second record (already version 2) changes nothing in the schema
    assert cli_run("record", write_json(tmp_path / "m2.json", merged_doc("c-2")), "--db", db).code == 0
    assert sqlite_columns(db)[1] == str(SCHEMA_VERSION)


def test_series_of_a_merged_run_is_the_median_over_all_samples(tmp_path):
    doc = merged_doc()
    run = gbench.parse(doc, "merged.json")
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        db.record(run, doc["benchmarks"], "c-new", "m1", "2026-11-25T00:00:00Z")
        (point,) = db.series()[("m1", NAME)]
    assert point.samples == 16
    assert point.value == pytest.approx(statistics.median(r["real_time"] for r in doc["benchmarks"]))


def test_aggregates_only_merged_run_records_each_placement(tmp_path):
    rows = []
    for k, med in enumerate((100.0, 104.0, 180.0, 102.0)):
        full = f"{NAME}/place:{k}"
        rows.append({"name": f"{full}_median", "run_name": full, "run_type": "aggregate", "aggregate_name": "median",
                     "real_time": med, "time_unit": "ns", "placement": k})
    doc = {"context": {}, "benchmarks": rows}
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        db.record(gbench.parse(doc, "a.json"), rows, "c", "m1", "2026-11-25T00:00:00Z")
        got = db.query("SELECT metric, value, placement FROM results ORDER BY placement")
        (point,) = db.series()[("m1", NAME)]
    assert got == [("real_time_median", v, k) for k, v in enumerate((100.0, 104.0, 180.0, 102.0))]
    assert point.value == pytest.approx(103.0)         # the median of the per-placement medians


def test_readers_never_migrate(tmp_path, cli_run):
    db = v1_sqlite(str(tmp_path / "h.sqlite"))
    before = digest(db)
    r = cli_run("dashboard", "--db", db, "--out", tmp_path / "dash")
    assert r.code == 0, r
    assert digest(db) == before and sqlite_columns(db)[1] == "1"


def test_a_failed_write_leaves_version_1(tmp_path):
    db = v1_sqlite(str(tmp_path / "h.sqlite"))
    with pytest.raises(RuntimeError):
        with HistoryDB(db):
            raise RuntimeError("a failure after the migration, inside the transaction")
    assert sqlite_columns(db) == (["run_id", "name", "metric", "value", "repetition"], "1")


def test_record_upgrades_a_version_1_postgresql_schema(pg_server_url):
    import psycopg
    url = pg_server_url
    schema = f"actgrad_mig_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE SCHEMA {schema}")
    scoped = url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"
    try:
        with psycopg.connect(scoped, autocommit=True) as con:
            for stmt in [s.format(serial="BIGSERIAL") for s in V1_DDL] + V1_ROWS:
                con.execute(stmt)
        doc = merged_doc()
        with HistoryDB(scoped) as db:
            db.record(gbench.parse(doc, "merged.json"), doc["benchmarks"], "c-new", "m1", "2026-11-25T00:00:00Z")
        with HistoryDB(scoped, readonly=True) as db:
            assert {"placement", "process"} <= db._columns("results")
            assert db.query("SELECT value FROM meta WHERE key = ?", ("schema_version",)) == [(str(SCHEMA_VERSION),)]
            assert db.query("SELECT COUNT(*) FROM results WHERE placement IS NOT NULL") == [(16,)]
            assert db.query("SELECT name, placement, process FROM results WHERE value = 5.0") == \
                [("api/x/n:1/thr:1", None, None)]
            assert db.series()[("m1", NAME)][0].samples == 16
    finally:
        with psycopg.connect(url, autocommit=True) as con:
            con.execute(f"DROP SCHEMA {schema} CASCADE")
