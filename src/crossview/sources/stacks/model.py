"""A sampled-stack profile as read from one file, before it is interned into the store."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# weights as recorded → ns; "samples" (a count) has no time of its own
TIME_UNITS_NS: dict[str, float] = {
    "ns": 1.0, "nanoseconds": 1.0, "nanosecond": 1.0,
    "us": 1e3, "µs": 1e3, "microseconds": 1e3, "microsecond": 1e3,
    "ms": 1e6, "milliseconds": 1e6, "millisecond": 1e6,
    "s": 1e9, "seconds": 1e9, "second": 1e9,
}

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zµ]+)\s*$", re.IGNORECASE)


def duration_ns(text: str) -> int | None:
    """'10ms', '100 us', '0.01s' → ns; None when the text is no duration."""
    m = _DURATION.match(text)
    if not m or m.group(2).lower() not in TIME_UNITS_NS:
        return None
    return round(float(m.group(1)) * TIME_UNITS_NS[m.group(2).lower()])


# the view names crossview's own exports give their profiles / root frames (export/)
EXPORT_VIEWS = {"GPU view": "gpu", "CPU view": "cpu", "CPU view (sampled)": "cpu"}


def python_file(file: object) -> bool:
    """A source file of Python code (frozen importlib modules included), by its name."""
    return isinstance(file, str) and (file.endswith(".py") or file.startswith("<frozen"))


@dataclass(frozen=True)
class Stack:
    frames: tuple[str, ...]  # root (outermost) → leaf (innermost)
    weight_ns: int  # time this stack stands for; 0 when the file gives no time
    count: int  # samples under this stack (1 per line/sample unless the file says more)
    pid: str | None = None
    tid: str | None = None
    view: str | None = None  # "cpu" | "gpu" when the file says so for this stack


@dataclass
class Profile:
    stacks: list[Stack]
    unit: str  # what the file's weights were, in words (for notes): "samples", "µs", …
    view: str | None = None  # "cpu" | "gpu" when the file states it; None: decided by leaves
    notes: list[str] = field(default_factory=list)
    # frame kinds the reader knows (python / native / kernel); others inferred from the name
    kinds: dict[str, str] = field(default_factory=dict)
    # read in part (a last line cut short, …): the artifact's status is "partial"
    partial: list[str] = field(default_factory=list)
