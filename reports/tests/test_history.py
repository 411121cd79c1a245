"""The history database: schema, idempotent recording, series."""

import json
import os
import sqlite3

import pytest

from conftest import DATA, write_json
from reports import gbench, synth
from reports.history import DDL, HistoryDB, parse_date, run_key


def count(db, table):
    con = sqlite3.connect(db)
    try:
        return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


def test_record_once_and_only_once(tmp_path, cli_run, small_run):
    db = tmp_path / "h.sqlite"
    f = write_json(tmp_path / "r.json", small_run(commit="abc", machine="m1"))
    r = cli_run("record", f, "--db", db)
    assert r.code == 0 and "recorded" in r.out, r
    n_results = count(db, "results")
    assert count(db, "runs") == 1 and n_results > 0
    r = cli_run("record", f, "--db", db)
    assert r.code == 0 and "already recorded" in r.out, r
    assert count(db, "runs") == 1 and count(db, "results") == n_results
    # the same content for another commit or machine is another run
    assert cli_run("record", f, "--db", db, "--commit", "def").code == 0
    assert cli_run("record", f, "--db", db, "--machine", "m2").code == 0
    assert count(db, "runs") == 3


def test_stored_values(tmp_path, small_run):
    doc = small_run(commit="abc", machine="m1", reps=4)
    run = gbench.parse(doc, "r.json")
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        rid, ins = db.record(run, doc["benchmarks"], "abc", "m1", "2026-11-01T00:00:00Z")
        assert ins
        name = next(iter(run.benches))
        rows = db.query("SELECT metric, value, repetition FROM results WHERE run_id = ? AND name = ? "
                        "ORDER BY metric, repetition", (rid, name))
        reps = [r for r in rows if r[0] == "real_time"]
        assert [r[2] for r in reps] == [0, 1, 2, 3]
        assert [r[1] for r in reps] == pytest.approx(run.benches[name].samples["real_time"])
        aggs = {r[0]: r[1] for r in rows if r[2] is None}
        assert aggs["real_time_median"] == pytest.approx(run.benches[name].aggregates["median"]["real_time"])
        run_row = db.query('SELECT run_key, "commit", "date", machine_id, context FROM runs WHERE id = ?', (rid,))[0]
        assert run_row[0] == run_key(doc["benchmarks"], "m1", "abc")
        assert run_row[1:4] == ("abc", "2026-11-01T00:00:00Z", "m1")
        assert json.loads(run_row[4])["actgrad_machine_id"] == "m1"


def test_context_and_overrides(tmp_path, cli_run):
    db = tmp_path / "h.sqlite"
    f = os.path.join(DATA, "gbench-1.7-repetitions.json")
    assert cli_run("record", f, "--db", db).code == 0
    con = sqlite3.connect(db)
    row = con.execute('SELECT "commit", machine_id, "date" FROM runs').fetchone()
    con.close()
    assert row == ("abc123", "genuineintel-6-143", "2026-11-22T00:34:50Z")
    old = os.path.join(DATA, "gbench-1.1-old-format.json")
    r = cli_run("record", old, "--db", db, "--commit", "x1", "--date", "2017-11-07T21:16:44+01:00")
    assert r.code == 0, r
    con = sqlite3.connect(db)
    rows = con.execute('SELECT "commit", machine_id, "date" FROM runs ORDER BY id').fetchall()
    con.close()
    assert rows[1] == ("x1", "genuineintel-6-85", "2017-11-07T20:16:44Z")


def test_missing_commit_or_machine_is_bad_input(tmp_path, cli_run, small_run):
    db = tmp_path / "h.sqlite"
    doc = small_run()
    del doc["context"]["actgrad_git_commit"]
    f = write_json(tmp_path / "r.json", doc)
    r = cli_run("record", f, "--db", db)
    assert r.code == 2 and "actgrad_git_commit" in r.err and "r.json" in r.err
    assert cli_run("record", f, "--db", db, "--commit", "c1").code == 0


def test_bad_file_among_several_records_nothing(tmp_path, cli_run, small_run):
    db = tmp_path / "h.sqlite"
    good = write_json(tmp_path / "good.json", small_run())
    bad = tmp_path / "bad.json"
    bad.write_text('{"benchmarks": [{"name": "x"')
    r = cli_run("record", good, bad, "--db", db)
    assert r.code == 2 and "bad.json" in r.err
    assert not db.exists() or count(db, "runs") == 0


def test_not_a_database(tmp_path, cli_run, small_run):
    db = tmp_path / "h.sqlite"
    db.write_text("hello")
    r = cli_run("record", write_json(tmp_path / "r.json", small_run()), "--db", db)
    assert r.code == 2 and "not an SQLite database" in r.err


def test_series_per_commit(tmp_path):
    docs = synth.history_docs(commits=8, step_at=4, machines=("m1", "m2"), sizes=(4096,))
    with HistoryDB(str(tmp_path / "h.sqlite")) as db:
        for d in docs:
            run = gbench.parse(d, "s")
            db.record(run, d["benchmarks"], d["context"]["actgrad_git_commit"], d["context"]["actgrad_machine_id"],
                      parse_date(d["context"]["date"]))
        s = db.series()
    key = ("m1", "variant/gelu_bwd.f32.none.erf_as.u4.avx3/n:4096/thr:1")
    pts = s[key]
    assert [p.commit for p in pts] == [f"c{i:03d}" for i in range(8)]
    assert all(p.samples == 3 for p in pts)
    assert pts[6].value / pts[1].value == pytest.approx(1.10, rel=0.05)
    assert {m for m, _ in s} == {"m1", "m2"}


def test_dates():
    assert parse_date("2026-11-22T01:00:00+01:00") == "2026-11-22T00:00:00Z"
    assert parse_date("2026-11-22T01:00:00Z") == "2026-11-22T01:00:00Z"
    assert parse_date("2017/11/07-21:16:44") == "2017-11-07T21:16:44Z"


def test_schema_is_the_same_sql_on_both():
    """One DDL; only the generated key's type differs."""
    lite = [s.format(serial="INTEGER") for s in DDL]
    pg = [s.format(serial="BIGSERIAL") for s in DDL]
    assert [a.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY") for a in lite] == pg


def test_postgresql_roundtrip(small_run, pg_url):
    url = pg_url
    doc = small_run(commit="pg-test-commit", machine="pg-test-machine")
    run = gbench.parse(doc, "r.json")
    with HistoryDB(url) as db:
        db.execute("DELETE FROM runs WHERE machine_id = ?", ("pg-test-machine",)).close()
        db.conn.commit()
        rid, ins = db.record(run, doc["benchmarks"], "pg-test-commit", "pg-test-machine", "2026-11-01T00:00:00Z")
        rid2, ins2 = db.record(run, doc["benchmarks"], "pg-test-commit", "pg-test-machine", "2026-11-01T00:00:00Z")
        assert ins and not ins2 and rid == rid2
        n = db.query("SELECT COUNT(*) FROM results WHERE run_id = ?", (rid,))[0][0]
        assert n > 0
        assert any(m == "pg-test-machine" for m, _ in db.series())
        db.execute("DELETE FROM runs WHERE id = ?", (rid,)).close()
        db.conn.commit()


def test_postgresql_reader_cannot_write(pg_url):
    """dashboard's connection is a read-only session: a write is refused by the server (exit 2)."""
    from reports.errors import InputError
    url = pg_url
    with HistoryDB(url):          # make sure the tables exist
        pass
    with HistoryDB(url, readonly=True) as db:
        with pytest.raises(InputError, match="read-only"):
            db.execute("DELETE FROM runs WHERE machine_id = ?", ("no-such-machine",))
