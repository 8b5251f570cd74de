"""Which runtime/driver call launched each GPU op of an nsys export, as integers.

A GPU op links to the call with the same correlationId *within its process* (CUPTI numbers
correlations per process); when several calls of a process share one id, the outermost wins,
then the first. `stage` keeps one row per (process, correlationId) in temp table
`_nsys_launch(pid, correlation, op_id, graph)` while the host events are still staged as
integers (`_host` beside its nesting `_nestres`), so no host_ops string (pid, kind, name) is
scanned or hashed again; `link` numbers the GPU side against it.
"""

from __future__ import annotations

import duckdb

from crossview.knowledge import api_roles

# 2^44: min(depth · 2^44 + op_id) picks the outermost launch call, then the first
_DEPTH_KEY = 17592186044416
PID_BITS = "((gtid >> 24) & 16777215)"  # the process of an nsys global thread/process id


def stage(con: duckdb.DuckDBPyConnection, op_base: int, labels: str) -> None:
    """`_nsys_launch` from `_host` (op id = op_base + rowid) and `_nestres` (depth); `labels`
    (label, kind, name) says which labels are runtime calls and which launch a graph."""
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _nsys_launch AS
        SELECT {PID_BITS.replace('gtid', 'h.gtid')} AS pid, h.correlation,
               min(CAST(r.depth AS BIGINT) * {_DEPTH_KEY} + {op_base} + h.rid)
                   % {_DEPTH_KEY} AS op_id,
               bool_or(l.graph) AS graph
        FROM (SELECT rowid AS rid, gtid, label, correlation FROM _host) h
        POSITIONAL JOIN _nestres r
        JOIN (SELECT label, name IN (SELECT unnest($graph)) AS graph FROM {labels}
              WHERE kind = 'runtime') l ON l.label = h.label
        WHERE h.correlation IS NOT NULL
        GROUP BY ALL
        """,
        {"graph": api_roles.names_with_role("graph_launch")},
    )


def link(con: duckdb.DuckDBPyConnection, gpu: str) -> None:
    """`_nsys_link(rid, op_id, graph)` in GPU op order, for the GPU ops of `gpu` (rid, corr,
    pid: the integer process id) that have a launch call; drops `_nsys_launch`."""
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _nsys_link AS SELECT g.rid, l.op_id, l.graph"
        f" FROM (SELECT rid, corr, pid FROM {gpu}) g"
        " JOIN _nsys_launch l ON l.correlation = g.corr AND l.pid = g.pid ORDER BY g.rid")
    con.execute("DROP TABLE _nsys_launch")

