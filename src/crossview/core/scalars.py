"""A command-line or config value as the scalar it spells (flag values, --metadata pairs)."""

from __future__ import annotations


def scalar_of(text: str, booleans: bool = False) -> int | float | bool | str:
    """`"8"` → 8, `"0.9"` → 0.9, `"true"` → True when `booleans`, anything else as given."""
    if booleans and text.lower() in ("true", "false"):
        return text.lower() == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text
