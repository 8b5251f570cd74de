"""Content hashes of the files behind an MCP scope, computed once per file version.

The server caches opened captures by what they hold, not by their names: a call whose
files hash as before reuses the open store; a file that changed is read again, and the
result says so. Hashing a 300 MB trace takes a fraction of a second, so a file is hashed
again only when its stat (size, mtime, inode) changed since the last hash; an unchanged
stat costs one `stat` per file per call.

A perf-lake folder (it holds `manifest.jsonl`) is one input: its manifest is hashed, since
an ingest commits by appending to it (lake/manifest.py).
"""

from __future__ import annotations

import hashlib
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from crossview.lake.manifest import MANIFEST
from crossview.sources import guard
from crossview.sources.registry import discover

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Stat:
    size: int
    mtime_ns: int
    inode: int



def is_lake(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def files_of(paths: list[Path]) -> list[Path]:
    """The files whose bytes the analysis of `paths` reads (a lake: its manifest)."""
    out: list[Path] = []
    for p in paths:
        if is_lake(p):
            out.append(p / MANIFEST)
        else:
            out.extend(discover([p]))
    return out


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


class Hashes:
    """sha256 per file, remembered with the stat it was computed at."""

    def __init__(self) -> None:
        self._known: dict[Path, tuple[Stat, str]] = {}
        self._lock = threading.Lock()
        self.hashed = 0  # files hashed so far (a stat change or a first sight)

    def of(self, path: Path) -> str:
        raw = path.stat()
        st = Stat(raw.st_size, raw.st_mtime_ns, raw.st_ino)
        mode = raw.st_mode
        if not stat.S_ISREG(mode):  # a FIFO or device named like a capture: never read it
            return f"not-a-regular-file:{stat.filemode(mode)}"  # (its reader refuses it)
        if not guard.inside_roots(path):  # a link out of the MCP roots: the reader refuses
            return "outside-the-roots"
        with self._lock:
            known = self._known.get(path)
        if known is not None and known[0] == st:
            return known[1]
        digest = sha256_file(path)
        with self._lock:
            self._known[path] = (st, digest)
            self.hashed += 1
        return digest

    def content(self, paths: list[Path]) -> dict[str, str]:
        """{file: sha256} for every file the analysis of `paths` reads, in read order."""
        return {str(f): self.of(f) for f in files_of(paths)}
