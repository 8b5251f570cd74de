"""Compact JSON text for tool results (msgspec: fast on big trees; odd values as text)."""

from __future__ import annotations

from typing import Any

import msgspec


def dumps(obj: Any) -> str:
    return msgspec.json.encode(obj, enc_hook=str).decode()
