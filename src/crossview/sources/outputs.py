"""Outputs never become inputs (issue 18): files crossview writes carry a marker that folder
walks recognize and skip, `-o` onto an input is refused, and overwriting an output says so.

The marker is a name: every file crossview writes next to captures gets `.crossview.` before
its extension (e.g. `trace.crossview.perfetto.json`) when the user did not name it, and a
user-named output is also recorded in a small sidecar list (`.crossview-outputs`) in its
folder, which the walk reads. Either way the next run's folder walk skips it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from crossview.errors import UsageError

MARK = ".crossview."
SIDECAR = ".crossview-outputs"


def is_own_output(f: Path) -> bool:
    if MARK in f.name or f.name == SIDECAR:
        return True
    side = f.parent / SIDECAR
    try:
        if side.is_file() and side.stat().st_size < (1 << 20):
            return f.name in side.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    return False


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and a.samefile(b))
    except OSError:
        return False


def check_target(output: Path, inputs: Iterable[Path]) -> None:
    """Refuse an output path that is one of the inputs (or a file inside an input folder
    that the run reads)."""
    for i in inputs:
        if _same(output, i):
            raise UsageError(f"-o {output}: that is an input of this run: refusing to "
                             "overwrite a capture")


def record(output: Path) -> None:
    """Note a written output in its folder's sidecar list (so a folder walk skips it) and say
    on stderr when an existing file was overwritten (the caller passes existed)."""
    side = output.parent / SIDECAR
    with contextlib.suppress(OSError):
        names = side.read_text(encoding="utf-8").splitlines() if side.is_file() else []
        if output.name not in names:
            with open(side, "a", encoding="utf-8") as f:
                f.write(output.name + "\n")


def write(output: Path, data: str | bytes, inputs: Iterable[Path] = (), quiet: bool = False
          ) -> None:
    """Write an output file: refused onto an input, announced when it replaces a file,
    atomic (temp name + rename), and marked so a later folder walk does not read it.

    `-o -` is standard output. A path that exists and is not a regular file (`/dev/null`,
    `/dev/stdout`, a FIFO) is written in place: a temp-then-rename there would replace the
    device node with a plain file (as root, /dev/null itself)."""
    if str(output) == "-":
        _stream(data)
        return
    check_target(output, inputs)
    try:
        mode = output.stat().st_mode
    except OSError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISDIR(mode):
            raise UsageError(f"-o {output}: is a folder: name a file")
        if isinstance(data, bytes):
            with open(output, "wb") as fb:
                fb.write(data)
        else:
            with open(output, "w", encoding="utf-8") as ft:
                ft.write(data)
        return
    existed = mode is not None
    tmp = output.with_name(f".{output.name}.crossview-tmp-{os.getpid()}")
    if isinstance(data, str):
        tmp.write_text(data, encoding="utf-8")
    else:
        tmp.write_bytes(data)
    os.replace(tmp, output)
    record(output)
    if existed and not quiet:  # --quiet: as the other progress/status lines
        print(f"crossview: note: overwrote {output}", file=sys.stderr)


def _stream(data: str | bytes) -> None:
    if isinstance(data, bytes):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(data)
        sys.stdout.flush()
