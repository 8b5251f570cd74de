"""How crossview writes a quantity for people: always with its unit."""

from __future__ import annotations


def duration(ns: int | float) -> str:
    """Nanoseconds as a duration in the largest fitting unit (s, ms, µs)."""
    if abs(ns) >= 1e9:
        return f"{ns / 1e9:,.3f} s"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:,.2f} ms"
    return f"{ns / 1e3:,.1f} µs"


def _si(x: float, unit: str) -> str:
    """A value in decimal SI steps (k, M, G, T, P) with 3 significant digits."""
    for step, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= step:
            return f"{x / step:,.3g} {prefix}{unit}"
    return f"{x:,.3g} {unit}"


def size(nbytes: float) -> str:
    """Bytes in decimal units (MB = 10^6 B, as ncu and datasheets count)."""
    return _si(nbytes, "B")


def bandwidth(bytes_per_s: float) -> str:
    return _si(bytes_per_s, "B/s")


def flop_rate(flop_per_s: float) -> str:
    return _si(flop_per_s, "FLOP/s")
