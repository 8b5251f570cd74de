"""The columns of a normalized table (store/schema.py TABLES) as (name, type) pairs."""

from __future__ import annotations

from functools import cache

from crossview.store.schema import TABLES


@cache
def columns(table: str) -> tuple[tuple[str, str], ...]:
    # specs are "name TYPE" separated by commas; no type in TABLES holds a comma
    out = []
    for spec in TABLES[table].replace("\n", " ").split(","):
        if spec.strip():
            name, typ = spec.strip().split(None, 1)
            out.append((name, typ.strip()))
    return tuple(out)
