"""Host-event rows of `_host` in bounded batches, cut where no event is open.

`_host` is sorted (thread, start, longest first). A cut before row i loses no nesting when i
starts a new thread or when every earlier event of i's thread has ended by i's start (the
thread's stack is empty there): nothing after the cut can have a parent before it, and the
stack walk of `nesting._contain` starts empty there too. Batches are read from DuckDB as Arrow
record batches and cut at the last such point, so a batch holds about `batch_rows` rows; a
stretch with no cut point (one top-level event spanning the rest of a thread) is carried
whole into the next batch. When the caller already holds `_host`'s columns (host_table sorted
them in numpy), `split_chunks` cuts them by the same rule without reading DuckDB.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import duckdb
import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
_COLS = ("thread", "start_ns", "dur_ns", "label")


@dataclass(frozen=True)
class Chunk:
    offset: int  # rowid in `_host` of the first row
    thread: I64
    start: I64
    dur: I64
    label: I64

    def __len__(self) -> int:
        return len(self.start)


def cut_points(thread: I64, start: I64, dur: I64) -> I64:
    """Every i in [1, len−1] where rows [0, i) can be nested apart from [i, …), ascending.

    Rows before this buffer are already closed by its first start (the previous cut was
    valid), so only the buffer's own rows matter. One numpy pass per thread in the buffer
    (a handful: a trace has few host threads)."""
    n = len(start)
    if n < 2:
        return np.zeros(0, dtype=np.int64)
    bounds = [0, *(np.flatnonzero(thread[1:] != thread[:-1]) + 1).tolist(), n]
    out: list[I64] = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=False):
        if lo > 0:
            out.append(np.asarray([lo], dtype=np.int64))  # a new thread
        ends = np.maximum.accumulate(start[lo:hi] + dur[lo:hi])
        out.append(lo + 1 + np.flatnonzero(ends[:-1] <= start[lo + 1 : hi]))
    return np.concatenate(out)


def pick(points: I64, lo: int, limit: int) -> int:
    """The cut after row `lo`: the last point within `limit` rows, else the first beyond;
    0 when there is none."""
    i = int(np.searchsorted(points, lo + limit, side="right"))
    if i > 0 and points[i - 1] > lo:
        return int(points[i - 1])
    return int(points[i]) if i < len(points) else 0


def iter_chunks(cur: duckdb.DuckDBPyConnection, batch_rows: int) -> Iterator[Chunk]:
    """Chunks of `_host` in row order, each cut at a valid point (see module doc), of at
    most `batch_rows` rows unless one stretch without a cut point is longer.

    `cur` is a connection of its own: the caller writes results on another while this
    query streams."""
    rdr = cur.sql(f"SELECT rowid, {', '.join(_COLS)} FROM _host").to_arrow_reader(
        batch_rows)
    pending: list[list[I64]] = []
    rows = 0
    offset = 0
    need = batch_rows
    for batch in rdr:
        arrs = [batch.column(i).to_numpy() for i in range(5)]
        rid = arrs[0]
        # the nesting joins results back by position: a scan out of order would be a bug
        if len(rid) and (rid[0] != offset + rows or rid[-1] != offset + rows + len(rid) - 1):
            raise RuntimeError("_host rows streamed out of rowid order")
        pending.append(arrs[1:])
        rows += len(rid)
        if rows < need:
            continue
        cols = _concat(pending)
        points = cut_points(cols[0], cols[1], cols[2])
        lo = 0
        while rows - lo >= batch_rows and (cut := pick(points, lo, batch_rows)):
            yield Chunk(offset, *(c[lo:cut] for c in cols))
            offset += cut - lo
            lo = cut
        # no cut point in reach: read on, twice as far (amortizes the re-scans)
        need = batch_rows if lo else 2 * rows
        # copy the remainder so the yielded batches' memory can go
        pending = [[c[lo:].copy() for c in cols]] if lo else [cols]
        rows -= lo
    if rows:
        yield Chunk(offset, *_concat(pending))


def split_chunks(thread: I64, start: I64, dur: I64, label: I64, batch_rows: int
                 ) -> Iterator[Chunk]:
    """`iter_chunks` over columns already in memory (the whole of `_host`, in its order):
    the same cuts rule, no read back from DuckDB."""
    points = cut_points(thread, start, dur)
    n = len(start)
    lo = 0
    while n - lo >= batch_rows and (cut := pick(points, lo, batch_rows)):
        yield Chunk(lo, thread[lo:cut], start[lo:cut], dur[lo:cut], label[lo:cut])
        lo = cut
    if n - lo:
        yield Chunk(lo, thread[lo:], start[lo:], dur[lo:], label[lo:])


def _concat(parts: list[list[I64]]) -> list[I64]:
    if len(parts) == 1:
        return [np.asarray(c, dtype=np.int64) for c in parts[0]]
    return [np.concatenate([p[k] for p in parts]).astype(np.int64, copy=False)
            for k in range(len(_COLS))]
