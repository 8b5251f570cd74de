"""GPU activity of an nsys export → gpu_ops: kernels, memcpy, memset, synchronization.

Names follow Kineto's so captures compare across sources: kernels by their demangled name,
copies as `Memcpy HtoD (Pageable -> Device)`, memsets as `Memset (Device)`. A GPU op links to
the runtime/driver call that launched it by correlationId *within its process* (CUPTI numbers
correlations per process: two processes in one capture reuse ids); when several host calls of a
process share one id, the outermost wins. Kernels replayed by a CUDA graph carry a
graphNodeId; they are `via_graph`, as are ops whose launch call is a graph launch.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from crossview.knowledge import api_roles, kernel_families
from crossview.sources.nsys import enums, fetch
from crossview.sources.nsys.schema_probe import KERNEL, MEMCPY, MEMSET, SYNC, Probe
from crossview.store.store import Store

_GPID = "CAST((gpid >> 24) & 16777215 AS VARCHAR)"
_STREAM = f"CASE WHEN stream = {enums.NO_STREAM} THEN NULL ELSE stream END"


@dataclass
class GpuCounts:
    kernels: int = 0
    memcpy: int = 0
    memset: int = 0
    sync: int = 0


def _common(p: Probe, table: str) -> dict[str, str]:
    return {"s": "start", "e": "end", "dev": "deviceId", "stream": "streamId",
            "corr": "correlationId", "gpid": p.col(table, "globalPid") or "NULL",
            "gnode": p.col(table, "graphNodeId") or "NULL"}


_NULLS = ("NULL::BIGINT AS bytes, NULL::VARCHAR AS copy_kind, NULL::VARCHAR AS mem_kinds,"
          " NULL::VARCHAR AS grid, NULL::VARCHAR AS block, NULL::BIGINT AS regs")


def stage(src: sqlite3.Connection, duck: duckdb.DuckDBPyConnection, p: Probe) -> GpuCounts:
    """Stage every GPU op into temp table `_nsys_gpu`; needs `_nsys_str`."""
    c = GpuCounts()
    parts: list[str] = []
    base = f"{_STREAM} AS stream, s, e, corr, {_GPID} AS pid, gnode, dev"
    if p.has(KERNEL):
        ints = _common(p, KERNEL)
        ints["nm"] = p.col(KERNEL, "demangledName", "name", "shortName", "mangledName") or "NULL"
        ints["short"] = p.col(KERNEL, "shortName") or "NULL"
        for k, col in (("gx", "gridX"), ("gy", "gridY"), ("gz", "gridZ"), ("bx", "blockX"),
                       ("bly", "blockY"), ("bz", "blockZ"), ("regs", "registersPerThread")):
            ints[k] = p.col(KERNEL, col) or "NULL"
        c.kernels = fetch.stage(src, duck, KERNEL, "_nsys_k", ints)
        grid = "'[' || k.gx || ',' || k.gy || ',' || k.gz || ']'"
        block = "'[' || k.bx || ',' || k.bly || ',' || k.bz || ']'"
        parts.append(
            f"SELECT 'kernel' AS kind, coalesce(n.value, sn.value, '(name id ' || k.nm || ')')"
            f" AS name, {base.replace('s, e', 'k.s, k.e')}, NULL::BIGINT AS bytes,"
            f" NULL::VARCHAR AS copy_kind, NULL::VARCHAR AS mem_kinds, {grid} AS grid,"
            f" {block} AS block, k.regs FROM _nsys_k k LEFT JOIN _nsys_str n ON n.id = k.nm"
            " LEFT JOIN _nsys_str sn ON sn.id = k.short")
    if p.has(MEMCPY):
        ints = _common(p, MEMCPY)
        ints.update(bytes="bytes", ck="copyKind", sk=p.col(MEMCPY, "srcKind") or "NULL",
                    dk=p.col(MEMCPY, "dstKind") or "NULL")
        c.memcpy = fetch.stage(src, duck, MEMCPY, "_nsys_cp", ints)
        ck = enums.case_sql("ck", enums.COPY_KIND)
        mk = (f"{enums.case_sql('sk', enums.MEM_KIND)} || ' -> ' || "
              f"{enums.case_sql('dk', enums.MEM_KIND)}")
        parts.append(
            f"SELECT 'memcpy' AS kind, 'Memcpy ' || {ck} || ' (' || {mk} || ')' AS name,"
            f" {base}, bytes, {ck} AS copy_kind, {mk} AS mem_kinds, NULL::VARCHAR AS grid,"
            " NULL::VARCHAR AS block, NULL::BIGINT AS regs FROM _nsys_cp")
    if p.has(MEMSET):
        ints = _common(p, MEMSET)
        ints.update(bytes="bytes", mk=p.col(MEMSET, "memKind") or "NULL")
        c.memset = fetch.stage(src, duck, MEMSET, "_nsys_ms", ints)
        mk = enums.case_sql("mk", enums.MEM_KIND)
        parts.append(f"SELECT 'memset' AS kind, 'Memset (' || {mk} || ')' AS name, {base},"
                     f" bytes, NULL::VARCHAR AS copy_kind, {mk} AS mem_kinds,"
                     " NULL::VARCHAR AS grid, NULL::VARCHAR AS block, NULL::BIGINT AS regs"
                     " FROM _nsys_ms")
    if p.has(SYNC):
        ints = _common(p, SYNC)
        ints["st"] = p.col(SYNC, "syncType", "deprecatedSyncType") or "NULL"
        c.sync = fetch.stage(src, duck, SYNC, "_nsys_sy", ints)
        parts.append(f"SELECT 'sync' AS kind,"
                     f" {enums.case_sql('st', enums.SYNC_TYPE, 'Unknown sync')} AS name,"
                     f" {base}, {_NULLS} FROM _nsys_sy")
    if not parts:
        return c
    duck.execute("CREATE OR REPLACE TEMP TABLE _nsys_gpu AS " + " UNION ALL ".join(parts))
    for t in ("_nsys_k", "_nsys_cp", "_nsys_ms", "_nsys_sy"):
        duck.execute(f"DROP TABLE IF EXISTS {t}")
    return c


def ingest(store: Store, artifact_id: int) -> None:
    """`_nsys_gpu` → gpu_ops, linked to host_ops by (process, correlationId)."""
    con = store.con
    names = [r[0] for r in con.execute(
        "SELECT DISTINCT name FROM _nsys_gpu WHERE kind = 'kernel'").fetchall()]
    con.register("_families", pa.table({
        "fname": pa.array(names, pa.string()),
        "family": pa.array(kernel_families.classify_many(names), pa.string())}))
    n = con.execute("SELECT count(*) FROM _nsys_gpu").fetchall()[0][0]
    gpu_base = store.reserve_ops(n + 1)
    con.execute(
        f"""
        INSERT INTO gpu_ops (artifact_id, gpu_op_id, device, stream, kind, name, family,
            start_ns, dur_ns, correlation, launch_op_id, via_graph, bytes, copy_kind, mem_kinds,
            grid, block, regs)
        WITH launch AS (
            SELECT pid, correlation, first(op_id ORDER BY depth, op_id) AS op_id,
                   bool_or(name IN (SELECT unnest($graph))) AS graph
            FROM host_ops
            WHERE artifact_id = $a AND kind = 'runtime' AND correlation IS NOT NULL
            GROUP BY pid, correlation
        ), g AS (SELECT {gpu_base} + rowid AS gpu_op_id, * FROM _nsys_gpu)
        SELECT $a, g.gpu_op_id, CAST(g.dev AS INTEGER), g.stream, g.kind, g.name,
               CASE WHEN g.kind = 'kernel' THEN f.family WHEN g.kind = 'sync' THEN 'sync'
                    ELSE 'memory' END,
               g.s, greatest(coalesce(g.e - g.s, 0), 0), g.corr, l.op_id,
               coalesce(l.graph, false) OR coalesce(g.gnode, 0) <> 0,
               g.bytes, g.copy_kind, g.mem_kinds, g.grid, g.block, CAST(g.regs AS INTEGER)
        FROM g
        LEFT JOIN _families f ON f.fname = g.name
        LEFT JOIN launch l ON l.correlation = g.corr AND l.pid = g.pid
        WHERE g.s IS NOT NULL
        """,
        {"a": artifact_id, "graph": api_roles.names_with_role("graph_launch")},
    )
    con.unregister("_families")
    con.execute("DROP TABLE _nsys_gpu")
