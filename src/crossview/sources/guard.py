"""Checks every reader path makes before it opens an input (issue 18, hostile input).

- `check_open(path)`: the one function called where a file is opened for reading: refuses
  what is not a regular file (FIFO, device, socket, folder) before it is opened, and — inside
  the MCP server — any real path outside the server's roots (symlinks resolved), wherever the
  path came from (given, found by walking a folder, named in bundle.yaml, a model config, an
  archive member).
- `walk(folder)`: the files under a folder, without following folder symlinks (no loops).
- `too_deep(path)`: the error for JSON nested past the decoders' depth limit.
- `quote(text)`: a value quoted in an error message, escaped (newlines, ANSI) and cut short.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import shutil as _shutil
import stat
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from crossview.core import inert
from crossview.errors import InputError
from crossview.knowledge.loader import load_yaml
from crossview.sources import inflate
from crossview.store import memory


@cache
def limit(name: str) -> int | float:
    """A budget from knowledge/input_limits.yaml."""
    return load_yaml("input_limits.yaml")[name]


# The roots an MCP tool call may read (None: no restriction, the CLI). A context variable:
# the MCP SDK runs each call in a worker thread with a copy of the caller's context.
_ROOTS: contextvars.ContextVar[tuple[Path, ...] | None] = contextvars.ContextVar(
    "crossview_roots", default=None)
# folders crossview itself made (archive extraction) that a restricted call may also read
_OWN: set[Path] = set()


@contextlib.contextmanager
def restricted_to(roots: list[Path]) -> Iterator[None]:
    token = _ROOTS.set(tuple(Path(r).resolve() for r in roots))
    try:
        yield
    finally:
        _ROOTS.reset(token)


def allow_own(folder: Path) -> None:
    """A folder crossview wrote itself (an extracted archive): readable under any roots."""
    _OWN.add(Path(folder).resolve())


def inside_roots(path: Path) -> bool:
    roots = _ROOTS.get()
    if roots is None:
        return True
    real = Path(path).resolve(strict=False)
    return any(real == r or real.is_relative_to(r) for r in (*roots, *_OWN))


def _kind(mode: int) -> str | None:
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR,
                       "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_open(path: Path | str) -> Path:
    """Refuse, before opening, what must not be read: not a regular file, or (MCP) outside
    the roots. Returns the path unchanged."""
    p = Path(path)
    if not inside_roots(p):
        raise InputError(show(p), "outside the allowed roots (symlinks are resolved): not "
                         "read", "refused")
    try:
        st = p.stat()  # follows links: a link to /dev/zero is a character device
    except OSError as e:
        raise InputError(show(p), f"cannot read: {e.strerror or e}") from None
    what = _kind(st.st_mode)
    if what == "a folder" and not os.access(p, os.R_OK | os.X_OK):
        raise InputError(show(p), "cannot read: Permission denied (a folder: its files "
                         "cannot be listed)")
    if what is not None:
        raise InputError(show(p), f"not a regular file ({what}): refused before reading",
                         "unsupported")
    return p


def is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.stat().st_mode)
    except OSError:
        return False


def walk(folder: Path) -> Iterator[Path]:
    """Every entry under `folder` that is not a folder (files, links, FIFOs…: the readers
    refuse the wrong ones by name), sorted; folder symlinks are not followed (no loops). A
    folder that cannot be listed (mode 000) is yielded too: its open says so, never silence."""
    unlisted: list[OSError] = []
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False,
                                                onerror=unlisted.append):
        dirnames.sort()
        base = Path(dirpath)
        for n in sorted(filenames):
            yield base / n
        for n in dirnames:  # a link to a folder: listed, not entered
            if (base / n).is_symlink():
                yield base / n
        while unlisted:
            yield Path(unlisted.pop(0).filename or folder)
    while unlisted:
        yield Path(unlisted.pop(0).filename or folder)


def too_deep(path: Path | str, what: str = "JSON") -> InputError:
    """The error for a document nested past the decoder's depth limit (a RecursionError from
    msgspec / json, which stop at Python's recursion limit instead of overflowing)."""
    return InputError(show(path), f"{what} nested too deeply to read (more than ~1,000 "
                      "levels): refused")


def show(path: Path | str) -> str:
    """A path as it may appear in one error line: control characters escaped."""
    return inert.name(path)


def quote(value: object, n: int | None = None) -> str:
    """A value for an error message: escaped, at most `n` characters (input_limits.yaml)."""
    n = n or int(limit("error_quote_chars"))
    s = str(value)
    cut = s[:n]
    out = repr(cut)
    return out + (f"… ({len(s):,} characters)" if len(s) > n else "")


