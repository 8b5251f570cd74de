"""The store's standard library: named, documented SQL views over the normalized tables.

One `.sql` file per concept in this folder (kernels, kernel launches with their calls, the
host op tree, idle gaps, collectives, copies, device counters, serving metrics, ops with
shapes): a header comment (a summary, then `-- columns:` and one `-- name  unit  doc` line
per column, in the view's order) and one SELECT. `ensure` creates them on a store once, with
a marker view naming the store schema version and the files' digest, so a store made by other
code gets them replaced and a store that has them pays one catalog lookup.

A view whose header names its row source (`-- scope: gpu_ops` or `-- scope: host_ops`) has a
filtered form, `f_<name>`: the same SELECT with that source read from the filter's slice
(`f_gpu` / `f_host`, scope/resolve.py) and every other table as stored, so a launch call or a
parent outside the slice is still named. `ensure_filtered` defers them as temp views on the
connection that resolved the filter (decision 0905), each made when a statement first names
it, and the named views with them (decision 0847). Code outside store/ and views/ reads
these names, never the tables (tests/test_named_views_only.py).

`computed/` documents relations in the same form that are not SQL over the tables: crossview's
steps and its time account's idle causes, which the analysis computes (numpy, rules in
knowledge/) and MCP `query` provides (mcp/relations.py). The catalog lists both, so agents
and the generated reference (docs/views.md) read one vocabulary.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

import duckdb

from crossview.store.schema import STORE_SCHEMA_VERSION
from crossview.store.store import Store

MARKER = "stdlib_version"  # the view saying which stdlib a store holds
_COLUMN = re.compile(r"^-- (\w+)\s+(\S+)\s+(.+)$")
_SCOPE = re.compile(r"^-- scope: (\w+)$")
# the tables the filter slices, and the slice of each (scope/resolve.py defines them)
SLICES = {"gpu_ops": "f_gpu", "host_ops": "f_host"}
FILTERED_PREFIX = "f_"
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
    scope: str | None = None  # the row source the filter slices (gpu_ops | host_ops)

    @property
    def filtered_name(self) -> str | None:
        return FILTERED_PREFIX + self.name if self.scope else None

    def filtered_body(self) -> str:
        """The SELECT with its row source read from the filter's slice (joins unchanged)."""
        assert self.scope is not None
        return re.sub(rf"\bFROM\s+{self.scope}\b", f"FROM {SLICES[self.scope]}", self.body)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "summary": self.summary,
                "provided_by": "analysis (MCP query)" if self.computed else "store view",
                "filtered_form": self.filtered_name,
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
    scope = None
    for line in lines[:head]:
        if (sm := _SCOPE.match(line)) and not in_cols:
            if sm.group(1) not in SLICES:
                raise ValueError(f"{name}.sql: scope {sm.group(1)!r} is not one of "
                                 f"{sorted(SLICES)}")
            scope = sm.group(1)
        elif line.strip() == "-- columns:":
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
    if scope and not re.search(rf"\bFROM\s+{scope}\b", body):
        raise ValueError(f"{name}.sql: scope {scope} but no `FROM {scope}` in its SELECT")
    return ViewDoc(name, " ".join(s for s in summary if s), tuple(Column(*c) for c in cols),
                   body, computed, scope)


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


# table macros over the slices: the rows of f_host / f_gpu that start inside given steps
# (parallel lists: artifact ids, starts, ends in ns; scope/step_detect.in_steps makes them)
STEP_MACROS = {
    f"{FILTERED_PREFIX}{rel[2:]}_in_steps": (
        f"SELECT x.* FROM {rel} x JOIN (SELECT unnest(a) AS a, unnest(s) AS s, unnest(e) AS e)"
        " w ON x.artifact_id = w.a AND x.start_ns >= w.s AND x.start_ns < w.e")
    for rel in SLICES.values()
}


def filtered() -> tuple[ViewDoc, ...]:
    """The views with a filtered form."""
    return tuple(v for v in views() if v.scope)


def ensure_filtered(store: Store) -> None:
    """The filtered forms (`f_kernels`, …) as temp views of this connection, and the named
    views, each made when a statement first names it (`Store.defer`; decision 0847): they
    name `f_gpu` / `f_host`, which must exist (scope/resolve.py calls this right after
    defining them). A view binds its names when queried, so a filter resolved again (the
    slices replaced) needs no new forms. Creating all 23 cost 25-35 ms of every analysis;
    a first analyze of a Kineto capture names two or three."""
    if store.filtered_forms:
        return
    for v in filtered():
        name = str(v.filtered_name)
        store.defer([name], _statement(store, f"CREATE OR REPLACE TEMP VIEW {name} AS "
                                              f"{v.filtered_body()}"))
    for name, body in STEP_MACROS.items():
        store.defer([name], _statement(
            store, f"CREATE OR REPLACE TEMP MACRO {name}(a, s, e) AS TABLE {body}"))
    # a view of the database as `ensure` makes it (under its lock: connections of one store
    # share the catalog); the marker names them all, so naming it runs `ensure` itself
    for v in views():
        store.defer([v.name], _statement(store, f"CREATE OR REPLACE VIEW {v.name} AS {v.body}",
                                         shared=True))
    store.defer([MARKER], _all_views(store))
    store.filtered_forms = True


def _statement(store: Store, sql: str, shared: bool = False) -> Callable[[], None]:
    def run() -> None:
        if shared:
            with _LOCK:
                store.con.execute(sql)
        else:
            store.con.execute(sql)
    return run


def _all_views(store: Store) -> Callable[[], None]:
    def run() -> None:
        ensure(store)
    return run
