"""One artifact's whole timeline as the replay (replay/graph*.py) reads it: its host ops by
thread then start and its GPU ops (kernels, copies, memsets) by start, as column arrays; the
artifact's size in rows; the thread a step starts on; the one artifact a recap replays. Not
the filter's scope: a replay needs every op the capture holds."""

from __future__ import annotations

import numpy as np

from crossview.store.store import Store


def op_count(store: Store, artifact_id: int) -> int:
    """host_ops + gpu_ops rows of the artifact: the size of its graph."""
    return int(store.sql(
        "SELECT (SELECT count(*) FROM host_ops WHERE artifact_id = $a) + "
        "(SELECT count(*) FROM gpu_ops WHERE artifact_id = $a)", {"a": artifact_id}
    ).fetchall()[0][0])


def host_rows(store: Store, aid: int) -> dict[str, np.ndarray]:
    """The artifact's host ops, by thread then start (the order the chains are cut in):
    pid, tid, op_id, rt (a runtime call), name, start_ns, e (end ns), depth (0 when
    unknown)."""
    cols = store.sql(
        "SELECT pid, tid, op_id, coalesce(kind = 'runtime', false) AS rt, name, start_ns,"
        " start_ns + dur_ns AS e,"
        " coalesce(depth, 0) AS depth FROM host_ops WHERE artifact_id = ? AND dur_ns >= 0"
        " ORDER BY pid, tid, start_ns", [aid]).fetchnumpy()
    return {k: np.asarray(v) for k, v in cols.items()}


def gpu_rows(store: Store, aid: int) -> dict[str, list]:
    """The artifact's GPU ops in start order (ties by id), as lists: gpu_op_id, lane
    ("S device/stream"), dev, kind, name, family, start_ns, dur_ns, launch_op_id, bytes,
    mem_kinds, via_graph."""
    cols = store.sql(
        "SELECT gpu_op_id, 'S ' || coalesce(device::VARCHAR, 'None') || '/' ||"
        " coalesce(stream::VARCHAR, 'None') AS lane,"
        " coalesce(device::VARCHAR, 'None') AS dev, kind, name, family, start_ns, dur_ns,"
        " launch_op_id, bytes, mem_kinds, coalesce(via_graph, false) AS via_graph"
        " FROM gpu_ops WHERE artifact_id = ? AND kind IN ('kernel', 'memcpy', 'memset')"
        " AND dur_ns >= 0 ORDER BY start_ns, gpu_op_id", [aid]).fetchnumpy()
    return {k: np.ma.asarray(v).tolist() for k, v in cols.items()}


def thread_at(store: Store, artifact_id: int, start_ns: int, name: str | None
              ) -> tuple[str, str] | None:
    """(pid, tid) of the outermost host op starting at `start_ns` (named `name` when given);
    None when none does."""
    row = store.sql(
        "SELECT pid, tid FROM host_ops WHERE artifact_id = $a AND start_ns = $s"
        " AND ($n IS NULL OR name = $n) AND pid IS NOT NULL AND tid IS NOT NULL"
        " ORDER BY depth LIMIT 1", {"a": artifact_id, "s": start_ns, "n": name}).fetchone()
    return (row[0], row[1]) if row else None


def replayable(store: Store) -> int | None:
    """The one artifact with GPU ops and runtime calls (None: none or several). Each
    artifact with GPU ops (a scan of the integer ids) is probed for a runtime call, a scan
    that stops at the first one (1 M nsys host ops: a join of every op 50 ms → 2 ms)."""
    found: list[int] = []
    for (a,) in store.sql("SELECT DISTINCT artifact_id FROM gpu_ops").fetchall():
        if store.sql("SELECT EXISTS (SELECT 1 FROM host_ops WHERE artifact_id = $a"
                     " AND kind = 'runtime')", {"a": a}).fetchall()[0][0]:
            found.append(a)
            if len(found) > 1:
                return None
    return found[0] if found else None
