"""The busiest thread's dispatcher ops and the CUDA query calls in an op-cost record's steps
(views/host/op_cost.py): why its trivial ops' floor is what it is."""

from __future__ import annotations

from dataclasses import dataclass

from crossview.knowledge import api_roles
from crossview.knowledge.frames import trivial_ops
from crossview.scope.step_detect import in_steps
from crossview.views.host.op_cost import OpCost
from crossview.views.views import Views


@dataclass(frozen=True)
class Threads:
    """The busiest thread's dispatcher ops and the CUDA query calls, in the same steps."""

    ops: int  # dispatcher ops (frames.yaml trivial_ops.prefix) on the busiest thread
    thread: str  # that thread, in words
    floor_ns: int | None  # the trivial ops' floor on that thread alone (None: it runs none)
    queries: int  # CUDA/HIP query calls (api_roles.yaml query)
    query_median_ns: int | None



def _thread(pid: str, tid: str) -> str:
    # Linux: a process's first thread has tid == pid
    return f"thread {tid}" + (", the main thread" if tid == pid else f" of process {pid}")


def threads(v: Views, o: OpCost) -> Threads:
    """The busiest thread's dispatcher ops and the query calls in `o`'s steps (asked only for
    a capture whose floor is worth explaining: a scan of every op name)."""
    store = v.store
    prefix, names = trivial_ops()
    w = in_steps(o.steady)
    # that thread's own floor: the pooled one could come from other, slower threads
    top = store.sql(
        "SELECT x.pid, x.tid, count(*) AS c, quantile_disc(x.dur_ns, $q) FILTER"
        " (WHERE x.name IN (SELECT unnest($n))) FROM f_host_in_steps($a, $s, $e) x"
        " WHERE x.kind = 'op' AND starts_with(x.name, $p) GROUP BY 1, 2"
        " ORDER BY c DESC, 1, 2 LIMIT 1",
        {**w, "p": prefix, "q": o.quantile, "n": names}).fetchall()
    qn, qm = store.sql(
        "SELECT count(*), median(x.dur_ns) FROM f_host_in_steps($a, $s, $e) x"
        " WHERE x.kind = 'runtime' AND x.name IN (SELECT unnest($n))",
        {**w, "n": api_roles.names_with_role("query")}).fetchall()[0]
    if not top:
        return Threads(0, "", None, int(qn), int(qm) if qn else None)
    pid, tid, ops, floor = top[0]
    return Threads(int(ops), _thread(str(pid), str(tid)),
                   int(floor) if floor is not None else None, int(qn), int(qm) if qn else None)
