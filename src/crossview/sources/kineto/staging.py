"""Staging: hand the `traceEvents` array of a trace to DuckDB's JSON reader, fast and bounded.

1. Locate the array. Fast path: the key in the first MiB, the closing bracket in the last MiB
   (metadata around it decoded for real). Exact path: msgspec scans the whole document (also
   the check that tells a truncated file from a valid one).
2. Cut the array at event boundaries into one part per DuckDB thread, so parts parse in
   parallel. A cut is a guess (`}, {`); a wrong guess makes a part invalid JSON, the strict
   parse fails, and the caller re-stages exactly, in one piece.
3. Feed the parts: through temp files, copied inside the kernel from the plain file that holds
   the bytes (the input, or the gunzipped copy) with `copy_file_range` (no page of the input
   mapped in this process, one thread per part), else written from the mapping (its pages
   released as they are written); or through named pipes (`stream`). Either way peak memory
   stays near DuckDB's own.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from crossview.errors import InputError
from crossview.sources import guard

_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_SPLIT = re.compile(rb"\}\s*,\s*\{")
_WINDOW = 1 << 20  # bytes of head / tail searched by the fast locate
# below this one part parses as fast (split: the 8 Megatron ranks of 3.7–3.9 MB, 528 → 469 ms)
_SPLIT_MIN_BYTES = 1 << 20
_CHUNK = 8 << 20  # bytes per pipe write; the mapping is released behind it
_PAGE = mmap.PAGESIZE


class DeviceProp(msgspec.Struct):
    id: int | None = None
    name: str | None = None
    totalGlobalMem: int | None = None  # noqa: N815 (field names as Kineto writes them)
    numSms: int | None = None  # noqa: N815
    computeMajor: int | None = None  # noqa: N815
    computeMinor: int | None = None  # noqa: N815


class DistInfo(msgspec.Struct):
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


class TraceMeta(msgspec.Struct):
    traceEvents: msgspec.Raw = msgspec.Raw(b"")  # noqa: N815
    deviceProperties: list[DeviceProp] | None = None  # noqa: N815
    distributedInfo: DistInfo | None = None  # noqa: N815
    # raw: a hostile value (string, 1e300) must not fail the whole metadata decode
    baseTimeNanoseconds: msgspec.Raw = msgspec.Raw(b"")  # noqa: N815
    cuda_driver_version: msgspec.Raw = msgspec.Raw(b"")  # raw, as the base


def load(path: Path, tmpdir: str | None = None) -> bytes | mmap.mmap:
    """The document: a read-only mapping of a plain file; a gzip is decompressed in bounded
    steps to a file in `tmpdir` (once per read) and mapped, so its bytes are page cache,
    not process memory (without `tmpdir`: decompressed in memory under a budget)."""
    try:
        if path.stat().st_size == 0:
            raise InputError(path, "empty file (0 bytes): the capture wrote nothing", "empty")
        with open(path, "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            if tmpdir is None:
                f.seek(0)
                data = guard.gunzip(path, f.read())  # bounded: a bomb is refused
                if not data.strip():
                    raise InputError(path, "empty trace: the gzip holds no data", "empty")
                return data
        plain = Path(tmpdir) / "gunzipped.json"
        if not plain.exists():
            try:
                guard.gunzip_to(path, plain)
            except BaseException:
                plain.unlink(missing_ok=True)
                raise
        with open(plain, "rb") as g:
            size = os.fstat(g.fileno()).st_size
            if size == 0 or (size < _WINDOW and not g.read().strip()):
                raise InputError(path, "empty trace: the gzip holds no data", "empty")
            return mmap.mmap(g.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None


def _offset(inner: object, outer: bytes | mmap.mmap) -> int:
    """Byte offset of a buffer (a msgspec.Raw view) inside the buffer it was cut from."""
    a = np.frombuffer(outer, dtype=np.uint8)
    b = np.frombuffer(inner, dtype=np.uint8)  # type: ignore[call-overload]
    return int(b.__array_interface__["data"][0] - a.__array_interface__["data"][0])


Span = tuple[int, int]  # [start, end) of the events array inside the document


def locate_exact(path: Path, data: bytes | mmap.mmap) -> tuple[TraceMeta, Span]:
    first = bytes(data[:4096]).lstrip()
    try:
        if first[:1] == b"[":  # a bare Chrome-trace event array
            msgspec.json.decode(data, type=msgspec.Raw)  # validates the JSON syntax
            return TraceMeta(), (0, len(data))
        top = msgspec.json.decode(data, type=TraceMeta)
    except msgspec.DecodeError as e:
        hint = "truncated" if "truncated" in str(e).lower() else "invalid"
        raise InputError(path, f"{hint} JSON: {e}") from None
    except RecursionError:
        raise guard.too_deep(path) from None
    except msgspec.ValidationError as e:
        raise InputError(path, f"not a PyTorch-profiler trace: {e}", "unsupported") from None
    n = len(top.traceEvents)
    if n == 0:
        raise InputError(path, "not a PyTorch-profiler trace: no 'traceEvents' array",
                         "unsupported")
    start = _offset(top.traceEvents, data)
    # keep the metadata, drop the reference into the input buffer so it can be released
    base = msgspec.Raw(bytes(top.baseTimeNanoseconds))
    driver = msgspec.Raw(bytes(top.cuda_driver_version))
    return (msgspec.structs.replace(top, traceEvents=msgspec.Raw(b""), baseTimeNanoseconds=base,
                                    cuda_driver_version=driver), (start, start + n))


def locate_fast(data: bytes | mmap.mmap) -> tuple[TraceMeta, Span] | None:
    head = bytes(data[:_WINDOW])
    m = _KEY.search(head)
    if m is None:
        return None
    start = m.end() - 1
    base = max(start + 1, len(data) - _WINDOW)
    tail = bytes(data[base:])
    p = len(tail)
    for _ in range(64):
        p = tail.rfind(b"]", 0, p)
        if p < 0:
            return None
        if not tail[:p].rstrip().endswith(b"}"):
            continue  # an events array ends with an event object
        try:
            top = msgspec.json.decode(head[:start] + b"[]" + tail[p + 1 :], type=TraceMeta)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue  # the exact path decides (and names a too-deep document)
        return top, (start, base + p + 1)
    return None


def split(data: bytes | mmap.mmap, span: Span, parts: int) -> list[Span]:
    """Cut the array into byte ranges holding whole events (best effort, see module doc).

    The first range starts at '[' and the last ends at ']'; the ranges in between start at
    an event's '{' and end after an event's '}' (brackets are added when writing).
    """
    a, b = span
    if parts < 2 or b - a < _SPLIT_MIN_BYTES:
        return [span]
    view = memoryview(data)
    bounds = [a]
    for i in range(1, parts):
        at = a + (b - a) * i // parts
        m = _SPLIT.search(view[at : at + (1 << 22)])
        if m is None:
            return [span]
        bounds += [at + m.start() + 1, at + m.end() - 1]
    bounds.append(b)
    return [(bounds[2 * i], bounds[2 * i + 1]) for i in range(len(bounds) // 2)]


@dataclass
class Staged:
    meta: TraceMeta
    files: list[str]
    fast: bool  # located by the fast path: a parse error means "re-stage exactly"
    _threads: list[threading.Thread] = field(default_factory=list)
    _data: bytes | mmap.mmap | None = None

    def finish(self) -> None:
        """Stop any pipe writer (a reader that gave up leaves it blocked) and release."""
        for path, t in zip(self.files, self._threads, strict=False):
            if t.is_alive():
                with contextlib.suppress(OSError):  # unblock its open(); its pipe then breaks
                    os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
            t.join(timeout=10)
        if isinstance(self._data, mmap.mmap):
            with contextlib.suppress(BufferError):
                self._data.close()
        self._data = None


def _part(k: int, n: int) -> tuple[bytes, bytes]:
    """Brackets that make part k of n a standalone JSON array."""
    return (b"[" if k else b"", b"]" if k < n - 1 else b"")


def _write(f: Any, data: bytes | mmap.mmap, span: Span, k: int, n: int, release: bool) -> None:
    head, tail = _part(k, n)
    f.write(head)
    view = memoryview(data)
    for i in range(span[0], span[1], _CHUNK):
        j = min(i + _CHUNK, span[1])
        f.write(view[i:j])
        if release:  # written: drop these pages from our resident set (page cache keeps them)
            lo = (i + _PAGE - 1) // _PAGE * _PAGE
            hi = j // _PAGE * _PAGE
            if hi > lo:
                data.madvise(mmap.MADV_DONTNEED, lo, hi - lo)  # type: ignore[union-attr]
    view.release()
    f.write(tail)


def _copy_part(src: int, fd: int, span: Span, k: int, n: int) -> None:
    """Part k of n → the open file `fd`, copied by the kernel from descriptor `src` (OSError
    when the file systems or the kernel cannot: the caller writes from the mapping instead)."""
    head, tail = _part(k, n)
    os.write(fd, head)
    at, end = span
    while at < end:
        done = os.copy_file_range(src, fd, end - at, at)
        if done <= 0:
            raise OSError("copy_file_range copied nothing")
        at += done
    os.write(fd, tail)


def _copy_parts(source: Path, tmpdir: str, ranges: list[Span]) -> list[str] | None:
    """The parts as temp files copied in the kernel, in parallel; None where that fails."""
    if not hasattr(os, "copy_file_range"):
        return None
    errors: list[OSError] = []

    def one(k: int) -> None:
        try:
            _copy_part(src, fds[k], ranges[k], k, len(ranges))
        except OSError as e:
            errors.append(e)

    try:
        src = os.open(source, os.O_RDONLY)
    except OSError:
        return None
    fds: list[int] = []
    files: list[str] = []
    try:
        for _ in ranges:
            fd, p = tempfile.mkstemp(suffix=".json", prefix="events-", dir=tmpdir)
            fds.append(fd)
            files.append(p)
        threads = [threading.Thread(target=one, args=(k,)) for k in range(1, len(ranges))]
        for t in threads:
            t.start()
        one(0)
        for t in threads:
            t.join()
    finally:
        os.close(src)
        for fd in fds:
            os.close(fd)
    if errors:
        for f in files:
            with contextlib.suppress(OSError):
                os.unlink(f)
        return None
    return files


def plain_source(path: Path, tmpdir: str) -> Path:
    """The plain file whose bytes `load(path, tmpdir)` maps: the input, or its gunzipped copy."""
    with open(path, "rb") as f:
        return path if f.read(2) != b"\x1f\x8b" else Path(tmpdir) / "gunzipped.json"


def _feed_pipe(path: str, data: mmap.mmap, span: Span, k: int, n: int) -> None:
    try:
        with open(path, "wb", buffering=0) as f:
            _write(f, data, span, k, n, release=True)
    except (BrokenPipeError, OSError, ValueError):
        pass  # the reader stopped (a parse error) or the mapping closed: caller re-stages


def stage(path: Path, tmpdir: str, parts: int, exact: bool, stream: bool = True) -> Staged:
    """Locate and split the events array of `path` into files DuckDB can read."""
    data = load(path, tmpdir)
    try:
        found = None if exact else locate_fast(data)
        meta, span = found if found is not None else locate_exact(path, data)
        ranges = split(data, span, parts)
    except BaseException:
        if isinstance(data, mmap.mmap):
            data.close()
        raise
    files: list[str] = []
    if stream and isinstance(data, mmap.mmap) and hasattr(os, "mkfifo"):
        threads = []
        for k, r in enumerate(ranges):
            p = os.path.join(tmpdir, f"events-{k}.json")
            os.mkfifo(p)
            t = threading.Thread(target=_feed_pipe, args=(p, data, r, k, len(ranges)),
                                 daemon=True)
            t.start()
            files.append(p)
            threads.append(t)
        return Staged(meta, files, found is not None, threads, data)
    if isinstance(data, mmap.mmap):
        copied = _copy_parts(plain_source(path, tmpdir), tmpdir, ranges)
        if copied is not None:
            staged = Staged(meta, copied, found is not None, [], data)
            staged.finish()
            return staged
    for k, r in enumerate(ranges):
        fd, p = tempfile.mkstemp(suffix=".json", prefix="events-", dir=tmpdir)
        with os.fdopen(fd, "wb") as f:
            _write(f, data, r, k, len(ranges), release=isinstance(data, mmap.mmap))
        files.append(p)
    staged = Staged(meta, files, found is not None, [], data)
    staged.finish()  # the bytes are no longer needed: free them before DuckDB parses
    return staged
