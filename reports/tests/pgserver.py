"""A throw-away PostgreSQL server for the history tests.

Debian's postgresql (scripts/setup-deps installs it) is started in a new
temporary directory: its own data directory (initdb), listening only on a
Unix socket in that directory (no TCP port, so it never clashes with another
server), trust authentication for the local socket, superuser ``actgrad``,
database ``actgrad``. PostgreSQL refuses to run as root: as root the server
runs as ``nobody`` (runuser), which owns the temporary directory. ``stop()``
stops it (pg_ctl stop -m immediate) and removes the directory; the pytest
fixture calls it at the end of the session even when tests fail, and an
atexit hook does the same if pytest is interrupted.

    python reports/tests/pgserver.py     # start one, print its URL, stop on Enter
"""

import atexit
import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import time

USER = "actgrad"


def find_bindir():
    """The directory of initdb/pg_ctl: $ACTGRAD_PG_BINDIR, Debian's newest /usr/lib/postgresql/N/bin, or PATH."""
    env = os.environ.get("ACTGRAD_PG_BINDIR")
    if env:
        return env
    cands = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if cands:
        return os.path.dirname(cands[-1])
    w = shutil.which("initdb")
    return os.path.dirname(w) if w else None


class Server:
    def __init__(self):
        self.dir = None
        self.url = None
        self._as = []

    def _run(self, *cmd, timeout=60):
        p = subprocess.run(self._as + list(cmd), capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
        return p

    def start(self):
        bindir = find_bindir()
        if not bindir:
            raise RuntimeError("no PostgreSQL server programs (initdb, pg_ctl); install Debian's postgresql "
                               "(scripts/setup-deps)")
        root = os.geteuid() == 0
        # as root, in /tmp: $TMPDIR may be a directory 'nobody' cannot enter
        self.dir = tempfile.mkdtemp(prefix="actgrad-pg-", dir="/tmp" if root and os.path.isdir("/tmp") else None)
        if root:                     # postgres refuses root: run it as nobody
            import pwd
            pw = pwd.getpwnam("nobody")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            self._as = ["runuser", "-u", "nobody", "--"]
        os.chmod(self.dir, 0o755)    # the socket is reached by the tests' user
        data = os.path.join(self.dir, "data")
        atexit.register(self.stop)
        self._run(os.path.join(bindir, "initdb"), "-D", data, "-U", USER, "--auth=trust", "-E", "UTF8",
                  "--no-sync", "--locale=C")
        opts = f"-c listen_addresses='' -c unix_socket_directories={self.dir} -c fsync=off " \
               "-c synchronous_commit=off -c full_page_writes=off -c max_connections=40"
        self._run(os.path.join(bindir, "pg_ctl"), "-D", data, "-l", os.path.join(self.dir, "log"), "-w",
                  "-t", "30", "-o", opts, "start")
        self.url = f"postgresql://{USER}@/postgres?host={self.dir}"
        import psycopg
        with psycopg.connect(self.url, autocommit=True) as con:
            con.execute(f"CREATE DATABASE {USER}")
        self.url = f"postgresql://{USER}@/{USER}?host={self.dir}"
        self._bindir = bindir
        return self.url

    def stop(self):
        if not self.dir:
            return
        d, self.dir = self.dir, None
        data = os.path.join(d, "data")
        if os.path.exists(os.path.join(data, "postmaster.pid")):
            try:
                self._run(os.path.join(self._bindir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop",
                          timeout=30)
            except Exception:
                pass
        shutil.rmtree(d, ignore_errors=True)


@contextlib.contextmanager
def running(required):
    """A throw-away server's URL for a with-block (a pytest fixture's body),
    stopped after it. When none can be started the test skips, or fails when
    `required` (CI, scripts/test)."""
    import pytest
    server = Server()
    try:
        url = server.start()
    except Exception as e:          # no server programs, or it would not start
        server.stop()
        if required:
            pytest.fail(f"cannot start a PostgreSQL server: {e}")
        pytest.skip(f"no PostgreSQL server: {e}")
    try:
        yield url
    finally:
        server.stop()


def scoped(url, schema):
    """The URL with search_path set to schema (a fresh schema per test keeps tests apart)."""
    return url + ("&" if "?" in url else "?") + f"options=-csearch_path%3D{schema}"


if __name__ == "__main__":
    s = Server()
    print(s.start())
    try:
        input("PostgreSQL is running; Enter stops it. ")
    finally:
        t = time.time()
        s.stop()
        print(f"stopped ({time.time() - t:.1f} s)")
