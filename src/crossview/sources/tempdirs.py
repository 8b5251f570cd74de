"""Temporary folders crossview makes (archive extraction, Kineto staging) carry the owning
process id in their name: `crossview-x<pid>-…`. A run killed with SIGKILL cannot remove its
own; the next run sweeps every such folder whose process is gone (issue 18). Every other
exit removes them: at interpreter exit, and from `remove_all()`, which a process ending
with `os._exit` (the CLI's fast exit) calls first (issue 43)."""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

_NAME = re.compile(r"^crossview-x(?P<pid>\d+)-")
_swept = False
_made: set[str] = set()  # folders this process made and has not removed yet
_lock = threading.Lock()


def make(tag: str = "") -> str:
    """A fresh temporary folder named for this process (sweep() removes it once it is dead)."""
    sweep()
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", tag)[:60]
    d = tempfile.mkdtemp(prefix=f"crossview-x{os.getpid()}-{safe}{'-' if safe else ''}")
    with _lock:
        if not _made:
            atexit.register(remove_all)
        _made.add(d)
    return d


def remove(folder: str | Path) -> None:
    """Remove a folder `make` gave (done with it before the process ends)."""
    shutil.rmtree(folder, ignore_errors=True)
    with _lock:
        _made.discard(str(folder))


def remove_all() -> None:
    """Remove every folder this process made and still holds (any exit path)."""
    with _lock:
        left = list(_made)
        _made.clear()
    for d in left:
        shutil.rmtree(d, ignore_errors=True)


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
