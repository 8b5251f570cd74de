"""What a read of some paths depends on, as one key: the paths as given, every file the
readers would read with its sha256, the files a folder walk skips, crossview's reader code
and the libraries that write the store. A read that cannot be keyed (an archive, a file that
is missing, not a regular file or outside the MCP roots) is not cached: it is read as always,
so the readers and the roots guard say what is wrong with it."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

# the store entries' layout (cache/entry.py); bumped when it changes (it is part of every key)
FORMAT = 1
# the folder's parts: the stores (entry.py) and the commands' answers (answer.py), one bound
ANSWERS = "answers"
ANSWER_SUFFIX = ".crossview.json"
_CHUNK = 1 << 20
# what the stored rows depend on besides the input: the modules the readers may import
# (import layers foundation … sources, tests/import_layers.yaml) and this package
_CODE = ("sources", "store", "knowledge", "kernels", "core", "cache", "errors.py",
         "units.py", "schema.py", "progress.py")
# files at least this large have their sha256 remembered by stat (size, mtime, inode): a
# 334 MB trace hashes in ~0.4 s, its stat in microseconds (as the MCP server, decision 0138)
_MEMO_MIN_BYTES = 8 << 20


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB chunks (an entry's name; an input's key)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Key:
    digest: str  # hex: the entry's name
    files: tuple[Path, ...]  # the files the readers read


@cache
def code_fingerprint() -> str:
    """The reader code and the libraries that write rows, by stat: a checkout or upgrade that
    touches any of them starts new entries (old ones age out)."""
    # lazy: cache.answer uses this module's hashing before DuckDB or numpy load (0845)
    import duckdb
    import numpy
    import pyarrow

    pkg = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"{sys.version}|duckdb {duckdb.__version__}|pyarrow "
                       f"{pyarrow.__version__}|numpy {numpy.__version__}".encode())
    for part in _CODE:
        base = pkg / part
        files = [base] if base.is_file() else sorted(
            p for p in base.rglob("*") if p.suffix in (".py", ".yaml"))
        for f in files:
            st = f.stat()
            h.update(f"{f.relative_to(pkg)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def content_hash(path: Path, memo: Path | None) -> str:
    """sha256 of the file; a large one's remembered by its stat in `memo` (a folder)."""
    st = path.stat()
    if memo is None or st.st_size < _MEMO_MIN_BYTES:
        return file_sha256(path)
    real = os.fsencode(str(path.resolve()))
    note = memo / (hashlib.sha256(real).hexdigest()[:32] + ".json")
    stamp = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]
    try:
        known = json.loads(note.read_text(encoding="utf-8"))
        if known.get("stat") == stamp and isinstance(known.get("sha256"), str):
            return str(known["sha256"])
    except (OSError, ValueError, AttributeError):
        pass  # none yet, or unreadable: hash it
    digest = file_sha256(path)
    try:
        memo.mkdir(parents=True, exist_ok=True)
        tmp = note.with_name(f".{note.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"stat": stamp, "sha256": digest}), encoding="utf-8")
        os.replace(tmp, note)
    except OSError:
        pass  # a memo is an optimization only
    return digest


def key_of(paths: list[Path], hashes: Mapping[str, str] | None = None,
           memo: Path | None = None) -> Key | None:
    """The key of reading `paths` (as given, in order); None when it cannot be cached.
    hashes: sha256 by file (str) the caller already knows (the MCP server's)."""
    # lazy: the readers' registry imports DuckDB and Arrow; cache.answer hashes with this
    # module's content_hash before anything heavy is loaded
    from crossview.sources import archive, guard
    from crossview.sources.registry import discover_all

    if any(archive.is_archive(p) for p in paths):
        return None  # read from a temporary extraction whose names change per run
    files, skipped, _over = discover_all(paths)
    if not files:
        return None
    h = hashlib.sha256(f"crossview capture cache {FORMAT} {code_fingerprint()}\n".encode())
    for p in paths:
        h.update(b"path\0" + os.fsencode(str(p)) + b"\n")
    for f in files:
        # never hashed, never cached: a file the readers refuse (they say why) or one outside
        # the MCP roots (its bytes must not decide anything, decision 0811)
        if archive.is_archive(f) or not guard.inside_roots(f) or not guard.is_regular(f):
            return None
        try:
            digest = (hashes or {}).get(str(f)) or content_hash(f, memo)
        except OSError:
            return None
        h.update(b"file\0" + os.fsencode(str(f)) + b"\0" + digest.encode() + b"\n")
    for f in skipped:
        h.update(b"skipped\0" + os.fsencode(str(f)) + b"\n")
    return Key(h.hexdigest()[:40], tuple(files))
