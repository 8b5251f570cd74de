"""GPU activity of an nsys export → gpu_ops: kernels, memcpy, memset, synchronization.

Names follow Kineto's so captures compare across sources: kernels by their demangled name,
copies as `Memcpy HtoD (Pageable -> Device)`, memsets as `Memset (Device)`. A GPU op links to
the runtime/driver call that launched it by correlationId *within its process* (CUPTI numbers
correlations per process: two processes in one capture reuse ids); when several host calls of a
process share one id, the outermost wins. Kernels replayed by a CUDA graph carry a
graphNodeId; they are `via_graph`, as are ops whose launch call is a graph launch.

Memory: the staged tables hold integers only; names (kernel names run to kilobytes) are joined
once, by a view, straight into gpu_ops; families are classified per distinct name id.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from crossview.kernels import families as kernel_families
from crossview.sources.nsys import enums, fetch, kernel_insert, launch_link
from crossview.sources.nsys import prefetch as prefetch_
from crossview.sources.nsys.schema_probe import KERNEL, MEMCPY, MEMSET, SYNC, Probe
from crossview.store.store import ROW_GROUP_ROWS, Store

_GPID = launch_link.PID_BITS.replace("gtid", "gpid")
_STREAM = f"CASE WHEN stream = {enums.NO_STREAM} THEN NULL ELSE stream END"
_STAGED = ("_nsys_k", "_nsys_cp", "_nsys_ms", "_nsys_sy")
_TABLE = dict(zip(("k", "c", "m", "y"), _STAGED, strict=True))  # by the aliases of stage()
# GPU ops per gpu_ops insert (each batch compressed before the next): whole row groups
INSERT_ROWS = 2 * ROW_GROUP_ROWS
# kernels inserted from numpy with dictionary strings (kernel_insert.py); off: the SQL insert
# (tests compare the two)
KERNELS_FROM_ARRAYS = True


@dataclass
class GpuCounts:
    kernels: int = 0
    memcpy: int = 0
    memset: int = 0
    sync: int = 0
    # per staged table: (SELECT of its gpu_ops columns, table alias, first op number); the
    # insert batches filter each on its alias's rowid, which DuckDB pushes into the scan
    parts: list[tuple[str, str, int]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.kernels + self.memcpy + self.memset + self.sync


def _common(p: Probe, table: str) -> dict[str, str]:
    return {"s": "start", "e": "end", "dev": "deviceId", "stream": "streamId",
            "corr": "correlationId", "gpid": p.col(table, "globalPid") or "NULL",
            "gnode": p.col(table, "graphNodeId") or "NULL"}


def _kernel_ints(p: Probe) -> dict[str, str]:
    ints = _common(p, KERNEL)
    names = [c for c in ("demangledName", "name", "shortName", "mangledName")
             if p.col(KERNEL, c)]
    ints["nm"] = (f"coalesce({', '.join(names)})" if len(names) > 1
                  else names[0] if names else "NULL")
    # launch geometry packed into two integers in SQLite (a third of the values to move
    # through Python): gridX 31 bits, gridY/Z 16; blockX/Y/Z 16 bits, registers 15
    col = {k: p.col(KERNEL, k) or "NULL" for k in (
        "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ", "registersPerThread")}
    ints["grid"] = (f"({col['gridX']} & 2147483647) | (({col['gridY']} & 65535) << 31)"
                    f" | (({col['gridZ']} & 65535) << 47)")
    ints["blk"] = (f"({col['blockX']} & 65535) | (({col['blockY']} & 65535) << 16)"
                   f" | (({col['blockZ']} & 65535) << 32)"
                   f" | (({col['registersPerThread']} & 32767) << 48)")
    return ints


def prefetch(path: Path, src: sqlite3.Connection, store: Store, p: Probe
             ) -> prefetch_.Prefetch | None:
    """Start fetching the kernel table on a second thread (sources/nsys/prefetch.py) for
    `stage` to take; None when it is not done that way here."""
    if not p.has(KERNEL):
        return None
    return prefetch_.start(path, src, store, KERNEL, "_nsys_k", _kernel_ints(p))


def stage(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, p: Probe,
          prefetched: prefetch_.Prefetch | None = None) -> GpuCounts:
    """Stage every GPU op (integers) and define the launch keys view `_nsys_gpukeys`; needs
    `_nsys_str`. `prefetched`: the kernel table's fetch started by `prefetch`."""
    c = GpuCounts()
    parts = c.parts

    def base(alias: str, offset: int) -> str:
        return (f"{offset} + {alias}.rowid AS rid, {_STREAM} AS stream, {alias}.s, {alias}.e,"
                f" corr, {_GPID} AS pid, gnode, dev")

    if p.has(KERNEL):
        c.kernels = fetch.stage(src, duck, KERNEL, "_nsys_k", _kernel_ints(p),
                                prefetched=prefetched.take(duck) if prefetched else None)
        _families(duck)
        parts.append((
            f"SELECT 'kernel' AS kind, f.name, f.family, {base('k', 0)},"
            " NULL::BIGINT AS bytes, NULL::VARCHAR AS copy_kind, NULL::VARCHAR AS mem_kinds,"
            " q.grid_s AS grid, q.block_s AS block, (k.blk >> 48) & 32767 AS regs"
            " FROM _nsys_k k LEFT JOIN _nsys_kfam f ON f.nm IS NOT DISTINCT FROM k.nm"
            " LEFT JOIN _nsys_kgeom q ON q.grid IS NOT DISTINCT FROM k.grid"
            " AND q.blk IS NOT DISTINCT FROM k.blk", "k", 0))
    nulls = ("NULL::VARCHAR AS grid, NULL::VARCHAR AS block, NULL::BIGINT AS regs")
    if p.has(MEMCPY):
        ints = _common(p, MEMCPY)
        ints.update(bytes="bytes", ck="copyKind", sk=p.col(MEMCPY, "srcKind") or "NULL",
                    dk=p.col(MEMCPY, "dstKind") or "NULL")
        c.memcpy = fetch.stage(src, duck, MEMCPY, "_nsys_cp", ints)
        ck = enums.case_sql("ck", enums.COPY_KIND)
        mk = (f"{enums.case_sql('sk', enums.MEM_KIND)} || ' -> ' || "
              f"{enums.case_sql('dk', enums.MEM_KIND)}")
        parts.append((
            f"SELECT 'memcpy' AS kind, 'Memcpy ' || {ck} || ' (' || {mk} || ')' AS name,"
            f" 'memory' AS family, {base('c', c.kernels)}, bytes, {ck} AS copy_kind,"
            f" {mk} AS mem_kinds, {nulls} FROM _nsys_cp c", "c", c.kernels))
    if p.has(MEMSET):
        ints = _common(p, MEMSET)
        ints.update(bytes="bytes", mk=p.col(MEMSET, "memKind") or "NULL")
        c.memset = fetch.stage(src, duck, MEMSET, "_nsys_ms", ints)
        mk = enums.case_sql("mk", enums.MEM_KIND)
        parts.append((
            f"SELECT 'memset' AS kind, 'Memset (' || {mk} || ')' AS name, 'memory' AS family,"
            f" {base('m', c.kernels + c.memcpy)}, bytes, NULL::VARCHAR AS copy_kind,"
            f" {mk} AS mem_kinds, {nulls} FROM _nsys_ms m", "m", c.kernels + c.memcpy))
    if p.has(SYNC):
        ints = _common(p, SYNC)
        ints["st"] = p.col(SYNC, "syncType", "deprecatedSyncType") or "NULL"
        c.sync = fetch.stage(src, duck, SYNC, "_nsys_sy", ints)
        parts.append((
            f"SELECT 'sync' AS kind, {enums.case_sql('st', enums.SYNC_TYPE, 'Unknown sync')}"
            f" AS name, 'sync' AS family, {base('y', c.kernels + c.memcpy + c.memset)},"
            " NULL::BIGINT AS bytes, NULL::VARCHAR AS copy_kind, NULL::VARCHAR AS mem_kinds,"
            f" {nulls} FROM _nsys_sy y", "y", c.kernels + c.memcpy + c.memset))
    if parts:
        # the launch link's keys only: a view of every op with its name and geometry joined
        # in cost 0.10 s for 1 M kernels, this 0.03 s
        duck.execute("CREATE OR REPLACE TEMP VIEW _nsys_gpukeys AS " + " UNION ALL ".join(
            f"SELECT {first} + {alias}.rowid AS rid, {alias}.corr, {_GPID} AS pid"
            f" FROM {_TABLE[alias]} {alias}" for _, alias, first in parts))
    return c


