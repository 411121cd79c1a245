"""The history database: every recorded run, for the dashboard.

SQLite by default (one file, embedded, no server); the same schema and the
same SQL on PostgreSQL for a team (``--db postgresql://user@host/db``, needs
psycopg, installed by scripts/setup-python). The only dialect difference is
the type of the generated key (``INTEGER PRIMARY KEY`` vs ``BIGSERIAL``) and
the parameter marker (``?`` vs ``%s``).

Tables
  runs(id, run_key UNIQUE, "commit", "date", machine_id, context, source)
  results(run_id -> runs.id, name, metric, value, repetition)

``run_key`` is the SHA-256 of the file's benchmark rows (canonical JSON), the
machine id and the commit, so recording the same run twice stores it once.
``results.metric`` is ``real_time``/``cpu_time`` (ns), ``bytes_per_second``,
``items_per_second`` or ``pct_of_bandwidth`` for each repetition
(``repetition`` = 0, 1, ...), and ``<metric>_<aggregate>`` (e.g.
``real_time_median``) for Google Benchmark's aggregates (``repetition`` NULL).
"""

import datetime as dt
import hashlib
import json
import os
import re
import sqlite3
import statistics
from dataclasses import dataclass

from .errors import InputError

SCHEMA_VERSION = 1
DEFAULT_DB = os.path.join("reports", "history.sqlite")

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
         repetition INTEGER)""",
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


def is_postgres(url):
    return bool(re.match(r"^postgres(ql)?(\+\w+)?://", str(url)))


class HistoryDB:
    def __init__(self, url):
        self.url = str(url)
        if is_postgres(self.url):
            try:
                import psycopg
            except ImportError:
                raise InputError("--db", "PostgreSQL needs the psycopg package (run scripts/setup-python)")
            try:
                self.conn = psycopg.connect(re.sub(r"^postgres(ql)?\+\w+://", "postgresql://", self.url))
            except Exception as e:
                raise InputError("--db", f"cannot connect to PostgreSQL: {str(e).strip()}")
            self.dialect = "postgresql"
            self.serial = "BIGSERIAL"
        else:
            path = self.url[len("sqlite:///"):] if self.url.startswith("sqlite:///") else self.url
            self.path = path
            parent = os.path.dirname(os.path.abspath(path))
            os.makedirs(parent, exist_ok=True)
            if os.path.exists(path) and os.path.getsize(path) > 0:
                with open(path, "rb") as f:
                    if f.read(16) != b"SQLite format 3\x00":
                        raise InputError(path, "not an SQLite database")
            try:
                self.conn = sqlite3.connect(path, timeout=30)
            except sqlite3.Error as e:
                raise InputError(path, f"cannot open the SQLite database: {e}")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.dialect = "sqlite"
            self.serial = "INTEGER"
        self._init_schema()

    # -- plumbing -----------------------------------------------------------
    def _sql(self, sql):
        return sql.replace("?", "%s") if self.dialect == "postgresql" else sql

    def execute(self, sql, params=()):
        cur = self.conn.cursor()
        cur.execute(self._sql(sql), params)
        return cur

    def query(self, sql, params=()):
        cur = self.execute(sql, params)
        rows = cur.fetchall()
        cur.close()
        return rows

    def _init_schema(self):
        try:
            for stmt in DDL:
                self.execute(stmt.format(serial=self.serial)).close()
            cur = self.execute("SELECT value FROM meta WHERE key = ?", ("schema_version",))
            row = cur.fetchone()
            cur.close()
            if row is None:
                self.execute("INSERT INTO meta (key, value) VALUES (?, ?)",
                             ("schema_version", str(SCHEMA_VERSION))).close()
            elif int(row[0]) > SCHEMA_VERSION:
                raise InputError(self.url, f"history schema version {row[0]} is newer than this tool's "
                                           f"({SCHEMA_VERSION}); update the reports package")
            self.conn.commit()
        except InputError:
            raise
        except Exception as e:
            self.conn.rollback()
            raise InputError(self.url, f"cannot set up the history tables: {e}")

    def close(self):
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- writing ------------------------------------------------------------
    def record(self, run, doc_benchmarks, commit, machine_id, date, source=None):
        """Store a run; returns (run_id, inserted). Idempotent on run_key."""
        key = run_key(doc_benchmarks, machine_id, commit)
        rows = []
        for b in run.benches.values():
            for metric, vals in b.samples.items():
                rows.extend((b.name, metric, v, i) for i, v in enumerate(vals))
            for agg, metrics in b.aggregates.items():
                for metric, v in metrics.items():
                    rows.append((b.name, f"{metric}_{agg}", v, None))
        try:
            cur = self.execute(
                'INSERT INTO runs (run_key, "commit", "date", machine_id, context, source) '
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_key) DO NOTHING",
                (key, commit, date, machine_id, json.dumps(run.context, sort_keys=True), source))
            inserted = cur.rowcount == 1
            cur.close()
            run_id = self.query("SELECT id FROM runs WHERE run_key = ?", (key,))[0][0]
            if inserted:
                cur = self.conn.cursor()
                cur.executemany(self._sql("INSERT INTO results (run_id, name, metric, value, repetition) "
                                          "VALUES (?, ?, ?, ?, ?)"),
                                [(run_id,) + r for r in rows])
                cur.close()
            self.conn.commit()
        except Exception:
            self.conn.rollback()
            raise
        return run_id, inserted

    # -- reading ------------------------------------------------------------
    def runs(self):
        return self.query('SELECT id, run_key, "commit", "date", machine_id, source FROM runs ORDER BY "date", id')

    def count(self, table):
        return self.query(f"SELECT COUNT(*) FROM {table}")[0][0]

    def series(self, metric="real_time"):
        """{(machine, name): [Point]} with one point per commit, oldest first.

        A commit's value is the median of all its repetitions (over every run
        of that commit on that machine), else of its median (or mean)
        aggregates. Commits are ordered by their first run's date.
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
        return out


@dataclass
class Point:
    commit: str
    date: str
    order: tuple
    value: float
    samples: int
