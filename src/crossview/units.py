"""How crossview writes a quantity for people: always with its unit."""

from __future__ import annotations


def duration(ns: int | float) -> str:
    """Nanoseconds as a duration in the largest fitting unit (s, ms, µs)."""
    if abs(ns) >= 1e9:
        return f"{ns / 1e9:,.3f} s"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:,.2f} ms"
    return f"{ns / 1e3:,.1f} µs"
