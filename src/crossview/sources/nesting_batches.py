"""Host-event nesting in bounded memory, shared by the Kineto and Nsight Systems readers.

Both readers stage one DuckDB table `_host` sorted (thread, start, longest first) with integer
columns thread, start_ns, dur_ns, label. `nest_batches` streams it in batches cut where no
event is open (`kineto.host_chunks`; or takes such batches from the caller, who holds the
columns already), nests each batch in numpy, lets the reader intern the
batch's call paths (its `paths` callback returns a provisional node id per event, usually from
a `kineto.node_table.NodeTable`) and appends the results to the DuckDB table `_nestres` before
the next batch is read, so numpy never holds more than one batch. `insert_host_ops` then joins
`_host` and `_nestres` by position in SQL (`nest_in_memory`: the same batches, results kept
as arrays for a caller that inserts host_ops itself). Results do not depend on the batch size
(tests/test_host_chunks.py, tests/test_nsys_batches.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.sources import guard
from crossview.sources.dict_strings import dict_strings
from crossview.sources.kineto.host_chunks import Chunk, iter_chunks
from crossview.sources.kineto.nesting import Nesting, nest
from crossview.store.store import Store, cursor_of

I64 = npt.NDArray[np.int64]
# (batch, its nesting) → provisional node id per event of the batch
Paths = Callable[[Chunk, Nesting], I64]


def nest_batches(store: Store, op_base: int, n: int, batch_rows: int, paths: Paths) -> None:
    """Fill `_nestres` (depth, parent op id, provisional node id, self time) from `_host`'s
    n rows, read one batch of about `batch_rows` rows at a time (a caller that holds the
    columns already uses `nest_in_memory`)."""
    con = store.con
    con.execute(f"CREATE OR REPLACE TABLE {store.scratch('_nestres')} (depth INTEGER,"
                " parent BIGINT, node_id BIGINT, self_ns BIGINT)")
    done = 0
    reader = cursor_of(con)  # its own cursor: results are written on `con` while it streams
    try:
        for ch in iter_chunks(reader, batch_rows):
            r = _nest_chunk(ch, op_base, paths)
            store.append("_nestres", pa.table({
                "depth": pa.array(r.depth),
                "parent": pa.array(r.parent, mask=r.parent < 0),
                "node_id": pa.array(r.node_id, pa.int64()),
                "self_ns": pa.array(r.self_ns),
            }))
            done += len(ch)
    finally:
        reader.close()
    if done != n:
        raise RuntimeError(f"host nesting saw {done} of {n} rows")


@dataclass(frozen=True)
class Nested:
    """`_nestres`'s columns in `_host`'s row order (parent: an op id, −1 for a root;
    node_id: provisional)."""
    depth: npt.NDArray[np.int32]
    parent: I64
    node_id: I64
    self_ns: I64


class SortedHost(Protocol):
    """A reader's sorted host columns in `_host`'s row order (correlation: any value where
    `no_corr`): Kineto's host_table.Sorted, nsys's host_arrays.HostCols (frozen: read-only)."""
    @property
    def thread(self) -> I64: ...
    @property
    def label(self) -> I64: ...
    @property
    def start(self) -> I64: ...
    @property
    def dur(self) -> I64: ...
    @property
    def corr(self) -> I64: ...
    @property
    def no_corr(self) -> npt.NDArray[np.bool_]: ...


def append_host_ops(store: Store, artifact_id: int, op_base: int, c: SortedHost,
                    nested: Nested, canon: I64, pids: list[str], tids: list[str],
                    labels: list[tuple[str, str]]) -> None:
    """host_ops ← sorted columns and their nesting, straight from numpy: the rows
    `insert_host_ops` makes from `_host` and `_nestres`, strings as Arrow dictionaries over
    the thread (pids, tids) and label ((kind, name)) lists — no per-row list lookup."""
    n = len(c.start)
    node = canon[nested.node_id] if n else nested.node_id
    store.append("host_ops", pa.table({
        "artifact_id": pa.array(np.full(n, artifact_id, dtype=np.int32)),
        "op_id": pa.array(np.arange(op_base, op_base + n, dtype=np.int64)),
        "pid": dict_strings(c.thread, pids),
        "tid": dict_strings(c.thread, tids),
        "kind": dict_strings(c.label, [k for k, _ in labels]),
        "name": dict_strings(c.label, [nm for _, nm in labels]),
        "start_ns": pa.array(c.start, pa.int64()),
        "dur_ns": pa.array(c.dur, pa.int64()),
        "depth": pa.array(nested.depth, pa.int32()),
        "parent": pa.array(nested.parent, pa.int64(), mask=nested.parent < 0),
        "correlation": pa.array(c.corr, pa.int64(), mask=c.no_corr),
        "node_id": pa.array(node, pa.int64()),
        "self_ns": pa.array(nested.self_ns, pa.int64()),
    }))


def nest_in_memory(op_base: int, n: int, paths: Paths, chunks: Iterable[Chunk]) -> Nested:
    """`nest_batches` for a caller that holds all of `_host`'s columns already (Kineto's
    numpy path): the same batches and results, kept as arrays instead of written to
    `_nestres` (the caller inserts host_ops straight from them, docs/decisions/0680)."""
    parts = [_nest_chunk(ch, op_base, paths) for ch in chunks]
    if sum(len(p.depth) for p in parts) != n:
        raise RuntimeError(f"host nesting saw {sum(len(p.depth) for p in parts)} of {n} rows")
    if not parts:
        e = np.zeros(0, dtype=np.int64)
        return Nested(e.astype(np.int32), e, e, e)
    return Nested(*(np.concatenate([getattr(p, k) for p in parts])
                    for k in ("depth", "parent", "node_id", "self_ns")))


class TooDeep(Exception):
    """Host events nest deeper than a call stack may (input_limits.yaml max_stack_depth): the
    reader refuses the file alone — its call paths, and every tree built over them, cost
    time per level (20,000 events sharing one start and duration nest 20,000 deep)."""

    def __init__(self, depth: int, cap: int) -> None:
        super().__init__(f"host events nest {depth:,} levels deep, past the {cap:,} a call "
                         "stack may hold (input_limits.yaml max_stack_depth; many events with "
                         "one start and duration nest inside each other): refused")


def _nest_chunk(ch: Chunk, op_base: int, paths: Paths) -> Nested:
    nested = nest(ch.thread, ch.start, ch.dur)
    if len(nested.depth) and (deepest := int(nested.depth.max())) >= _max_depth():
        raise TooDeep(deepest + 1, _max_depth())
    prov = np.asarray(paths(ch, nested), dtype=np.int64)
    parent = np.where(nested.parent >= 0, nested.parent + (op_base + ch.offset), -1)
    return Nested(nested.depth, parent, prov, nested.self_ns)


def _max_depth() -> int:
    return int(guard.limit("max_stack_depth"))


def insert_host_ops(store: Store, artifact_id: int, op_base: int, pid_sql: str, tid_sql: str,
                    canon: I64, labels: str | None = None, batch_rows: int | None = None,
                    kind_sql: str = "h.kind", name_sql: str = "h.name",
                    params: dict[str, Any] | None = None) -> None:
    """host_ops ← `_host` POSITIONAL JOIN `_nestres`; drops `_nestres`. `pid_sql`/`tid_sql`
    (and `kind_sql`/`name_sql`) are expressions over `_host` alias h, with `params` as their
    query parameters (Kineto: list lookups by thread and label id, which keep row order where a
    join would not); `canon` maps provisional → final node ids.
    `labels`: a table (label, kind, name) the names come from, by `_host.label`, when `_host`
    carries no strings (nsys). `batch_rows`: insert that many rows at a time, each batch
    compressed (`store.compact`) before the next, so a compressed store never holds more than
    one batch's names uncompressed."""
    kind, name, join = kind_sql, name_sql, ""
    if labels:
        kind, name, join = "l.kind", "l.name", f" JOIN {labels} l ON l.label = h.label"
    n = int(store.con.execute("SELECT count(*) FROM _host").fetchall()[0][0])
    step = batch_rows or max(n, 1)
    # provisional → final node ids by a list lookup (a join would not keep row order)
    for lo in range(0, max(n, 1), step):
        # both sides cut on their own rowid (pushed into the scans; the same rows by position)
        rng = f" WHERE rowid >= {lo} AND rowid < {lo + step}" if step < n else ""
        store.con.execute(
            f"""
            INSERT INTO host_ops (artifact_id, op_id, pid, tid, kind, name, start_ns, dur_ns,
                                  depth, parent, correlation, node_id, self_ns)
            SELECT {artifact_id}, {op_base} + h.rid, {pid_sql}, {tid_sql}, {kind}, {name},
                   h.start_ns, h.dur_ns, r.depth, r.parent, h.correlation,
                   $canon[r.node_id + 1], r.self_ns
            FROM (SELECT rowid AS rid, * FROM _host{rng}) h
            POSITIONAL JOIN (SELECT * FROM _nestres{rng}) r{join}
            """,
            {**(params or {}), "canon": canon.tolist()},
        )
        if step < n:
            store.compact()
    store.con.execute("DROP TABLE _nestres")
