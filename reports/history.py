"""The history database: every recorded run, for the dashboard.

SQLite by default (one file, embedded, no server); the same schema and the
same SQL on PostgreSQL for a team (``--db postgresql://user@host/db``, needs
psycopg, installed by scripts/setup-python). The only dialect difference is
the type of the generated key (``INTEGER PRIMARY KEY`` vs ``BIGSERIAL``) and
the parameter marker (``?`` vs ``%s``). Opening it (read-only for readers,
checks of the path, which errors are the user's) is in dbconn.py.

Tables
  runs(id, run_key UNIQUE, "commit", "date", machine_id, context, source)
  results(run_id -> runs.id, name, metric, value, repetition, placement, process)

``run_key`` is the SHA-256 of the file's benchmark rows (canonical JSON), the
machine id and the commit, so recording the same run twice stores it once.
``results.metric`` is ``real_time``/``cpu_time`` (ns), ``bytes_per_second``,
``items_per_second`` or ``pct_of_bandwidth`` for each repetition
(``repetition`` = 0, 1, ...), and ``<metric>_<aggregate>`` (e.g.
``real_time_median``) for Google Benchmark's aggregates (``repetition`` NULL).
``name`` is the benchmark without ``/place:k``; ``placement`` (k, NULL for
names without one) and ``process`` (``actgrad_process``, 0 for a one-process
file) say where each sample or aggregate was measured, so a merged run's
value is the median over all its samples (schema version 2; ``record``
upgrades a version-1 database by adding the two columns, NULL in old rows).
"""

import datetime as dt
import hashlib
import json
import os
import contextlib
import statistics
from dataclasses import dataclass

from .dbconn import display_name, explain, is_environment_error, is_postgres, open_postgres, open_sqlite, \
    sqlite_path, undo
from .errors import InputError

SCHEMA_VERSION = 2
# Columns added after version 1: (table, column, type). A writer adds the missing ones.
MIGRATIONS = [("results", "placement", "INTEGER"), ("results", "process", "INTEGER")]
DEFAULT_DB = os.path.join("reports", "history.sqlite")
PG_WRITER_LOCK = 0x61637467726164     # "actgrad": the advisory lock that serialises writers

DDL = [
    """CREATE TABLE IF NOT EXISTS meta (
         key TEXT PRIMARY KEY,
         value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS runs (
         id {serial} PRIMARY KEY,
         run_key TEXT NOT NULL UNIQUE,
         "commit" TEXT NOT NULL,
         "date" TEXT NOT NULL,
         machine_id TEXT NOT NULL,
         context TEXT NOT NULL,
         source TEXT)""",
    """CREATE TABLE IF NOT EXISTS results (
         run_id BIGINT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
         name TEXT NOT NULL,
         metric TEXT NOT NULL,
         value DOUBLE PRECISION NOT NULL,
         repetition INTEGER,
         placement INTEGER,
         process INTEGER)""",
    "CREATE INDEX IF NOT EXISTS results_run ON results(run_id)",
    "CREATE INDEX IF NOT EXISTS results_name_metric ON results(name, metric)",
    'CREATE INDEX IF NOT EXISTS runs_machine_date ON runs(machine_id, "date")',
]


