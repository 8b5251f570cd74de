"""Named selections of host calls in scope, and the one place they become SQL.

Views and detectors say WHICH host calls they mean with a typed selection (runtime calls by
name, names matching a pattern, start-up work, calls that launched a GPU copy) and pass it down
with its data; `where()` compiles it to a condition on `f_host` (host_ops in the filter's
scope, built by scope/resolve.py; columns as store/schema.py `host_ops`). No SQL text travels
between modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crossview.store.store import Store


@dataclass(frozen=True)
class RuntimeCalls:
    """Runtime API calls (kind 'runtime') with one of these names."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class NamesMatching:
    """Host ops whose name contains `contains` (any case: a cheap filter first) and matches
    the regular expression `pattern`."""

    contains: str
    pattern: str


@dataclass(frozen=True)
class NameOrRuntime:
    """Host ops whose name matches `pattern` (tested once per distinct name, not per event),
    or runtime calls with one of `runtime_names`."""

    pattern: str
    runtime_names: tuple[str, ...]


@dataclass(frozen=True)
class CopyLaunches:
    """Host calls with one of `names` that launched a GPU op of `gpu_kind` (memcpy, memset),
    optionally not of copy kind `except_copy_kind` and only into memory of `mem_kinds`."""

    gpu_kind: str
    names: tuple[str, ...]
    except_copy_kind: str | None = None
    mem_kinds: tuple[str, ...] = ()


# a LIMIT that keeps every row: an optimizer fence (no filter is pushed below it)
NO_LIMIT = (1 << 63) - 1
HostSelection = RuntimeCalls | NamesMatching | NameOrRuntime | CopyLaunches
Sql = tuple[str, dict[str, object]]


def _launch_cond(sel: CopyLaunches) -> Sql:
    """The condition on `f_gpu g JOIN host_ops h` (launching call) for a CopyLaunches."""
    cond = "g.kind = $gpu_kind AND h.name IN (SELECT unnest($names))"
    params: dict[str, object] = {"gpu_kind": sel.gpu_kind, "names": list(sel.names)}
    if sel.except_copy_kind is not None:
        cond += " AND coalesce(g.copy_kind, '') <> $except_copy_kind"
        params["except_copy_kind"] = sel.except_copy_kind
    if sel.mem_kinds:
        cond += " AND g.mem_kinds IN (SELECT unnest($mem_kinds))"
        params["mem_kinds"] = list(sel.mem_kinds)
    return cond, params


def where(sel: HostSelection) -> Sql:
    """The selection as a condition on f_host and its parameters."""
    if isinstance(sel, RuntimeCalls):
        return ("kind = 'runtime' AND name IN (SELECT unnest($names))",
                {"names": list(sel.names)})
    if isinstance(sel, NamesMatching):
        # ILIKE first: a cheap filter before the regex on every host event name
        return ("name ILIKE $contains AND regexp_matches(name, $pattern)",
                {"contains": f"%{sel.contains}%", "pattern": sel.pattern})
    if isinstance(sel, NameOrRuntime):
        # the regex runs on the distinct names (thousands), not on every event (millions):
        # the LIMIT keeps DuckDB from pushing the regex filter below the DISTINCT into the
        # scan (1 M nsys host ops: 0.12 → 0.03 s)
        return ("name IN (SELECT name FROM (SELECT DISTINCT name FROM f_host LIMIT"
                f" {NO_LIMIT})"
                " WHERE regexp_matches(name, $pattern)) OR (kind = 'runtime' AND name IN"
                " (SELECT unnest($runtime_names)))",
                {"pattern": sel.pattern, "runtime_names": list(sel.runtime_names)})
    cond, params = _launch_cond(sel)
    return ("op_id IN (SELECT g.launch_op_id FROM f_gpu g JOIN host_ops h"
            f" ON h.op_id = g.launch_op_id WHERE {cond})", params)


def count_and_ns(store: Store, sel: HostSelection) -> tuple[int, int]:
    """(calls, host ns) of the selection in scope."""
    cond, params = where(sel)
    n, ns = store.sql(f"SELECT count(*), coalesce(sum(dur_ns), 0) FROM f_host WHERE {cond}",
                      params).fetchall()[0]
    return int(n), int(ns)


def names(store: Store, sel: HostSelection) -> list[str]:
    """The distinct names of the selected host calls in scope."""
    cond, params = where(sel)
    return [n for (n,) in store.sql(f"SELECT DISTINCT name FROM f_host WHERE {cond}",
                                    params).fetchall()]


def ns_by_name(store: Store, sel: HostSelection) -> list[tuple[str, int]]:
    """(name, summed host ns) of the selected calls in scope, most time first."""
    cond, params = where(sel)
    return [(n, int(t)) for n, t in store.sql(
        f"SELECT name, sum(dur_ns) FROM f_host WHERE {cond} GROUP BY name ORDER BY 2 DESC",
        params).fetchall()]


def ns_by_name_and_intervals(store: Store, sel: HostSelection
                             ) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """`ns_by_name` and the selected calls' columns start_ns, e (end), artifact_id (as
    fetchnumpy gives them) from one scan of f_host: the selected rows (few) are kept in a
    temp table and both read from it (1 M nsys host ops: 0.32 → 0.17 s)."""
    cond, params = where(sel)
    store.sql("CREATE OR REPLACE TEMP TABLE _host_sel AS SELECT name, dur_ns, start_ns,"
              f" start_ns + dur_ns AS e, artifact_id FROM f_host WHERE {cond}", params)
    try:
        rows = [(n, int(t)) for n, t in store.sql(
            "SELECT name, sum(dur_ns) FROM _host_sel GROUP BY name ORDER BY 2 DESC"
        ).fetchall()]
        cols = store.sql("SELECT start_ns, e, artifact_id FROM _host_sel").fetchnumpy()
    finally:
        store.sql("DROP TABLE IF EXISTS _host_sel")
    return rows, dict(cols)


def launched(store: Store, sel: CopyLaunches) -> list[tuple[str, str, str, int, int, int]]:
    """Per (launching call, copy kind, memory kinds): GPU ops, GPU ns and bytes, GPU ops in
    scope (f_gpu), most GPU time first."""
    cond, params = _launch_cond(sel)
    rows = store.sql(
        "SELECT h.name, coalesce(g.copy_kind, ''), coalesce(g.mem_kinds, ''), count(*),"
        " sum(g.dur_ns), coalesce(sum(g.bytes), 0) FROM f_gpu g"
        f" JOIN host_ops h ON h.op_id = g.launch_op_id WHERE {cond}"
        " GROUP BY ALL ORDER BY 5 DESC", params).fetchall()
    return [(a, ck, mk, int(n), int(t), int(b)) for a, ck, mk, n, t, b in rows]
