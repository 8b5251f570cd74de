"""Small shared helpers for line-oriented text inputs (metrics logs, JSON lines)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from crossview.errors import InputError


def read_bytes(path: Path) -> bytes:
    """The file's bytes, or one InputError line naming the file and the OS problem."""
    try:
        return path.read_bytes()
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None


def read_text(path: Path) -> str:
    return read_bytes(path).decode("utf-8", errors="replace")


def json_objects(data: bytes, bad: list[tuple[int, str]]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON-object line; other lines are recorded in `bad`."""
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = msgspec.json.decode(line)
        except msgspec.DecodeError as e:
            bad.append((lineno, f"not JSON ({str(e)[:60]})"))
            continue
        if not isinstance(obj, dict):
            bad.append((lineno, "not a JSON object"))
            continue
        yield lineno, obj
