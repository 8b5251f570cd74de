"""The source tables behind a finding's evidence text, per artifact kind (evidence_tables.yaml)."""

from __future__ import annotations

import re
from functools import cache

from crossview.knowledge.loader import load_yaml


@cache
def _rules(kind: str) -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    table = load_yaml("evidence_tables.yaml").get(kind) or []
    return tuple((re.compile(r["match"], re.IGNORECASE), tuple(r["tables"])) for r in table)


def cite(kind: str | None, what: str) -> str:
    """" [tables: A, B]" for a kind with source tables, else ""."""
    if not kind:
        return ""
    out: list[str] = []
    for pat, tables in _rules(kind):
        if pat.search(what):
            out.extend(t for t in tables if t not in out)
    return f" [tables: {', '.join(out)}]" if out else ""
