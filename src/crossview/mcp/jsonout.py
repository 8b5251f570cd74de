"""Compact JSON text for tool results (msgspec: fast on big trees; odd values as text)."""

from __future__ import annotations

from typing import Any

import msgspec

from crossview.core import inert


def _utf8(obj: Any) -> Any:
    """`obj` with every string made encodable: a non-UTF-8 file name (held as surrogate
    escapes) is shown with backslash escapes, as the CLI shows it (issue 18)."""
    if isinstance(obj, str):
        return obj.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(obj, dict):
        return {_utf8(k): _utf8(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_utf8(v) for v in obj]
    return obj


def dumps(obj: Any) -> str:
    """JSON text with no raw control, bidi or zero-width character in it (msgspec leaves
    all but C0 raw): each written as its `\\uXXXX` escape, the same value once decoded, so a
    name cannot reorder or hide text where an agent's transcript is shown (core/inert.py)."""
    try:
        text = msgspec.json.encode(obj, enc_hook=str).decode()
    except UnicodeEncodeError:  # rare: walk the document only then
        text = msgspec.json.encode(_utf8(obj), enc_hook=str).decode()
    return inert.text(text)
