"""The lake's manifest: one JSON line per committed artifact, the lake's commit log.

A Parquet file the manifest does not list (a crashed ingest) is never read, so a lake is
always consistent; re-ingesting that file later overwrites it (files are named by hash).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from crossview.errors import InputError, UsageError
from crossview.sources.tempdirs import process_alive

MANIFEST = "manifest.jsonl"
LOCK = ".lock"
DEFAULT = "default"
# Ids from different artifacts must not collide in one lake: every id column of an artifact
# (op, node, kernel ids) is offset by artifact_id << ID_SHIFT. A single artifact's store
# starts its ids at 0, so < 2**40 ids per artifact and < 2**23 artifacts per lake.
ID_SHIFT = 40
MAX_ARTIFACTS = 2**23 - 1
_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass
class Entry:
    """One committed artifact. files: table → Parquet path relative to the lake."""

    artifact_id: int
    path: str
    sha256: str
    kind: str
    bytes: int
    campaign: str
    run: str
    ingested_at: str
    rows: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)


def check_part(what: str, value: str) -> str:
    """campaign/run become directory names: keep them to a safe alphabet."""
    if not _PART.match(value):
        raise UsageError(f"--{what} {value!r}: use letters, digits, '.', '_' or '-' "
                         "(starting with a letter or digit, at most 128)")
    return value


def read(lake: Path) -> list[Entry]:
    """Every committed entry; a lake that does not exist yet has none."""
    p = lake / MANIFEST
    if not p.exists():
        return []
    out: list[Entry] = []
    with open(p, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append(Entry(**json.loads(line)))
        except (ValueError, TypeError, RecursionError) as e:
            if n == len(lines) and not line.endswith("\n"):
                # a torn last line: an append cut by a crash, never committed (append()
                # fsyncs whole lines): ignored, said once, removed by the next ingest
                print(f"crossview: warning: {p}: line {n} is a torn (incomplete) entry from "
                      "an interrupted ingest: ignored", file=sys.stderr)
                continue
            raise InputError(p, f"line {n}: not a manifest entry ({e})") from None
    return out


def repair(lake: Path) -> None:
    """Under the lock, before an ingest appends: cut a torn last line (so the next entry does
    not land on it) and remove what crashed ingests left — `.part` files of dead processes
    and Parquet files no manifest line lists (never read; re-ingest rewrites them)."""
    p = lake / MANIFEST
    if p.exists():
        raw = p.read_bytes()
        if raw and not raw.endswith(b"\n"):
            with open(p, "r+b") as fh:
                fh.truncate(raw.rfind(b"\n") + 1)
    listed = {f for e in read(lake) for f in e.files.values()}
    for f in lake.rglob("*"):
        if not f.is_file() or f.is_symlink():
            continue
        m = _PARTFILE.match(f.name)
        dead_part = m is not None and not process_alive(int(m["pid"]))
        orphan = f.suffix == ".parquet" and f.relative_to(lake).as_posix() not in listed
        if dead_part or orphan:
            f.unlink(missing_ok=True)


_PARTFILE = re.compile(r"^\..+\.(?P<pid>\d+)\.part$")




def append(lake: Path, entries: list[Entry]) -> None:
    """Commit entries: one line each, flushed and fsynced (append-only)."""
    if not entries:
        return
    with open(lake / MANIFEST, "a", encoding="utf-8") as f:
        for e in entries:
            f.write(json.dumps(asdict(e), sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


@contextmanager
def locked(lake: Path) -> Iterator[None]:
    """One ingest writes a lake at a time (id allocation reads then appends the manifest)."""
    lake.mkdir(parents=True, exist_ok=True)
    with open(lake / LOCK, "w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"{lake}: another ingest is writing this lake") from None
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def select(entries: list[Entry], campaign: str | None, run: str | None) -> list[Entry]:
    return [e for e in entries
            if (campaign is None or e.campaign == campaign) and (run is None or e.run == run)]
