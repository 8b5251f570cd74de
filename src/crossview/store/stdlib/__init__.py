"""The store's standard library: named, documented SQL views over the normalized tables.

One `.sql` file per concept in this folder (kernels, kernel launches with their calls, the
host op tree, idle gaps, collectives, copies, device counters, serving metrics, ops with
shapes): a header comment (a summary, then `-- columns:` and one `-- name  unit  doc` line
per column, in the view's order) and one SELECT. `ensure` creates them on a store once, with
a marker view naming the store schema version and the files' digest, so a store made by other
code gets them replaced and a store that has them pays one catalog lookup.

`computed/` documents relations in the same form that are not SQL over the tables: crossview's
steps and its time account's idle causes, which the analysis computes (numpy, rules in
knowledge/) and MCP `query` provides (mcp/relations.py). The catalog lists both, so agents
and the generated reference (docs/views.md) read one vocabulary.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources

import duckdb

from crossview.store.schema import STORE_SCHEMA_VERSION
from crossview.store.store import Store

MARKER = "stdlib_version"  # the view saying which stdlib a store holds
_COLUMN = re.compile(r"^-- (\w+)\s+(\S+)\s+(.+)$")
_MORE = re.compile(r"^--\s{2,}(\S.*)$")
_LOCK = threading.Lock()  # two connections of one store creating the views at once


@dataclass(frozen=True)
class Column:
    name: str
    unit: str  # ns | bytes | bytes/s | count | index | id | text | bool | json | value
    doc: str


@dataclass(frozen=True)
class ViewDoc:
    name: str
    summary: str
    columns: tuple[Column, ...]
    body: str  # the SELECT; "" for a computed relation
    computed: bool  # provided by the analysis (MCP query), not a view of the store

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "summary": self.summary,
                "provided_by": "analysis (MCP query)" if self.computed else "store view",
                "columns": [{"name": c.name, "unit": c.unit, "doc": c.doc}
                            for c in self.columns]}


MARKER_DOC = ViewDoc(MARKER, "Which standard library the store holds: created last by "
                     "`ensure`, replaced with every view when either number changes.",
                     (Column("store_schema_version", "count",
                             "store/schema.py STORE_SCHEMA_VERSION the views were made for"),
                      Column("stdlib_digest", "text",
                             "sha256 of the view files (first 16 hex digits)")), "", False)


def parse(name: str, text: str, computed: bool) -> ViewDoc:
    """A view file: header comment (summary, `-- columns:`, column lines), then the SELECT."""
    lines = text.splitlines()
    head = 0
    while head < len(lines) and lines[head].startswith("--"):
        head += 1
    summary: list[str] = []
    cols: list[list[str]] = []
    in_cols = False
    for line in lines[:head]:
        if line.strip() == "-- columns:":
            in_cols = True
        elif not in_cols:
            summary.append(line[2:].strip())
        elif m := _COLUMN.match(line):
            cols.append([m.group(1), m.group(2), m.group(3).strip()])
        elif (m2 := _MORE.match(line)) and cols:
            cols[-1][2] += " " + m2.group(1).strip()
        else:
            raise ValueError(f"{name}.sql: column line not `-- name  unit  doc`: {line!r}")
    body = "\n".join(lines[head:]).strip()
    if not cols or bool(body) == computed:
        raise ValueError(f"{name}.sql: needs columns and " +
                         ("no SELECT (computed)" if computed else "a SELECT"))
    return ViewDoc(name, " ".join(s for s in summary if s), tuple(Column(*c) for c in cols),
                   body, computed)


@cache
def catalog() -> tuple[ViewDoc, ...]:
    """Every view and computed relation, by name, then the marker view."""
    root = resources.files(__package__)
    out = []
    for folder, computed in ((root, False), (root / "computed", True)):
        for f in sorted(folder.iterdir(), key=lambda p: p.name):
            if f.name.endswith(".sql"):
                out.append(parse(f.name[:-4], f.read_text("utf-8"), computed))
    return (*sorted(out, key=lambda v: v.name), MARKER_DOC)


def views() -> tuple[ViewDoc, ...]:
    """The SQL views `ensure` creates (the marker aside)."""
    return tuple(v for v in catalog() if v.body)


def doc(name: str) -> ViewDoc:
    return next(v for v in catalog() if v.name == name)


@cache
def digest() -> str:
    h = hashlib.sha256()
    for v in views():
        h.update(f"{v.name}\n{v.body}\n".encode())
    return h.hexdigest()[:16]


def _held(con: duckdb.DuckDBPyConnection) -> tuple[int, str] | None:
    try:
        rows = con.execute(f"SELECT store_schema_version, stdlib_digest FROM {MARKER}"
                           ).fetchall()
    except duckdb.CatalogException:
        return None
    return (int(rows[0][0]), str(rows[0][1])) if rows else None


def ensure(store: Store) -> bool:
    """Create (or replace, when made for another schema or other files) the views on the
    store's database; True when this call created them. Views cost no rows: each runs its
    SELECT when queried."""
    want = (STORE_SCHEMA_VERSION, digest())
    if _held(store.con) == want:
        return False
    with _LOCK:
        if _held(store.con) == want:
            return False
        for v in views():
            store.con.execute(f"CREATE OR REPLACE VIEW {v.name} AS {v.body}")
        store.con.execute(f"CREATE OR REPLACE VIEW {MARKER} AS SELECT "
                          f"{int(want[0])} AS store_schema_version, '{want[1]}' AS "
                          "stdlib_digest")
    return True
