"""The filtered slice of sampled stacks: `f_samples`, under the same Filter as f_gpu / f_host.

A sample is a host-side fact at one instant: pid, tid and the time window select it directly;
an annotation (NVTX range) selects the samples its thread took inside that range. Device and
stream filters do not apply to host samples (as for f_host).
"""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from crossview.scope.filter import Filter
from crossview.store.store import Store

# pid / tid choices for `--pid` / `--tid`: host events and samples both carry them
PIDS = "(SELECT pid FROM host_ops UNION SELECT pid FROM samples)"
TIDS = "(SELECT tid FROM host_ops UNION SELECT tid FROM samples)"


def resolve_samples(store: Store, ids: Sequence[int], flt: Filter) -> list[str]:
    """Create f_samples over these artifacts; returns filter notes. Stack files (folded /
    speedscope / pprof) carry no timestamps: a --window or --annotation leaves their samples
    out, and says so."""
    id_list = ",".join(str(int(i)) for i in ids) or "NULL"
    where = [f"s.artifact_id IN ({id_list})"]
    params: dict[str, object] = {}
    if flt.pid is not None:
        where.append("s.pid = $pid")
        params["pid"] = flt.pid
    if flt.tid is not None:
        where.append("s.tid = $tid")
        params["tid"] = flt.tid
    if flt.window_ns is not None:
        a, b = flt.window_ns
        where.append(f"s.ts_ns >= {int(a)} AND s.ts_ns < {int(b)}")
    if flt.annotation is not None:
        params["ann"] = flt.annotation
        where.append(
            "EXISTS (SELECT 1 FROM host_ops a WHERE a.kind = 'annotation' AND a.name = $ann"
            " AND a.artifact_id = s.artifact_id AND a.pid = s.pid AND a.tid = s.tid"
            " AND s.ts_ns >= a.start_ns AND s.ts_ns < a.start_ns + a.dur_ns)")
    sql = "SELECT s.* FROM samples s WHERE " + " AND ".join(where)
    store.scoped_relation("f_samples", sql, params)
    if flt.window_ns is None and flt.annotation is None:
        return []
    untimed = store.sql(f"SELECT coalesce(sum(count), 0) FROM samples WHERE artifact_id IN"
                        f" ({id_list}) AND ts_ns IS NULL").fetchall()[0][0]
    return [f"{int(untimed):,} stack samples from files without timestamps (folded / "
            "speedscope / pprof) left out: a window or annotation cannot place them"
            ] if untimed else []


def untimed_samples(store: Store, view: str = "cpu") -> int:
    """Samples in scope that carry no time (a stack file with no sampling period)."""
    try:
        return int(store.sql("SELECT coalesce(sum(count), 0) FROM f_samples WHERE view = $v"
                             " AND weight_ns = 0", {"v": view}).fetchall()[0][0])
    except duckdb.CatalogException:
        return 0


def sampled_totals(store: Store, view: str = "cpu") -> tuple[int, int]:
    """(samples, weighted ns) of one view (cpu | gpu) in f_samples; (0, 0) where no slice was
    resolved with samples (a caller that built f_gpu / f_host itself)."""
    try:
        n, t = store.sql(
            "SELECT coalesce(sum(count), 0), coalesce(sum(weight_ns), 0) FROM f_samples"
            " WHERE view = $v", {"v": view}).fetchall()[0]
    except duckdb.CatalogException:
        return 0, 0
    return int(n), int(t)