def deep_stacks() -> None:
    """Let Python recurse as deep as input_limits.yaml's `python_recursion_limit` (the
    serializers of nested call trees — msgspec, json — recurse once or twice per tree level;
    Python's default of 1,000 fails on a plausible 1,200-frame stack). Tree builders
    themselves are iterative."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), int(limit("python_recursion_limit"))))


def resource_problem(e: BaseException) -> str:
    if isinstance(e, RecursionError):
        return (f"an input nests deeper than crossview's depth limit (about "
                f"{sys.getrecursionlimit():,} levels, input_limits.yaml "
                "python_recursion_limit): refused")
    return ("out of memory (MemoryError) while analyzing: raise the address-space limit or "
            "--memory-limit, or read fewer / smaller files per run")



def ratio_budget(compressed: int) -> int:
    """Bytes `compressed` bytes may expand to before they are called a bomb
    (input_limits.yaml max_compression_ratio, never below compression_ratio_floor_bytes)."""
    return max(int(limit("compression_ratio_floor_bytes")),
               compressed * int(limit("max_compression_ratio")))


def gunzip_budget() -> int:
    """Decompressed bytes one gzip input may expand to in memory: input_limits.yaml
    max_gunzip_bytes, and at most gzip_memory_multiple × the memory limit (--memory-limit, or
    the default from the usable memory: store/memory.py)."""
    return min(int(limit("max_gunzip_bytes")),
               int(memory.limit_bytes() * float(limit("gzip_memory_multiple"))))


def gunzip(path: Path | str, raw: bytes) -> bytes:
    """A whole gzip stream (members concatenated), decompressed in bounded steps: past the
    budget it is refused, never decompressed whole first; a stream cut short is an error."""
    budget = min(gunzip_budget(), ratio_budget(len(raw)))
    out = bytearray()
    data = memoryview(raw)
    while data.nbytes:
        d = inflate.decompressobj()
        buf = data
        while buf.nbytes or d.unconsumed_tail:
            try:
                chunk = d.decompress(d.unconsumed_tail or buf, 1 << 24)
            except inflate.ERRORS as e:
                raise InputError(show(path), f"corrupt gzip data ({e})") from None
            buf = memoryview(b"") if not d.unconsumed_tail else buf
            out += chunk
            if len(out) > budget:
                raise InputError(show(path), f"gzip expands past {budget:,} bytes (the budget: "
                                 "input_limits.yaml max_gunzip_bytes, 4 × --memory-limit, and "
                                 "200× its compressed size): a bomb? refused")
            if d.eof:
                break
        if not d.eof:
            out += d.flush()
        if len(out) > budget:
            raise InputError(show(path), f"gzip expands past {budget:,} bytes: refused")
        if not d.eof:
            raise InputError(show(path), "truncated gzip: the stream ends before its end "
                             "marker (an interrupted download or copy?)")
        data = memoryview(d.unused_data)
        if data.nbytes and data.tobytes()[:2] != b"\x1f\x8b":
            break  # trailing garbage after a member: as gzip itself, ignore it
    return bytes(out)


def gunzip_to(path: Path | str, dest: Path) -> None:
    """Decompress a gzip file (members concatenated) to `dest` on disk in bounded steps: the
    bytes never sit in memory whole. Budget: the compression ratio (ratio_budget) and half
    the destination's free space; past it, refused. A stream cut short is an error."""
    src = Path(path)
    try:
        free = _shutil.disk_usage(dest.parent).free
    except OSError:
        free = 1 << 62
    budget = min(ratio_budget(src.stat().st_size),
                 int(free * float(limit("archive_free_disk_share"))))
    written = 0
    with open(src, "rb") as f, open(dest, "wb") as out:
        d = inflate.decompressobj()
        pending = b""
        while True:
            if not pending:
                pending = f.read(1 << 20)
                if not pending:
                    break  # input over: complete only if the member ended (checked below)
            try:
                chunk = d.decompress(pending, 1 << 24)
            except inflate.ERRORS as e:
                raise InputError(show(path), f"corrupt gzip data ({e})") from None
            pending = d.unconsumed_tail
            written += len(chunk)
            if written > budget:
                raise InputError(show(path), f"gzip expands past {budget:,} bytes (200× its "
                                 "size, or half the temp folder's free space): a bomb? "
                                 "refused")
            out.write(chunk)
            if d.eof:  # a member ended: another may follow
                rest = d.unused_data or f.read(1 << 20)
                if len(rest) == 1:
                    rest += f.read(1)
                if rest[:2] != b"\x1f\x8b":
                    return  # the end (bytes after the last member are ignored, as gzip does)
                d, pending = inflate.decompressobj(), rest
    if not d.eof:
        raise InputError(show(path), "truncated gzip: the stream ends before its end marker "
                         "(an interrupted download or copy?)")
