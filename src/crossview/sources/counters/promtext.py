"""A tolerant parser of the Prometheus text exposition format (and OpenMetrics text).

One parser for dcgm-exporter and every serving engine. A malformed line is reported (line
number + reason) and skipped; the good lines are still read. A file may hold a series of
scrapes: each starts at a `# scrape_time <epoch seconds | ISO-8601>` marker line (our documented
capture loop, docs/input-formats.md), after an OpenMetrics `# EOF`, or — when neither is there —
where a series repeats. Per-sample timestamps (integer ms, or float seconds in OpenMetrics) are
honoured when present.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_SPECIAL = {"+inf": math.inf, "inf": math.inf, "-inf": -math.inf, "nan": math.nan}
_ESC = {"\\": "\\", '"': '"', "n": "\n"}
SCRAPE_MARK = "# scrape_time"


class LineError(ValueError):
    """Why one line is not a valid sample."""


@dataclass
class Sample:
    name: str
    labels: dict[str, str]
    value: float
    ts_ns: int | None  # per-sample or scrape timestamp
    scrape: int  # 0-based scrape index within the file
    line: int


@dataclass
class Parsed:
    samples: list[Sample] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)  # family name → TYPE
    bad: list[tuple[int, str]] = field(default_factory=list)
    scrapes: int = 0
    timed_scrapes: int = 0


def parse_float(text: str) -> float:
    special = _SPECIAL.get(text.lower())
    if special is not None:
        return special
    return float(text)  # raises ValueError


def epoch_ns(dt: datetime) -> int:
    """An aware datetime → epoch ns, exactly (no float rounding)."""
    delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def parse_time(text: str) -> int:
    """Epoch seconds (decimal) or ISO-8601 (naive = UTC) → epoch ns."""
    text = text.strip()
    try:
        return int(Decimal(text) * 1_000_000_000)
    except (InvalidOperation, ValueError, OverflowError):
        pass
    dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return epoch_ns(dt)


def _labels(text: str, i: int) -> tuple[dict[str, str], int]:
    """Parse `{a="x",b="y"}` starting at text[i] == '{'; returns (labels, index after '}')."""
    out: dict[str, str] = {}
    i += 1
    n = len(text)
    while True:
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == "}":
            return out, i + 1
        m = _LABEL_NAME.match(text, i)
        if not m:
            raise LineError(f"bad label name at column {i + 1}")
        key = m.group(0)
        i = m.end()
        while i < n and text[i] in " \t":
            i += 1
        if i + 1 >= n or text[i] != "=" or text[i + 1] != '"':
            raise LineError(f"label {key!r} lacks =\"value\"")
        i += 2
        buf: list[str] = []
        while True:
            if i >= n:
                raise LineError(f"label {key!r}: unterminated value")
            c = text[i]
            if c == "\\" and i + 1 < n:
                buf.append(_ESC.get(text[i + 1], "\\" + text[i + 1]))
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                buf.append(c)
                i += 1
        out[key] = "".join(buf)
        while i < n and text[i] in " \t":
            i += 1
        if i < n and text[i] == ",":
            i += 1
        elif i < n and text[i] == "}":
            return out, i + 1
        else:
            raise LineError(f"expected , or }} after label {key!r}")


# a whole `{…}` label block (quoted values may hold `}` and escapes); its parse is cached:
# a series of scrapes repeats the same label sets, so each distinct block is parsed once
_BLOCK = re.compile(r'\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\}')
_BLOCK_CACHE: dict[str, dict[str, str]] = {}


def parse_sample(text: str) -> tuple[str, dict[str, str], float, int | None]:
    """One sample line → (name, labels, value, timestamp ns or None)."""
    m = _NAME.match(text)
    if not m:
        raise LineError("not a metric name")
    name, i = m.group(0), m.end()
    labels: dict[str, str] = {}
    if i < len(text) and text[i] == "{":
        b = _BLOCK.match(text, i)
        block = b.group(0) if b else None
        cached = _BLOCK_CACHE.get(block) if block is not None else None
        if cached is not None and b is not None:
            labels, i = cached, b.end()
        else:
            labels, i = _labels(text, i)  # exact parse, with a precise error when malformed
            if b is not None and block is not None and i == b.end() \
                    and len(_BLOCK_CACHE) < 100_000:
                _BLOCK_CACHE[block] = labels
    rest = text[i:].split()
    if not rest or len(rest) > 2 or (i < len(text) and text[i] not in " \t"):
        raise LineError("expected `name{labels} value [timestamp]`")
    try:
        value = parse_float(rest[0])
    except ValueError:
        raise LineError(f"value {rest[0][:40]!r} is not a number") from None
    ts: int | None = None
    if len(rest) == 2:
        tok = rest[1]
        try:
            # text format: integer milliseconds; OpenMetrics: float seconds
            ts = int(tok) * 1_000_000 if tok.lstrip("-").isdigit() else round(float(tok) * 1e9)
        except (ValueError, OverflowError):
            raise LineError(f"timestamp {tok[:40]!r} is not a number") from None
    return name, labels, value, ts


def parse(text: str) -> Parsed:
    out = Parsed()
    scrape, scrape_ts = 0, None
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    started = False  # any sample in the current scrape yet
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            if line.startswith(SCRAPE_MARK):
                if started:
                    scrape, seen, started = scrape + 1, set(), False
                try:
                    scrape_ts = parse_time(line[len(SCRAPE_MARK):])
                    out.timed_scrapes += 1
                except ValueError:
                    scrape_ts = None
                    out.bad.append((lineno, "scrape_time is not epoch seconds or ISO-8601"))
            elif line == "# EOF":
                if started:
                    scrape, seen, started, scrape_ts = scrape + 1, set(), False, None
            else:
                parts = line.split(None, 3)
                if len(parts) >= 4 and parts[1] == "TYPE":
                    out.types[parts[2]] = parts[3].strip().lower()
            continue
        try:
            name, labels, value, ts = parse_sample(line)
        except LineError as e:
            out.bad.append((lineno, str(e)))
            continue
        key = (name, tuple(sorted(labels.items())))
        if key in seen and scrape_ts is None and ts is None:
            scrape, seen = scrape + 1, set()  # a repeated series: the next scrape began
        seen.add(key)
        started = True
        out.samples.append(Sample(name, labels, value, ts if ts is not None else scrape_ts,
                                  scrape, lineno))
    out.scrapes = scrape + 1 if started or out.samples else 0
    return out


def family_of(name: str, types: dict[str, str]) -> tuple[str, str]:
    """(family, part) for a sample name: part is the TYPE for a plain sample, or bucket / sum /
    count / created for a histogram or summary member, or `quantile` for a summary sample."""
    if name.endswith("_created"):  # prometheus_client's creation-time twin of a series
        base = name[: -len("_created")]
        if types.get(base) in ("counter", "histogram", "summary") or \
                types.get(base + "_total") == "counter":
            return base, "created"
    if name in types:
        t = types[name]
        return name, ("info" if t == "info" else t)
    for suffix in ("_bucket", "_sum", "_count", "_created", "_total"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            family_type = types.get(base)
            if family_type is None:
                continue
            t = family_type
            if suffix == "_total" and t == "counter":
                return base, "counter"
            if suffix == "_created":
                return base, "created"
            if t in ("histogram", "gaugehistogram", "summary"):
                return base, suffix[1:]
    if name.endswith("_bucket"):
        return name[: -len("_bucket")], "bucket"
    return name, "untyped"
