"""Bad --db and output paths: a directory, a read-only
mount, a missing or foreign database for a reader, an unwritable output. Each
is exit 2 with one message naming the path; a reader never creates or changes
the database; a writer that fails leaves it as it was."""

import hashlib
import os
import sqlite3
import subprocess

import pytest

from conftest import assert_bad_input, run_module, write_json
from reports import gbench, synth
from reports.history import HistoryDB, parse_date


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def count_runs(path):
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    finally:
        con.close()


def make_history(path, commits=6):
    with HistoryDB(str(path)) as db:
        for d in synth.history_docs(commits=commits, step_at=3, machines=("m1",), sizes=(4096,)):
            db.record(gbench.parse(d, "s"), d["benchmarks"], d["context"]["actgrad_git_commit"],
                      d["context"]["actgrad_machine_id"], parse_date(d["context"]["date"]))
    return path


class ReadOnlyMount:
    """A tmpfs that can be remounted read-only: as root, chmod stops no write, a read-only mount does."""

    def __init__(self, path):
        self.path = path
        path.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(path)],
                           capture_output=True, text=True)
        if p.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({p.stderr.strip() or p.returncode}); "
                        "test_record_into_a_readonly_database_in_process covers the path")

    def freeze(self):
        subprocess.run(["mount", "-o", "remount,ro", str(self.path)], check=True, capture_output=True)

    def umount(self):
        subprocess.run(["umount", str(self.path)], capture_output=True)


@pytest.fixture
def ro_mount(tmp_path):
    m = ReadOnlyMount(tmp_path / "ro")
    yield m
    m.umount()


# -- --db is a directory ------------------------------------------------------

def test_db_that_is_a_directory(tmp_path, small_run):
    d = tmp_path / "adir"
    d.mkdir()
    good = write_json(tmp_path / "r.json", small_run())
    assert_bad_input(run_module("record", good, "--db", d), "adir", "directory")
    assert_bad_input(run_module("dashboard", "--db", d, "--out", tmp_path / "site"), "adir", "directory")
    assert os.listdir(d) == [] and not (tmp_path / "site").exists()


# -- readers never create or change the database ------------------------------

def test_dashboard_on_a_missing_database_creates_nothing(tmp_path):
    for db in (tmp_path / "missing.sqlite", tmp_path / "newdir" / "missing.sqlite"):
        r = run_module("dashboard", "--db", db, "--out", tmp_path / "site")
        assert_bad_input(r, db.name, "no such file")
        assert not db.exists() and not db.parent.exists() or db.parent == tmp_path
    assert sorted(os.listdir(tmp_path)) == []


def test_dashboard_does_not_touch_a_foreign_or_empty_database(tmp_path):
    foreign = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE notes (body TEXT)")
    con.commit()
    con.close()
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    for db, words in ((foreign, ("foreign.sqlite", "not an actgrad history")), (empty, ("empty.sqlite", "empty"))):
        before = digest(db)
        assert_bad_input(run_module("dashboard", "--db", db, "--out", tmp_path / "site"), *words)
        assert digest(db) == before
    assert sorted(os.listdir(tmp_path)) == ["empty.sqlite", "foreign.sqlite"]


def test_dashboard_reads_without_writing(tmp_path):
    db = make_history(tmp_path / "h.sqlite")
    con = sqlite3.connect(db)       # as an older tool left it: an index fewer, which a writer would add
    con.execute("DROP INDEX runs_machine_date")
    con.commit()
    con.close()
    before = digest(db)
    os.chmod(db, 0o444)           # not a protection for root, but a reader must not need more
    r = run_module("dashboard", "--db", db, "--out", tmp_path / "site")
    assert r.code == 0, r
    assert digest(db) == before and sorted(os.listdir(tmp_path)) == ["h.sqlite", "site"]


def test_corrupt_database_is_a_message(tmp_path, small_run):
    db = make_history(tmp_path / "h.sqlite", commits=12)
    data = bytearray(db.read_bytes())
    assert len(data) > 8192
    data[4096:] = b"\xa5" * (len(data) - 4096)      # keep the header page, garble the rest
    db.write_bytes(bytes(data))
    before = digest(db)
    assert_bad_input(run_module("dashboard", "--db", db, "--out", tmp_path / "site"), "h.sqlite")
    assert_bad_input(run_module("record", write_json(tmp_path / "r.json", small_run()), "--db", db), "h.sqlite")
    assert digest(db) == before and not (tmp_path / "site").exists()


# -- read-only locations -------------------------------------------------------

def test_record_on_a_readonly_mount(ro_mount, tmp_path, small_run):
    db = make_history(ro_mount.path / "h.sqlite")
    ro_mount.freeze()
    before = digest(db)
    good = write_json(tmp_path / "r.json", small_run(commit="new", machine="m1"))
    assert_bad_input(run_module("record", good, "--db", db), "h.sqlite", "read-only")
    assert digest(db) == before
    assert_bad_input(run_module("record", good, "--db", ro_mount.path / "new.sqlite"), "new.sqlite")
    assert sorted(os.listdir(ro_mount.path)) == ["h.sqlite"]
    # a reader works on a read-only mount
    r = run_module("dashboard", "--db", db, "--out", tmp_path / "site")
    assert r.code == 0, r


