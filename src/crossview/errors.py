"""Typed errors. A user error is one line: the file (or option) and the problem."""

from __future__ import annotations

from pathlib import Path


class CrossviewError(Exception):
    """Base of every error crossview reports to a user without a traceback."""


class InputError(CrossviewError):
    """An input file that cannot be read: names the file and the problem."""

    def __init__(self, path: Path | str, problem: str, status: str = "invalid") -> None:
        self.path = str(path)
        self.problem = problem
        self.status = status  # empty | invalid | unsupported
        super().__init__(f"{self.path}: {problem}")


class UsageError(CrossviewError):
    """A wrong option or filter value (e.g. a device the data does not have)."""
