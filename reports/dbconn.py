"""Opening the history database (``--db``) without surprises.

A reader (``dashboard``) opens SQLite with a ``file:...?mode=ro`` URI and
PostgreSQL in a read-only session: it never creates, migrates or changes the
database. A writer (``record``) checks the path first (a directory, a foreign
file, an unwritable directory are refused with a message) and remembers what
it created, so a failed write can remove a database file it made itself.
Errors of the file, the server or the permissions become InputError (exit 2)
naming the database; errors in our own SQL stay bugs (exit 3).
"""

import os
import re
import sqlite3
import stat
import sys
import urllib.parse

from .errors import InputError

SQLITE_MAGIC = b"SQLite format 3\x00"
CONNECT_TIMEOUT_S = 10      # PostgreSQL: an unreachable host is a message, not a hang
BUSY_TIMEOUT_S = 30         # SQLite: wait this long for another writer


def is_postgres(url):
    return bool(re.match(r"^postgres(ql)?(\+\w+)?://", str(url)))


def _password(url):
    m = re.match(r"^[\w+.-]+://[^:/@?#]*:([^@/?#]*)@", url)
    return m.group(1) if m else ""


def display_name(url):
    """The URL or path for messages: a PostgreSQL password replaced by ***."""
    pw = _password(url)
    return url.replace(":" + pw + "@", ":***@", 1) if pw else url


def one_line(e, url=""):
    """An exception's message on one line, without the password."""
    primary = getattr(getattr(e, "diag", None), "message_primary", None)   # psycopg: without the SQL echo
    text = primary or "; ".join(s.strip() for s in str(e).splitlines() if s.strip()) or type(e).__name__
    pw = _password(url)
    return text.replace(pw, "***") if pw else text


def is_environment_error(e):
    """True for errors of the database file, server or permissions (bad --db), not of our SQL."""
    if isinstance(e, sqlite3.Error):
        # OperationalError: read-only, locked, disk full, cannot open; the bare DatabaseError:
        # "file is not a database", "database disk image is malformed".
        return type(e) in (sqlite3.OperationalError, sqlite3.DatabaseError)
    psycopg = sys.modules.get("psycopg")
    if psycopg is not None and isinstance(e, psycopg.Error):
        return isinstance(e, (psycopg.OperationalError, psycopg.errors.InsufficientPrivilege,
                              psycopg.errors.ReadOnlySqlTransaction))
    return False


def explain(e):
    """Say why in words a user knows (SQLite says 'readonly database' for a read-only file or mount)."""
    text = one_line(e)
    if isinstance(e, sqlite3.Error) and "readonly" in text:
        text += " (the file, its directory or the mount is read-only)"
    return text


def sqlite_path(url):
    return url[len("sqlite:///"):] if url.startswith("sqlite:///") else url


def _stat(path):
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}")


def _check_existing(path, st):
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, "is a directory, not an SQLite database")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, "is not a regular file, not an SQLite database")
    if st.st_size == 0:
        return
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}")
    if head != SQLITE_MAGIC:
        raise InputError(path, "not an SQLite database")


def _make_parents(path):
    """Create the missing directories above path; returns them, deepest first (to undo)."""
    made = []
    d = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(d):
        made.append(d)
        d = os.path.dirname(d)
    for m in reversed(made):
        try:
            os.mkdir(m)
        except FileExistsError:
            if not os.path.isdir(m):
                undo(made)
                raise InputError(path, f"cannot create the directory {m}: a file of that name exists")
        except OSError as e:
            undo(made)
            raise InputError(path, f"cannot create the directory {m}: {e.strerror or e}")
    return made


def open_sqlite(path, readonly):
    """(connection, [paths created]) for an SQLite file; InputError naming the path on a bad one."""
    st = _stat(path)
    if st is not None:
        _check_existing(path, st)
    elif readonly:
        raise InputError(path, "no such file: no history recorded there "
                               "(report record RESULTS.json --db PATH creates it)")
    created = []
    try:
        if readonly:
            _roll_back_hot_journal(path)
            uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
            return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S), created
        if st is None:
            created = _make_parents(path)
            parent = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(parent):
                raise InputError(path, f"cannot create the database: {parent} is not a directory")
            if not os.access(parent, os.W_OK):
                raise InputError(path, f"cannot create the database: the directory {parent} is not writable "
                                       "(read-only?)")
            created.insert(0, os.path.abspath(path))    # sqlite3.connect creates the file
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        conn.execute("PRAGMA foreign_keys = ON")
        return conn, created
    except sqlite3.Error as e:
        undo(created)
        if is_environment_error(e):
            raise InputError(path, f"cannot open the SQLite database: {explain(e)}")
        raise
    except BaseException:
        undo(created)
        raise


def _roll_back_hot_journal(path):
    """A writer killed inside its transaction leaves a hot journal (PATH-journal) that a read-only
    connection cannot roll back ("attempt to write a readonly database"). Roll it back first with a
    read-write connection's first read: that restores the database as it was before that writer,
    so the reader still changes nothing that was committed. Left alone when it cannot be done (a
    read-only file or mount: then the read-only open reports it)."""
    journal = path + "-journal"
    try:
        if os.path.getsize(journal) == 0 or not os.access(path, os.W_OK) \
                or not os.access(os.path.dirname(os.path.abspath(path)), os.W_OK):
            return
    except OSError:
        return
    try:
        con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        try:
            con.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
        finally:
            con.close()
    except sqlite3.Error:
        pass


def undo(created):
    """Remove what a failed writer created: its database file if still empty, then the directories."""
    for p in created:
        try:
            if os.path.isdir(p):
                os.rmdir(p)            # only if empty
            elif os.path.getsize(p) == 0:
                os.unlink(p)
        except OSError:
            pass


def open_postgres(url, readonly):
    name = display_name(url)
    try:
        import psycopg
    except ImportError:
        raise InputError(name, "PostgreSQL needs the psycopg package (run scripts/setup-python)")
    conninfo = re.sub(r"^postgres(ql)?(\+\w+)?://", "postgresql://", url)
    try:
        params = psycopg.conninfo.conninfo_to_dict(conninfo)
        conn = psycopg.connect(conninfo, **({} if "connect_timeout" in params
                                            else {"connect_timeout": CONNECT_TIMEOUT_S}))
    except (psycopg.Error, ValueError, OSError) as e:
        raise InputError(name, f"cannot connect to PostgreSQL: {one_line(e, url)}")
    if readonly:
        conn.read_only = True      # the server refuses any write in this session
    return conn