def run_key(doc_benchmarks, machine_id, commit):
    canon = json.dumps(doc_benchmarks, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    h = hashlib.sha256()
    for part in (canon, "\0", machine_id, "\0", commit):
        h.update(part.encode("utf-8"))
    return h.hexdigest()


def parse_date(text, source="--date"):
    """ISO 8601 (or Google Benchmark's older context formats) -> UTC ISO string."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        try:
            return dt.datetime.fromtimestamp(float(text), dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, ValueError, OSError):    # beyond year 9999 or time_t, NaN
            raise InputError(source, f"the date {text!r} (seconds since 1970) is out of range")
    t = str(text).strip()
    d = None
    try:
        d = dt.datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        for fmt in ("%Y/%m/%d-%H:%M:%S", "%m/%d/%y %H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d"):
            try:
                d = dt.datetime.strptime(t, fmt)
                break
            except ValueError:
                pass
    if d is None:
        raise InputError(source, f"cannot read the date {text!r} (expected ISO 8601, e.g. 2026-11-22T01:00:00Z)")
    if d.tzinfo is None:
        d = d.replace(tzinfo=dt.timezone.utc)
    try:
        return d.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except OverflowError:      # 0001-01-01T00:00:00+01:00 is before year 1 in UTC
        raise InputError(source, f"the date {text!r} is out of range")


class HistoryDB:
    """The history database, for reading (readonly=True: nothing is ever created or changed) or
    for writing: one transaction from opening to the end of the ``with`` block, committed only if
    the block succeeds, so a failed record leaves the database as it was."""

    def __init__(self, url, readonly=False):
        self.url = str(url)
        self.readonly = readonly
        self._created = []          # files and directories this writer made (undone on failure)
        if is_postgres(self.url):
            self.name = display_name(self.url)
            self.conn = open_postgres(self.url, readonly)
            self.dialect, self.serial = "postgresql", "BIGSERIAL"
        else:
            self.path = self.name = sqlite_path(self.url)
            self.conn, self._created = open_sqlite(self.path, readonly)
            self.dialect, self.serial = "sqlite", "INTEGER"
        try:
            if readonly:
                self._check_schema()
            else:
                self._create_schema()
        except BaseException:
            self._abort()
            raise

    # -- plumbing -----------------------------------------------------------
    def _sql(self, sql):
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    @contextlib.contextmanager
    def _errors(self, doing):
        """Turn an error of the database itself (read-only, locked, full, corrupt, gone) into InputError."""
        try:
            yield
        except Exception as e:
            if not is_environment_error(e):
                raise
            raise InputError(self.name, f"{doing}: {explain(e)}") from e

    def execute(self, sql, params=()):
        with self._errors("cannot read" if self.readonly else "cannot write"):
            cur = self.conn.cursor()
            cur.execute(self._sql(sql), params)
            return cur

    def query(self, sql, params=()):
        with self._errors("cannot read"):
            cur = self.execute(sql, params)
            rows = cur.fetchall()
            cur.close()
            return rows

    def _tables(self):
        if self.dialect == "sqlite":
            rows = self.query("SELECT name FROM sqlite_master WHERE type = 'table'")
        else:
            rows = self.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()")
        return {r[0] for r in rows}

    def _check_version(self):
        row = self.query("SELECT value FROM meta WHERE key = ?", ("schema_version",))
        if row and not str(row[0][0]).isdigit():
            raise InputError(self.name, f"not an actgrad history database (schema_version {row[0][0]!r})")
        if row and int(row[0][0]) > SCHEMA_VERSION:
            raise InputError(self.name, f"history schema version {row[0][0]} is newer than this tool's "
                                        f"({SCHEMA_VERSION}); update the reports package")
        return bool(row)

    def _check_schema(self):
        """A reader's check: our tables are there (it creates nothing)."""
        tables = self._tables()
        if not tables:
            raise InputError(self.name, "the history is empty; record runs first (report record RESULTS.json)")
        missing = sorted({"runs", "results"} - tables)
        if missing:
            raise InputError(self.name, f"not an actgrad history database (no {' or '.join(missing)} table)")
        if "meta" in tables:
            self._check_version()

    def _create_schema(self):
        """A writer's first step, inside its transaction (SQLite: BEGIN IMMEDIATE takes the write lock
        now, and a read-only file fails here rather than halfway)."""
        with self._errors("cannot write"):
            if self.dialect == "sqlite":
                self.conn.execute("BEGIN IMMEDIATE")
                tables = self._tables()
                if tables and "runs" not in tables:     # someone else's SQLite file: leave it alone
                    raise InputError(self.name, "not an actgrad history database (it has tables "
                                                f"{', '.join(sorted(tables)[:5])} and no runs table)")
            else:
                # One writer at a time per database, as SQLite's write lock does: concurrent
                # CREATE TABLE IF NOT EXISTS and the first meta row otherwise race (duplicate key
                # in pg_type). Held until the transaction ends, so a killed writer releases it.
                self.execute("SELECT pg_advisory_xact_lock(?)", (PG_WRITER_LOCK,)).close()
            for stmt in DDL:
                self.execute(stmt.format(serial=self.serial)).close()
            if not self._check_version():
                self.execute("INSERT INTO meta (key, value) VALUES (?, ?)",
                             ("schema_version", str(SCHEMA_VERSION))).close()
            self._migrate()

    def _columns(self, table):
        if self.dialect == "sqlite":
            return {r[1] for r in self.query(f"PRAGMA table_info({table})")}
        return {r[0] for r in self.query("SELECT column_name FROM information_schema.columns "
                                         "WHERE table_schema = current_schema() AND table_name = ?", (table,))}

    def _migrate(self):
        """Upgrade an older schema in this transaction: add the missing columns, set the version.
        PostgreSQL says IF NOT EXISTS (another writer may be migrating at the same time); SQLite
        lacks it and needs none: BEGIN IMMEDIATE holds the database's one write lock."""
        if_not = " IF NOT EXISTS" if self.dialect == "postgresql" else ""
        for table, column, sqltype in MIGRATIONS:
            if column not in self._columns(table):
                self.execute(f"ALTER TABLE {table} ADD COLUMN{if_not} {column} {sqltype}").close()
        self.execute("UPDATE meta SET value = ? WHERE key = ?", (str(SCHEMA_VERSION), "schema_version")).close()

    def commit(self):
        with self._errors("cannot write"):
            self.conn.commit()

    def _abort(self):
        """Roll back, close, and remove a database file this writer created (still empty after the rollback)."""
        for step in (self.conn.rollback, self.conn.close):
            try:
                step()
            except Exception:
                pass
        undo(self._created)

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None or self.readonly:
            self._abort()
            return False
        try:
            self.commit()
        except BaseException:
            self._abort()
            raise
        self.close()
        return False

    # -- writing ------------------------------------------------------------
    def record(self, run, doc_benchmarks, commit, machine_id, date, source=None):
        """Store a run; returns (run_id, inserted). Idempotent on run_key. Committed with the rest of
        the transaction when the ``with`` block ends."""
        key = run_key(doc_benchmarks, machine_id, commit)
        rows = []
        for b in run.benches.values():
            for metric, vals in b.samples.items():
                rows.extend((b.name, metric, v, i, w.placement, w.process)
                            for i, (v, w) in enumerate(zip(vals, b.where[metric])))
            for w, aggs in b.group_aggregates.items():
                for agg, metrics in aggs.items():
                    rows.extend((b.name, f"{metric}_{agg}", v, None, w.placement, w.process)
                                for metric, v in metrics.items())
        with self._errors("cannot write"):
            cur = self.execute(
                'INSERT INTO runs (run_key, "commit", "date", machine_id, context, source) '
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_key) DO NOTHING",
                (key, commit, date, machine_id, json.dumps(run.context, sort_keys=True), source))
            inserted = cur.rowcount == 1
            cur.close()
            run_id = self.query("SELECT id FROM runs WHERE run_key = ?", (key,))[0][0]
            if inserted:
                cur = self.conn.cursor()
                cur.executemany(self._sql("INSERT INTO results (run_id, name, metric, value, repetition, "
                                          "placement, process) VALUES (?, ?, ?, ?, ?, ?, ?)"),
                                [(run_id,) + r for r in rows])
                cur.close()
        return run_id, inserted

    # -- reading ------------------------------------------------------------
    def runs(self):
        return self.query('SELECT id, run_key, "commit", "date", machine_id, source FROM runs ORDER BY "date", id')

    def count(self, table):
        return self.query(f"SELECT COUNT(*) FROM {table}")[0][0]

    def series(self, metric="real_time"):
        """{(machine, name): [Point]} with one point per commit, oldest first.

        A commit's value is the median of all its repetitions (over every run
        of that commit on that machine, every placement and process), else of
        its median (or mean) aggregates (one per placement and process).
        Commits are ordered by their first run's date.
        """
        rows = self.query(
            'SELECT r.machine_id, r."commit", r."date", r.id, x.name, x.metric, x.value '
            "FROM results x JOIN runs r ON r.id = x.run_id "
            "WHERE x.metric IN (?, ?, ?) ORDER BY r.machine_id, r.\"date\", r.id",
            (metric, metric + "_median", metric + "_mean"))
        acc = {}
        first = {}
        for machine, commit, date, rid, name, m, value in rows:
            first.setdefault((machine, commit), (date, rid))
            kinds = acc.setdefault((machine, name), {}).setdefault(commit, {})
            kinds.setdefault(m, []).append(value)
        out = {}
        for (machine, name), by_commit in acc.items():
            pts = []
            for commit, kinds in by_commit.items():
                vals = kinds.get(metric) or kinds.get(metric + "_median") or kinds.get(metric + "_mean")
                date, rid = first[(machine, commit)]
                pts.append(Point(commit=commit, date=date, order=(date, rid),
                                 value=statistics.median(vals), samples=len(kinds.get(metric) or [])))
            pts.sort(key=lambda p: p.order)
            out[(machine, name)] = pts
        # commits whose build or run failed (report history run): a point without a value in every
        # series of that machine, unless the commit has values there after all
        for machine, commit, date, rid, status in self.failures():
            for (m, name), pts in out.items():
                if m == machine and all(p.commit != commit for p in pts):
                    pts.append(Point(commit=commit, date=date, order=(date, rid), value=float("nan"), samples=0,
                                     status=status))
                    pts.sort(key=lambda p: p.order)
        return out

    def failures(self):
        """[(machine, commit, date, run id, status)] of the runs recorded as failed builds or runs."""
        rows = self.query('SELECT machine_id, "commit", "date", id, context FROM runs '
                          "WHERE context LIKE ? ORDER BY \"date\", id", ('%"actgrad_status"%',))
        out = []
        for machine, commit, date, rid, ctx in rows:
            try:
                status = json.loads(ctx).get("actgrad_status")
            except ValueError:
                continue
            if status and status != "ok":
                out.append((machine, commit, date, rid, status))
        return out


@dataclass
class Point:
    commit: str
    date: str
    order: tuple
    value: float
    samples: int
    status: str = "ok"      # or "build failed" / "run failed" (value NaN)
