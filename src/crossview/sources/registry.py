"""Which reader takes which file: content sniffing first, extension as the fallback."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from crossview.errors import InputError
from crossview.sources.kineto import reader as kineto
from crossview.sources.report import ArtifactReport
from crossview.store.store import Store

_HEAD = 65536


@dataclass(frozen=True)
class Reader:
    kind: str
    sniff: Callable[[bytes, Path], bool]
    read: Callable[[Path, Store], ArtifactReport]
    suffixes: tuple[str, ...]


# One line per input format; a new format adds one module and one line here.
READERS: tuple[Reader, ...] = (
    Reader(kineto.KIND, kineto.sniff, kineto.read, (".json", ".json.gz")),
)


def _head(path: Path) -> bytes:
    with open(path, "rb") as f:
        raw = f.read(_HEAD)
    if raw[:2] == b"\x1f\x8b":
        try:
            return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(raw, _HEAD)
        except zlib.error:
            return b""
    return raw


def pick_reader(path: Path) -> Reader:
    try:
        head = _head(path)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None
    for r in READERS:
        if r.sniff(head, path):
            return r
    name = path.name.lower()
    for r in READERS:
        if name.endswith(r.suffixes):
            return r  # let the reader say precisely what is wrong with it
    raise InputError(
        path, "unsupported format: not a PyTorch-profiler trace (.json / .json.gz)", "unsupported"
    )


def discover(paths: Iterable[Path]) -> list[Path]:
    """Expand folders (recursively) to the files crossview can try; keep files as given."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            suffixes = tuple(s for r in READERS for s in r.suffixes)
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()
                              and f.name.lower().endswith(suffixes)))
        else:
            out.append(p)
    return out


def read_all(paths: Iterable[Path], store: Store) -> list[ArtifactReport]:
    """Read every input; a bad one is reported and skipped, the rest still read."""
    reports: list[ArtifactReport] = []
    for path in discover(paths):
        if not path.exists():
            reports.append(ArtifactReport(str(path), "unknown", "invalid", ["no such file"]))
            continue
        try:
            reader = pick_reader(path)
            reports.append(reader.read(path, store))
        except InputError as e:
            reports.append(ArtifactReport(e.path, "kineto", e.status, [e.problem]))
        except (gzip.BadGzipFile, EOFError) as e:
            reports.append(ArtifactReport(str(path), "unknown", "invalid", [str(e)]))
    return reports