def test_outputs_on_a_readonly_mount(ro_mount, tmp_path, small_run):
    db = make_history(tmp_path / "h.sqlite")
    ro_mount.freeze()
    good = write_json(tmp_path / "r.json", small_run(atlas=False))
    out = ro_mount.path / "out"
    assert_bad_input(run_module("dashboard", "--db", db, "--out", out), "out", "read-only")
    assert_bad_input(run_module("plot", good, "--out", out), "out", "read-only")
    assert_bad_input(run_module("compare", good, good, "--json", out), "out", "read-only")
    assert os.listdir(ro_mount.path) == []


def test_record_into_a_readonly_database_in_process(tmp_path, cli_run, small_run, monkeypatch):
    """Always runs (no mount needed): every connection refuses writes, as SQLite does on a read-only file."""
    db = make_history(tmp_path / "h.sqlite")
    before = digest(db)
    real_connect = sqlite3.connect

    def readonly_connect(*args, **kw):
        con = real_connect(*args, **kw)
        con.execute("PRAGMA query_only = ON")  # writes fail: "attempt to write a readonly database"
        return con

    monkeypatch.setattr(sqlite3, "connect", readonly_connect)
    r = cli_run("record", write_json(tmp_path / "r.json", small_run(commit="new", machine="m1")), "--db", db)
    assert_bad_input(r, "h.sqlite", "read-only")
    monkeypatch.undo()
    assert digest(db) == before and count_runs(db) == 6


# -- a writer that fails leaves the database as it was ------------------------

class FullAfterOneRun:
    """A connection whose second batch of result rows fails as on a full disk (SQLite's own error)."""

    def __init__(self, con):
        self.con, self.batches = con, 0

    def __getattr__(self, name):
        return getattr(self.con, name)

    def cursor(self):
        conn, cur = self, self.con.cursor()

        class Cursor:
            def __getattr__(self, name):
                return getattr(cur, name)

            def executemany(self, *args):
                conn.batches += 1
                if conn.batches == 2:
                    raise sqlite3.OperationalError("database or disk is full")
                return cur.executemany(*args)
        return Cursor()


def failing_on_second_record(monkeypatch):
    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: FullAfterOneRun(real_connect(*a, **kw)))


def test_failed_record_keeps_the_database_as_it_was(tmp_path, cli_run, small_run, monkeypatch):
    db = make_history(tmp_path / "h.sqlite")
    before = digest(db)
    a = write_json(tmp_path / "a.json", small_run(commit="a", machine="m1"))
    b = write_json(tmp_path / "b.json", small_run(commit="b", machine="m1"))
    failing_on_second_record(monkeypatch)
    assert_bad_input(cli_run("record", a, b, "--db", db), "h.sqlite", "disk is full")
    assert digest(db) == before and count_runs(db) == 6


def test_failed_record_into_a_new_database_leaves_no_file(tmp_path, cli_run, small_run, monkeypatch):
    a = write_json(tmp_path / "a.json", small_run(commit="a", machine="m1"))
    b = write_json(tmp_path / "b.json", small_run(commit="b", machine="m1"))
    failing_on_second_record(monkeypatch)
    db = tmp_path / "sub" / "h.sqlite"
    assert_bad_input(cli_run("record", a, b, "--db", db), "h.sqlite", "disk is full")
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]


# -- unwritable outputs ----------------------------------------------------------

def test_unwritable_output_paths(tmp_path, small_run):
    good = write_json(tmp_path / "r.json", small_run(atlas=False))
    (tmp_path / "adir").mkdir()
    db = make_history(tmp_path / "h.sqlite")
    assert_bad_input(run_module("compare", good, good, "--json", tmp_path / "adir"), "adir", "directory")
    assert_bad_input(run_module("compare", good, good, "--json", tmp_path / "r.json" / "v.json"), "r.json")
    assert_bad_input(run_module("plot", good, "--out", tmp_path / "r.json" / "out"), "r.json")
    assert_bad_input(run_module("dashboard", "--db", db, "--out", tmp_path / "r.json" / "out"), "r.json")
    assert os.listdir(tmp_path / "adir") == []
    assert sorted(os.listdir(tmp_path)) == ["adir", "h.sqlite", "r.json"]


# -- PostgreSQL: a bad URL is a message (no server needed) ------------------------

@pytest.mark.parametrize("url", ["postgresql://u:s3cret@127.0.0.1:1/db", "postgresql://u:s3cret@[::1/db",
                                 "postgresql://u:s3cret@localhost:99999/db",
                                 "postgres://u:s3cret@127.0.0.1:1/db?sslmode=bogus"])
def test_bad_postgresql_url(tmp_path, small_run, url):
    good = write_json(tmp_path / "r.json", small_run())
    for args in (["record", good, "--db", url], ["dashboard", "--db", url, "--out", tmp_path / "site"]):
        r = run_module(*args)
        assert_bad_input(r, "PostgreSQL", url.split("@")[0].replace("s3cret", "***"))
        assert "s3cret" not in r.err
    assert not (tmp_path / "site").exists()
