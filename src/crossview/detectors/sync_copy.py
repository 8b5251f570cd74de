"""Shared measurement for sync-memcpy / sync-memset: GPU copies issued by a synchronous API.

The host blocks inside those calls; the share is their host time over the span, and the GPU's
busy share inside them is reported too (conventions §1: judge a wait by what the GPU does).
"""

from __future__ import annotations

from dataclasses import dataclass

from crossview.knowledge import api_roles
from crossview.views.views import Views


@dataclass
class SyncCopies:
    rows: list[tuple[str, str, str, int, int, int]]  # api, copy kind, mem kinds, n, gpu ns, B
    calls: int
    host_ns: int
    gpu_busy_inside_pct: float
    span_ns: int


def measure(v: Views, kind: str, role: str, extra: str = "") -> SyncCopies | None:
    names = api_roles.names_with_role(role)
    cond = (f"g.kind = '{kind}' AND h.name IN (SELECT unnest($n)) {extra}")
    rows = v.store.sql(
        "SELECT h.name, coalesce(g.copy_kind, ''), coalesce(g.mem_kinds, ''), count(*),"
        " sum(g.dur_ns), coalesce(sum(g.bytes), 0) FROM f_gpu g"
        f" JOIN host_ops h ON h.op_id = g.launch_op_id WHERE {cond}"
        " GROUP BY ALL ORDER BY 5 DESC", {"n": names}).fetchall()
    if not rows:
        return None
    where = ("op_id IN (SELECT g.launch_op_id FROM f_gpu g JOIN host_ops h"
             f" ON h.op_id = g.launch_op_id WHERE {cond})")
    calls, host_ns = v.store.sql(
        f"SELECT count(*), coalesce(sum(dur_ns), 0) FROM f_host WHERE {where}",
        {"n": names}).fetchall()[0]
    m = v.metrics
    span = m.kernel_span_ns or m.host_span_ns
    eff = v.gpu_inside(where, {"n": names}) if m.kernel_span_ns else None
    return SyncCopies([(a, ck, mk, int(n), int(t), int(b)) for a, ck, mk, n, t, b in rows],
                      int(calls), int(host_ns),
                      eff.gpu_busy_inside_pct if eff else 0.0, int(span))
