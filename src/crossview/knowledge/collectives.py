"""Collective type of a communication kernel (collectives.yaml): args first, then the name."""

from __future__ import annotations

import re
from functools import cache

from crossview.knowledge.loader import load_yaml


@cache
def _rules() -> tuple[tuple[re.Pattern[str], str | None], ...]:
    return tuple((re.compile(r["pattern"], re.IGNORECASE), r.get("type"))
                 for r in load_yaml("collectives.yaml"))


def normalize(name: str) -> str:
    """`all_gather`, `AllGather`, `allgather` → `allgather`: one spelling to align ranks by."""
    return name.replace("_", "").replace(" ", "").lower()


def collective_type(recorded: str | None, kernel_name: str) -> str:
    if recorded:
        return normalize(recorded)
    for rx, fixed in _rules():
        m = rx.search(kernel_name)
        if m:
            return fixed or normalize(m.group(1) if m.groups() else m.group(0))
    return kernel_name
