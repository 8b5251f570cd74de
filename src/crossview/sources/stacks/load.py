"""Bytes of a stacks file, gunzipped when it is gzip; a broken gzip is one InputError line."""

from __future__ import annotations

import zlib
from pathlib import Path

from crossview.errors import InputError
from crossview.sources.textfile import read_bytes

GZIP_MAGIC = b"\x1f\x8b"


def data(path: Path) -> bytes:
    raw = read_bytes(path)
    if raw[:2] != GZIP_MAGIC:
        return raw
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = d.decompress(raw) + d.flush()
    except zlib.error as e:
        raise InputError(path, f"corrupt gzip data ({e})") from None
    if not d.eof:
        raise InputError(path, f"truncated gzip: the stream ends after {len(raw):,} bytes "
                         "before its end marker (an interrupted download or copy?)")
    return out


def text(path: Path) -> str:
    raw = data(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start:,}): not a stacks file") from None
