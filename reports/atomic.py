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


def write_bytes(path, data):
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
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
        parent = os.path.dirname(self.target)
        os.makedirs(parent, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="." + os.path.basename(self.target) + ".", suffix=".tmp", dir=parent)
        os.chmod(self.tmp, 0o755)
        with open(os.path.join(self.tmp, MARKER), "w") as f:
            f.write("made by actgrad reports; the whole directory is replaced on each run\n")
        return self.tmp

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
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
        return False
