"""Atomic writes: a reader sees the old output or the new one, never half.

Files: written to a temporary file in the same directory, then os.replace().
Directories: built in a temporary sibling directory, then swapped in with two
renames; the old directory (only one this tool made, marked by MARKER) is
removed afterwards.
"""

import os
import shutil
import tempfile

from .errors import OutputError

MARKER = ".actgrad-report"


def cannot_write(target, e):
    """OutputError for an OSError met while writing target (read-only mount, a file where a directory
    should be, disk full): exit 2 with a message, no traceback."""
    return OutputError(f"{target}: cannot write: {e.strerror or e}")


def _make_parent(target):
    parent = os.path.dirname(target)
    if os.path.exists(parent) and not os.path.isdir(parent):
        raise OutputError(f"{target}: cannot write: {parent} is not a directory")
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise cannot_write(target, e) from e
    return parent


def write_bytes(path, data):
    path = os.path.abspath(os.fspath(path))
    if os.path.isdir(path):
        raise OutputError(f"{path}: is a directory; name a file")
    try:
        _write_bytes(path, data)
    except OSError as e:
        raise cannot_write(path, e) from e


def _write_bytes(path, data):
    parent = _make_parent(path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text(path, text):
    write_bytes(path, text.encode("utf-8"))


def check_replaceable(target):
    """Refuse to replace a directory this tool did not make (say --out .)."""
    target = os.path.abspath(os.fspath(target))
    if not os.path.exists(target):
        return
    if not os.path.isdir(target):
        raise OutputError(f"{target}: exists and is not a directory")
    if os.listdir(target) and not os.path.exists(os.path.join(target, MARKER)):
        raise OutputError(
            f"{target}: directory exists, is not empty and was not made by this tool "
            f"(no {MARKER} file); choose another --out or remove it")


class AtomicDir:
    """``with AtomicDir(out) as tmp: write into tmp`` -> tmp becomes out on success."""

    def __init__(self, target):
        self.target = os.path.abspath(os.fspath(target))
        self.tmp = None

    def __enter__(self):
        check_replaceable(self.target)
        parent = _make_parent(self.target)
        try:
            self.tmp = tempfile.mkdtemp(prefix="." + os.path.basename(self.target) + ".", suffix=".tmp",
                                        dir=parent)
            os.chmod(self.tmp, 0o755)
            with open(os.path.join(self.tmp, MARKER), "w") as f:
                f.write("made by actgrad reports; the whole directory is replaced on each run\n")
        except OSError as e:
            if self.tmp:
                shutil.rmtree(self.tmp, ignore_errors=True)
            raise cannot_write(self.target, e) from e
        return self.tmp

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            if issubclass(exc_type, OSError):    # writing into tmp failed (disk full, ...)
                raise cannot_write(self.target, exc) from exc
            return False
        try:
            self._swap()
        except OSError as e:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise cannot_write(self.target, e) from e
        return False

    def _swap(self):
        check_replaceable(self.target)
        old = None
        if os.path.exists(self.target):
            old = tempfile.mkdtemp(prefix="." + os.path.basename(self.target) + ".", suffix=".old",
                                   dir=os.path.dirname(self.target))
            os.rmdir(old)
            os.rename(self.target, old)
        try:
            os.rename(self.tmp, self.target)
        except BaseException:
            if old is not None:
                os.rename(old, self.target)
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
