"""The Rich progress bar the CLI shows on stderr while inputs are read (crossview.progress).

Shown only when stderr is a terminal and `--quiet` was not given; transient, so the bar is
erased when reading ends and never mixes with the analysis output.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from crossview.progress import Progress, Silent

if TYPE_CHECKING:  # Rich is imported only where a bar can show (a terminal): 40 ms otherwise
    from rich.console import Console
    from rich.progress import TaskID


class RichProgress:
    """Bytes read of the whole batch (a file counts when it is done), the current file and
    its phase, files done of all, elapsed time."""

    def __init__(self, console: Console) -> None:
        # lazy: `crossview --help` and every command's start-up import only what they run (0902)
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as RichBar

        self._bar = RichBar(
            SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
            DownloadColumn(), TextColumn("{task.fields[files]}"), TimeElapsedColumn(),
            console=console, transient=True,
        )
        self._task: TaskID | None = None
        self._files = 0
        self._done = 0
        self._name = ""
        self._size = 0

    def begin(self, files: int, total_bytes: int) -> None:
        self._files = files
        self._task = self._bar.add_task("reading", total=max(total_bytes, 1),
                                        files=f"0/{files} files")
        self._bar.start()

    def file(self, path: str, size: int) -> None:
        name = Path(path).name  # long names would squeeze the bar out of an 80-column line
        self._name, self._size = (name if len(name) <= 32 else name[:31] + "…"), size
        self._update(f"reading {self._name}")

    def phase(self, text: str) -> None:
        self._update(f"{self._name}: {text}")

    def file_done(self) -> None:
        self._done += 1
        if self._task is not None:
            self._bar.update(self._task, advance=self._size,
                             files=f"{self._done}/{self._files} files")

    def end(self) -> None:
        self._bar.stop()

    def _update(self, text: str) -> None:
        if self._task is not None:
            self._bar.update(self._task, description=text)
            self._bar.refresh()


def stderr_console() -> Console | None:
    """Rich's console on stderr; None where Rich could not call it a terminal (stderr is no
    tty and neither TTY_COMPATIBLE nor FORCE_COLOR says otherwise), without importing Rich."""
    if not ("TTY_COMPATIBLE" in os.environ or "FORCE_COLOR" in os.environ or _isatty()):
        return None
    # lazy: `crossview --help` and every command's start-up import only what they run (0902)
    from rich.console import Console

    return Console(stderr=True)


def _isatty() -> bool:
    try:
        return bool(sys.stderr.isatty())
    except (AttributeError, ValueError):  # no stderr, or a closed one: not a terminal
        return False


def make(quiet: bool, console: Console | None = None) -> Progress:
    """The reporter for one command: a bar on a terminal, silence otherwise or when quiet."""
    if quiet:
        return Silent()
    console = console or stderr_console()
    return RichProgress(console) if console is not None and console.is_terminal else Silent()