def _geometries(duck: duckdb.DuckDBPyConnection) -> None:
    """`_nsys_kgeom(grid, blk, grid_s, block_s)`: the launch geometry as text ('[x,y,z]'),
    written once per distinct packed (grid, block) rather than once per kernel."""
    duck.execute(
        "CREATE OR REPLACE TEMP TABLE _nsys_kgeom AS SELECT grid, blk,"
        " '[' || (grid & 2147483647) || ',' || ((grid >> 31) & 65535) || ','"
        " || ((grid >> 47) & 65535) || ']' AS grid_s,"
        " '[' || (blk & 65535) || ',' || ((blk >> 16) & 65535) || ','"
        " || ((blk >> 32) & 65535) || ']' AS block_s"
        " FROM (SELECT DISTINCT grid, blk FROM _nsys_k)")


def _families(duck: duckdb.DuckDBPyConnection) -> None:
    """`_nsys_kfam(nm, name, family)`: one row per distinct kernel name id."""
    rows = duck.execute(
        "SELECT k.nm, coalesce(n.value, '(name id ' || k.nm || ')', '')"
        " FROM (SELECT DISTINCT nm FROM _nsys_k) k LEFT JOIN _nsys_str n ON n.id = k.nm"
    ).fetchall()
    names = [r[1] for r in rows]
    duck.register("_kfam_src", pa.table({
        "nm": pa.array([r[0] for r in rows], pa.int64()), "name": pa.array(names, pa.string()),
        "family": pa.array(kernel_families.classify_many(names), pa.string())}))
    duck.execute("CREATE OR REPLACE TEMP TABLE _nsys_kfam AS SELECT * FROM _kfam_src")
    duck.unregister("_kfam_src")


