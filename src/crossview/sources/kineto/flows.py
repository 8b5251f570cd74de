"""Fallback link from a GPU op to its launch when the op has no correlation id: flow events.

The flow that ends at the op ('f' at its device/stream/ts) starts ('s', same id) at the
launching runtime call. Flows are parsed only when some GPU op needs them (most traces link by
correlation), from a fresh exact staging of the file.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import duckdb

from crossview.knowledge import api_roles
from crossview.sources.kineto import categories as C
from crossview.sources.kineto import staging
from crossview.store.store import Store


def link_by_flows(store: Store, artifact_id: int, path: Path, base_us: float) -> None:
    """Fallback link for GPU ops with no correlation id: the flow that ends at the op
    ('f', same pid/tid/ts) starts ('s', same id) at the launching runtime call. Flow events
    are parsed only when needed (most traces link by correlation)."""
    con = store.con
    tmpdir = tempfile.mkdtemp(prefix="crossview-")
    try:
        # exact: this rare path has no retry, and the fast locate may guess wrong when
        # metadata arrays follow traceEvents
        files = staging.stage(path, tmpdir, 1, exact=True, stream=False).files
        _read_flows(con, files)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    _apply_flows(store, artifact_id, base_us)


def _read_flows(con: duckdb.DuckDBPyConnection, files: list[str]) -> None:
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _flows AS SELECT * FROM read_json("
        f"$files, format='array', columns={C.FLOW_COLUMNS}, maximum_object_size=268435456,"
        f" ignore_errors=true) WHERE ph IN ('s', 'f') AND cat IN {C.FLOW_CATS_SQL}",
        {"files": files},
    )


def _apply_flows(store: Store, artifact_id: int, base_us: float) -> None:
    con = store.con
    ns = (f"CAST({int(base_us)} AS BIGINT) * 1000"
          f" + CAST(round((ts - {base_us!r}) * 1000) AS BIGINT)")
    con.execute(
        f"""
        UPDATE gpu_ops SET launch_op_id = link.op_id, via_graph = link.graph
        FROM (
            SELECT g.gpu_op_id, min(h.op_id) AS op_id,
                   bool_or(h.name IN (SELECT unnest($graph))) AS graph
            FROM gpu_ops g
            JOIN (SELECT *, {ns} AS ts_ns FROM _flows WHERE ph = 'f') f
                 ON f.ts_ns = g.start_ns
                 AND TRY_CAST(f.pid AS INTEGER) IS NOT DISTINCT FROM g.device
                 AND {C.STREAM_OF_TID.replace("(tid,", "(f.tid,")} IS NOT DISTINCT FROM g.stream
            JOIN (SELECT *, {ns} AS ts_ns FROM _flows WHERE ph = 's') s
                 ON s.id = f.id AND s.cat = f.cat
            JOIN host_ops h ON h.artifact_id = $a AND h.kind = 'runtime'
                 AND h.pid = s.pid AND h.tid = s.tid AND h.start_ns = s.ts_ns
            WHERE g.artifact_id = $a AND g.correlation IS NULL
            GROUP BY g.gpu_op_id
        ) link
        WHERE gpu_ops.gpu_op_id = link.gpu_op_id
        """,
        {"a": artifact_id, "graph": api_roles.names_with_role("graph_launch")},
    )
    con.execute("DROP TABLE _flows")
