"""Errors that the command line turns into exit code 2 with a clear message."""


class InputError(Exception):
    """A bad input file (or argument): names the file and the problem."""

    def __init__(self, path, problem):
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class OutputError(Exception):
    """An output location we refuse to write (exit 2, nothing written)."""