def ingest(store: Store, artifact_id: int, counts: GpuCounts,
           launches: launch_link.Launches | None) -> None:
    """The staged GPU ops (`GpuCounts.parts`) → gpu_ops, linked to host_ops by (process,
    correlationId).

    In batches of INSERT_ROWS ops, each compressed (`store.compact`) before the next: rows
    appended to a compressed store stay as written (every kernel's name in full) until a
    checkpoint, so one insert of 5 M kernels held ~2 GB of names at once. Kernels (op numbers
    0 … kernels-1) go in from numpy with dictionary strings (kernel_insert.py) unless
    `KERNELS_FROM_ARRAYS` is off; the other ops, and kernels then, by the SQL below."""
    con = store.con
    gpu_base = store.reserve_ops(counts.total + 1)
    # the launch link once, as integers in op order: each batch below joins only its slice
    launch_link.link(con, "_nsys_gpukeys", launches)
    first_sql = counts.kernels if KERNELS_FROM_ARRAYS and counts.kernels else 0
    if counts.kernels and not first_sql:
        _geometries(con)  # the SQL insert's kernel geometry texts (kernel_insert makes its own)
    if first_sql:
        names = kernel_insert.Names(con)
        for lo in range(0, first_sql, INSERT_ROWS):
            kernel_insert.insert(store, artifact_id, gpu_base, names, lo,
                                 min(lo + INSERT_ROWS, first_sql))
            store.compact()
    for lo in range(first_sql, counts.total, INSERT_ROWS):
        con.execute(
            f"""
            INSERT INTO gpu_ops (artifact_id, gpu_op_id, device, stream, kind, name, family,
                start_ns, dur_ns, correlation, launch_op_id, via_graph, bytes, copy_kind,
                mem_kinds, grid, block, regs)
            SELECT $a, {gpu_base} + g.rid, CAST(g.dev AS INTEGER), g.stream, g.kind, g.name,
                   g.family, g.s, greatest(coalesce(g.e - g.s, 0), 0), g.corr, l.op_id,
                   coalesce(l.graph, false) OR coalesce(g.gnode, 0) <> 0,
                   g.bytes, g.copy_kind, g.mem_kinds, g.grid, g.block, CAST(g.regs AS INTEGER)
            FROM ({_slice(counts.parts, lo, lo + INSERT_ROWS)}) g
            LEFT JOIN (SELECT * FROM _nsys_link WHERE rid >= $lo AND rid < $hi) l
                ON l.rid = g.rid
            WHERE g.s IS NOT NULL
            """,
            {"a": artifact_id, "lo": lo, "hi": lo + INSERT_ROWS},
        )
        store.compact()
    drop(con)


def _slice(parts: list[tuple[str, str, int]], lo: int, hi: int) -> str:
    """The GPU ops numbered lo … hi-1, each staged table filtered on its own rowid (a filter
    on the view's computed `rid` would scan every staged row for every batch); tables with
    no op in the range are left out (the kernels' part, inserted from numpy, then never
    needs the SQL path's `_nsys_kgeom`)."""
    ends = [first for _, _, first in parts[1:]] + [hi]
    return " UNION ALL ".join(  # only the staged tables that hold ops of lo … hi-1
        f"{sql} WHERE {alias}.rowid >= {lo - first} AND {alias}.rowid < {hi - first}"
        for (sql, alias, first), end in zip(parts, ends, strict=True) if first < hi and end > lo)


def drop(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("DROP VIEW IF EXISTS _nsys_gpukeys")
    for t in (*_STAGED, "_nsys_kfam", "_nsys_kgeom", "_nsys_launch", "_nsys_link"):
        con.execute(f"DROP TABLE IF EXISTS {t}")
