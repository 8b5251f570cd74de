"""Kernel rows of an nsys export → gpu_ops straight from numpy, strings as Arrow dictionaries.

The SQL insert of `gpu.ingest` joins every staged kernel to its name/family (`_nsys_kfam`), its
geometry text (`_nsys_kgeom`) and its launch (`_nsys_link`) and copies a ~300-byte name per row
through the query (1 M kernels: ~0.18 s per 245,760-row batch, as much as the checkpoint that
compresses it). Here a batch's integer columns come out of `_nsys_k` as Arrow, the names,
families and geometry texts go in as dictionary arrays over their distinct values (DuckDB reads
them without a per-row lookup, as in decision 0680), the launch by binary search in the
batch's slice of `_nsys_link`. Same rows, same order (tests/test_nsys_kernel_insert.py).
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from crossview.sources.dict_strings import dict_strings
from crossview.sources.nsys import enums
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]
_COLS = "rowid AS rid, s, e, dev, stream, corr, gnode, nm, grid, blk"


class Names:
    """`_nsys_kfam` (nm → name, family) as sorted ids and their string lists; the NULL id's
    row (if any) apart."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        rows = con.execute("SELECT nm, name, family FROM _nsys_kfam ORDER BY nm NULLS LAST"
                           ).fetchall()
        ids = [r[0] for r in rows if r[0] is not None]
        self.ids: I64 = np.asarray(ids, dtype=np.int64)
        self.names = pa.array([r[1] for r in rows], pa.string())
        self.families = pa.array([r[2] for r in rows], pa.string())
        # the NULL id's dictionary slot (the SQL join matches it IS NOT DISTINCT FROM)
        self.null_at = len(ids) if len(rows) > len(ids) else -1

    def index(self, nm: pa.Array) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.bool_]]:
        """Dictionary index per kernel and the mask of kernels with no kfam row (NULL)."""
        vals, null = ints(nm)
        at = np.searchsorted(self.ids, vals).clip(0, max(len(self.ids) - 1, 0))
        hit = (self.ids[at] == vals) if len(self.ids) else np.zeros(len(vals), np.bool_)
        idx = at.astype(np.int32)
        if self.null_at >= 0:
            idx[null] = self.null_at
            hit |= null
        else:  # a NULL id read as 0 is not id 0
            hit &= ~null
        return idx, ~hit


def insert(store: Store, artifact_id: int, gpu_base: int, names: Names, lo: int, hi: int
           ) -> None:
    """gpu_ops ← the kernels of op numbers lo … hi-1 (their `_nsys_k` rowids)."""
    con = store.con
    k = con.sql(f"SELECT {_COLS} FROM _nsys_k WHERE rowid >= {lo} AND rowid < {hi}"
                " AND s IS NOT NULL").to_arrow_table().combine_chunks()
    link = con.sql(f"SELECT rid, op_id, graph FROM _nsys_link WHERE rid >= {lo}"
                   f" AND rid < {hi}").to_arrow_table().combine_chunks()
    k, link = _by_rid(k, "rid"), _by_rid(link, "rid")
    n = k.num_rows
    rid, _ = ints(k.column("rid"))
    s, _ = ints(k.column("s"))
    e, e_null = ints(k.column("e"))
    dur = np.where(e_null, 0, np.maximum(e - s, 0))
    stream, stream_null = ints(k.column("stream"))
    gnode, _ = ints(k.column("gnode"))  # NULL read as 0, as coalesce(gnode, 0)
    # the launch: _nsys_link holds at most one row per GPU op, in rid order
    lrid, _ = ints(link.column("rid"))
    at = np.searchsorted(lrid, rid).clip(0, max(len(lrid) - 1, 0))
    linked = (lrid[at] == rid) if len(lrid) else np.zeros(n, np.bool_)
    op_id, op_null = ints(link.column("op_id"))
    graph = np.asarray(link.column("graph").fill_null(False).to_numpy(zero_copy_only=False),
                       dtype=np.bool_)
    if len(lrid):
        launch, launch_null = op_id[at], ~linked | op_null[at]
        via = (linked & graph[at]) | (gnode != 0)
    else:
        launch, launch_null = np.zeros(n, np.int64), np.ones(n, np.bool_)
        via = gnode != 0
    name_idx, name_null = names.index(k.column("nm"))
    blk, blk_null = ints(k.column("blk"))
    store.append("gpu_ops", pa.table({
        "artifact_id": pa.array(np.full(n, artifact_id, dtype=np.int32)),
        "gpu_op_id": pa.array(gpu_base + rid, pa.int64()),
        "device": k.column("dev").cast(pa.int32()),
        "stream": pa.array(stream, pa.int64(), mask=stream_null | (stream == enums.NO_STREAM)),
        "kind": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)),
                                               pa.array(["kernel"], pa.string())),
        "name": dict_strings(name_idx, names.names, name_null),
        "family": dict_strings(name_idx, names.families, name_null),
        "start_ns": pa.array(s, pa.int64()),
        "dur_ns": pa.array(dur, pa.int64()),
        "correlation": k.column("corr"),
        "launch_op_id": pa.array(launch, pa.int64(), mask=launch_null),
        "via_graph": pa.array(via, pa.bool_()),
        "grid": _geometry(k.column("grid"), _grid_text),
        "block": _geometry(k.column("blk"), _block_text),
        "regs": pa.array((blk >> 48) & 32767, pa.int32(), mask=blk_null),
    }))


def _by_rid(t: pa.Table, col: str) -> pa.Table:
    """`t` in `col` order: a scan of one table hands rows out in rowid order (DuckDB's
    preserve_insertion_order), so this sorts only if that ever stops holding."""
    v, _ = ints(t.column(col))
    return t.take(np.argsort(v, kind="stable")) if np.any(np.diff(v) < 0) else t


def ints(col: pa.ChunkedArray | pa.Array) -> tuple[I64, npt.NDArray[np.bool_]]:
    """An int64 column as numpy with NULL read as 0, and its NULL mask."""
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if arr.null_count == 0:  # no mask to build, no copy to fill
        return (np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.int64),
                np.zeros(len(arr), np.bool_))
    null = np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
    vals = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
    return vals, null


def _geometry(col: pa.ChunkedArray, text: Callable[[int], str]) -> pa.DictionaryArray:
    """The texts of a packed geometry column as a dictionary over its distinct values (a
    hash pass, no sort); NULL stays NULL."""
    enc = col.combine_chunks().dictionary_encode()
    return pa.DictionaryArray.from_arrays(
        enc.indices, pa.array([text(v) for v in enc.dictionary.to_pylist()], pa.string()))


def _grid_text(g: int) -> str:
    """`gpu._geometries`' grid text: gridX 31 bits, gridY/Z 16."""
    return f"[{g & 2147483647},{(g >> 31) & 65535},{(g >> 47) & 65535}]"


def _block_text(b: int) -> str:
    """`gpu._geometries`' block text: blockX/Y/Z 16 bits each."""
    return f"[{b & 65535},{(b >> 16) & 65535},{(b >> 32) & 65535}]"
