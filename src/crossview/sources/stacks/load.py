"""Bytes of a stacks file, gunzipped when it is gzip; a broken gzip is one InputError line."""

from __future__ import annotations

from pathlib import Path

from crossview.errors import InputError
from crossview.sources import guard
from crossview.sources.textfile import read_bytes

GZIP_MAGIC = b"\x1f\x8b"


def data(path: Path) -> bytes:
    raw = read_bytes(path)
    if raw[:2] != GZIP_MAGIC:
        return raw
    return guard.gunzip(path, raw)  # bounded (a bomb is refused), a cut stream is an error


def text(path: Path) -> str:
    raw = data(path)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start:,}): not a stacks file") from None
