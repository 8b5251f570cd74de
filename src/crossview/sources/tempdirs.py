"""Temporary folders crossview makes (archive extraction, Kineto staging) carry the owning
process id in their name: `crossview-x<pid>-…`. A run killed with SIGKILL cannot remove its
own; the next run sweeps every such folder whose process is gone (issue 18)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

_NAME = re.compile(r"^crossview-x(?P<pid>\d+)-")
_swept = False


def make(tag: str = "") -> str:
    """A fresh temporary folder named for this process (sweep() removes it once it is dead)."""
    sweep()
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", tag)[:60]
    return tempfile.mkdtemp(prefix=f"crossview-x{os.getpid()}-{safe}{'-' if safe else ''}")


def process_alive(pid: int) -> bool:
    """Whether process `pid` still runs (a pid ≤ 0 is never a live owner)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def sweep() -> list[Path]:
    """Remove leftover folders of dead crossview processes (once per process)."""
    global _swept
    if _swept:
        return []
    _swept = True
    gone: list[Path] = []
    root = Path(tempfile.gettempdir())
    try:
        entries = list(root.iterdir())
    except OSError:
        return gone
    for d in entries:
        m = _NAME.match(d.name)
        if m and int(m["pid"]) != os.getpid() and not process_alive(int(m["pid"])) and d.is_dir() \
                and not d.is_symlink():
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone
