"""The idle-cause table (account.yaml): causes in precedence order, how each is matched."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from crossview.knowledge import api_roles
from crossview.knowledge.loader import load_yaml


@dataclass(frozen=True)
class Cause:
    id: str
    label: str
    frames: str  # matched | calling | innermost | none: which host frame the cause names
    names: frozenset[str]  # exact host-op names (API calls) that match
    regex: tuple[re.Pattern[str], ...]  # host-op names that match (any)
    kinds: frozenset[str]  # any host op of these kinds matches (the catch-all)

    def matches(self, name: str) -> bool:
        """`name` matches one of the patterns: one search of their alternation."""
        return _any_of(self.regex).search(name) is not None


@dataclass(frozen=True)
class AccountRules:
    causes: tuple[Cause, ...]
    startup_causes: frozenset[str]
    top_gaps: int
    gap_calls: int
    queue_empty_launch_share: float
    queued_latency_ns: int
    recap_min_share: float
    top_frames: int
    startup_frame_min_ns: int
    gap_cause_min_share: float

    def rank(self, cause_id: str) -> int:
        return next(i for i, c in enumerate(self.causes) if c.id == cause_id)


def _frames_yaml(key: str) -> list[str]:
    return list(load_yaml("frames.yaml")[key])


def _cause(d: dict[str, object], allocator: frozenset[str]) -> Cause:
    m = d.get("match") or {}
    assert isinstance(m, dict)
    names: set[str] = set(m.get("names") or [])
    pats: list[str] = list(m.get("regex") or [])
    if "frames_yaml" in m:
        pats += _frames_yaml(str(m["frames_yaml"]))
    roles = m.get("api_role") or []
    for r in [roles] if isinstance(roles, str) else roles:
        names |= set(api_roles.names_with_role(r))
    if m.get("except_names_of") == "allocator":
        names -= allocator
    return Cause(str(d["id"]), str(d["label"]), str(d.get("frames", "none")),
                 frozenset(names), tuple(re.compile(p) for p in pats),
                 frozenset(m.get("kinds") or []))


@cache
def rules() -> AccountRules:
    d = load_yaml("account.yaml")
    alloc = next(c for c in d["causes"] if c["id"] == "allocator")
    allocator = frozenset(alloc["match"]["names"])
    causes = tuple(_cause(c, allocator) for c in d["causes"])
    return AccountRules(causes, frozenset(d["startup_causes"]), int(d["top_gaps"]),
                        int(d["gap_calls"]), float(d["queue_empty_launch_share"]),
                        int(d["queued_latency_ns"]), float(d["recap_min_share"]),
                        int(d["top_frames"]), int(d["startup_frame_min_ns"]),
                        float(d["gap_cause_min_share"]))


_LEADING_FLAGS = re.compile(r"^\(\?([imsx]+)\)")


@cache
def _any_of(patterns: tuple[re.Pattern[str], ...]) -> re.Pattern[str]:
    """One pattern matching where any of `patterns` does: each as a group, a leading inline
    flag group scoped to it (`(?i)x` → `(?i:x)`); never matches when there are none."""
    if not patterns:
        return re.compile(r"(?!)")
    parts = []
    for p in patterns:
        m = _LEADING_FLAGS.match(p.pattern)
        parts.append(f"(?{m.group(1)}:{p.pattern[m.end():]})" if m else f"(?:{p.pattern})")
    return re.compile("|".join(parts))


def classify(name: str, kind: str) -> int:
    """Rank (index in precedence order) of the first cause a host op matches; len(causes)
    when none does (an annotation with no cause of its own)."""
    rs = rules()
    base = api_roles.unversioned(name)
    for i, c in enumerate(rs.causes):
        if name in c.names or base in c.names or c.matches(name):
            return i
        if kind in c.kinds:
            return i
    return len(rs.causes)
