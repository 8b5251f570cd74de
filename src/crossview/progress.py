"""Progress reporting for long ingest, without a UI dependency.

Readers and `sources/registry.read_all` report through `current()`: which file starts (and its
size), what phase a long read is in, when a file is done. The default reporter does nothing;
the CLI installs a Rich bar (`cli/progress_bar.py`) with `reporting(...)` when stderr is a
terminal. A context variable rather than a parameter threaded through every reader signature.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class Progress(Protocol):
    def begin(self, files: int, total_bytes: int) -> None:
        """A batch of `files` inputs, `total_bytes` on disk, is about to be read."""

    def file(self, path: str, size: int) -> None:
        """Reading `path` (`size` bytes on disk) starts."""

    def phase(self, text: str) -> None:
        """The current file's read entered a named phase ("parsing JSON", …)."""

    def file_done(self) -> None:
        """The current file is read (or rejected)."""

    def end(self) -> None:
        """The batch is over; a display clears itself."""


class Silent:
    """The default: report nothing."""

    def begin(self, files: int, total_bytes: int) -> None:
        pass

    def file(self, path: str, size: int) -> None:
        pass

    def phase(self, text: str) -> None:
        pass

    def file_done(self) -> None:
        pass

    def end(self) -> None:
        pass


_SILENT = Silent()
_CURRENT: ContextVar[Progress | None] = ContextVar("crossview_progress", default=None)


def current() -> Progress:
    return _CURRENT.get() or _SILENT


@contextmanager
def reporting(p: Progress) -> Iterator[Progress]:
    """Install `p` as the reporter for the code run inside the block."""
    token = _CURRENT.set(p)
    try:
        yield p
    finally:
        _CURRENT.reset(token)
