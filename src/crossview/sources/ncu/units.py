"""ncu numbers and units → plain floats in SI base units.

ncu prints values in the user's locale ("13,485", "9,495.42", de-DE "9.495,42") and scales
units to fit ("us", "Mbyte", "Gbyte/s", "Ghz", older "usecond", "cycle/nsecond"). Everything
crossview stores is normalized here: durations in ns, sizes in byte, rates per second,
frequencies in hz. Units it does not know are kept as printed, value unscaled.
"""

from __future__ import annotations

import math
import re

# SI prefixes ncu uses (decimal; "Kibyte"-style binary prefixes handled separately)
_SI = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
# count-like base units ncu may auto-scale with an SI prefix
_COUNTS = ("byte", "inst", "cycle", "sector", "request", "warp", "thread", "op", "flop")
_TIME_NS = {"ns": 1.0, "nsecond": 1.0, "us": 1e3, "usecond": 1e3, "µs": 1e3, "μs": 1e3,
            "ms": 1e6, "msecond": 1e6, "s": 1e9, "sec": 1e9, "second": 1e9}
_PER_SECOND = {k: 1e9 / v for k, v in _TIME_NS.items()}  # "/us" → ×1e6 per second
_FREQ = re.compile(r"^([KkMGT]?)hz$", re.IGNORECASE)
_COUNT = re.compile(r"^(Ki|Mi|Gi|Ti|[KkMGTP]?)(" + "|".join(_COUNTS) + r")s?$")
_MISSING = {"", "n/a", "na", "nan", "-", "--", "(not available)", "n/a (n/a)"}


def parse_number(text: str | None) -> float | None:
    """A localized ncu number as a float; None for n/a or text that is not a number.

    Separators: with both ',' and '.', the later one is the decimal mark; with only ','
    it is a thousands separator when every group after it has 3 digits (en-US "13,485"),
    else the decimal mark ("0,5"). Spaces and non-breaking spaces group thousands.
    """
    if text is None:
        return None
    s = text.strip().replace("\u00a0", "").replace("\u202f", "").replace(" ", "")
    if s.lower() in _MISSING:
        return None
    if "," in s and "." in s:
        if s.rfind(",") > s.rfind("."):
            s = s.replace(".", "").replace(",", ".")
        else:
            s = s.replace(",", "")
    elif "," in s:
        groups = s.lstrip("+-").split(",")
        if len(groups) > 1 and all(len(g) == 3 and g.isdigit() for g in groups[1:]) \
                and groups[0].isdigit():
            s = s.replace(",", "")
        elif len(groups) == 2:
            s = s.replace(",", ".")
        else:
            return None
    try:
        v = float(s)
    except ValueError:
        return None
    return v if math.isfinite(v) else None  # "inf", "1e999": not a measurement


def _scale(unit: str) -> tuple[float, str] | None:
    """(factor, base unit) for one unit without '/', or None if not a scalable unit."""
    if unit in _TIME_NS:
        return _TIME_NS[unit], "ns"
    m = _FREQ.match(unit)
    if m:
        return _SI[m.group(1)], "hz"
    m = _COUNT.match(unit)
    if m:
        prefix, base = m.groups()
        return (_BIN[prefix] if prefix in _BIN else _SI[prefix]), base
    return None


def normalize(value: float | None, unit: str | None) -> tuple[float | None, str]:
    """(value in base units, base unit name). '%' and unknown units pass through."""
    u = (unit or "").strip()
    if not u or u == "%":
        return value, u
    if "/" in u:
        num, _, den = u.partition("/")
        if num == "cycle" and den in _PER_SECOND:  # older ncu prints frequencies so
            return _times(value, _PER_SECOND[den]), "hz"
        ns = _scale(num)
        if ns and den in _PER_SECOND:
            return _times(value, ns[0] * _PER_SECOND[den]), f"{ns[1]}/s"
        if ns:
            return _times(value, ns[0]), f"{ns[1]}/{den}"
        return value, u
    sc = _scale(u)
    if sc is None:
        return value, u
    return _times(value, sc[0]), sc[1]


def _times(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor
