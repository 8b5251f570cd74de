"""The nsys host events held in numpy: nested, linked and inserted into host_ops from arrays.

Up to `nsys_host_in_memory_rows` host events (host.py), the rows DuckDB sorted for `_host`
are read once into numpy (straight from the sort: no `_host` table unless backtraces need
it). The nesting then keeps its results as arrays
(`nesting_batches.nest_in_memory`, the same batches as `nest_batches`), the launch calls are
found from them (`launch_link.stage_arrays`), and host_ops is appended as one Arrow table
with pid, tid, kind and name as dictionaries over the thread and label lists: no `_nestres`
table, no re-read of `_host` for the launches, no SQL join back of every row (1 M API calls:
the join was ~0.5 s of the read). The rows equal the batch path's
(tests/test_nsys_host_arrays.py; docs/decisions/0731-nsys-host-ops-from-arrays.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.sources.nesting_batches import Nested, append_host_ops
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class HostCols:
    """`_host`'s columns in its row order (correlation: 0 where `no_corr`)."""

    thread: I64
    label: I64
    gtid: I64
    start: I64
    dur: I64
    corr: I64
    no_corr: npt.NDArray[np.bool_]


def read(con: duckdb.DuckDBPyConnection, rows: str) -> HostCols:
    """The sorted host events of query `rows` (thread, label, gtid, start_ns, dur_ns,
    correlation, …) as numpy, in the query's order."""
    t = con.sql(rows).to_arrow_table()
    corr = t.column("correlation").combine_chunks()
    no_corr = np.asarray(corr.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
    return HostCols(_ints(t.column("thread")), _ints(t.column("label")),
                    _ints(t.column("gtid")), _ints(t.column("start_ns")),
                    _ints(t.column("dur_ns")), _ints(corr.fill_null(0)), no_corr)


def insert(store: Store, artifact_id: int, op_base: int, c: HostCols, nested: Nested,
           canon: I64, thread_gtids: list[int], label_rows: list[tuple[str, str]]) -> None:
    """host_ops ← the sorted columns and their nesting: the rows `insert_host_ops` makes from
    `_host` and `_nestres` with host.py's PID_SQL / TID_SQL (`thread_gtids`: the gtid of each
    thread number; `label_rows`: (kind, name) of each label number)."""
    append_host_ops(store, artifact_id, op_base, c, nested, canon,
                    [str((g >> 24) & 16777215) for g in thread_gtids],
                    [str(g & 16777215) for g in thread_gtids], label_rows)


def _ints(col: pa.ChunkedArray | pa.Array) -> I64:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64)
