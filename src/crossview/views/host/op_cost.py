"""Per-op host cost per artifact: what the cheapest ATen ops cost on the host, against what a
CUDA query call costs on the same threads, and how many dispatcher ops a steady step runs.

An op that only makes a view or reads metadata (frames.yaml `trivial_ops`) does no work but
the dispatch itself, so its host time is the fixed cost every ATen op pays (dispatcher,
RecordFunction callbacks, the profiler's own per-op work). A CUDA call that only reads
driver state (api_roles.yaml `query`) measures the CPU through another path: fast queries
beside slow trivial ops put the cost in the per-op path, not in a slow CPU. Facts only;
detectors/host_op_cost.py judges them.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossview.knowledge import api_roles
from crossview.knowledge.frames import trivial_ops
from crossview.store.store import Store
from crossview.views.device.steps import Step


@dataclass(frozen=True)
class NameCost:
    name: str
    count: int
    median_ns: int


@dataclass(frozen=True)
class OpCost:
    artifact_id: int
    artifact: str  # its path
    steps: int  # steady steps counted
    step_ns: int  # their wall time, summed
    trivial: int  # trivial ATen ops in those steps
    floor_ns: int  # the `quantile` of their host time: what nearly every op pays at least
    quantile: float
    median_ns: int
    names: tuple[NameCost, ...]  # per trivial op name, most frequent first
    ops: int  # dispatcher ops (frames.yaml trivial_ops.prefix) on the busiest thread
    thread: str  # that thread, in words
    queries: int  # CUDA/HIP query calls in those steps
    query_median_ns: int | None

    @property
    def ops_per_step(self) -> float:
        return self.ops / self.steps if self.steps else 0.0

    @property
    def floor_per_step_ns(self) -> int:
        """Host time per step that is the per-op floor alone: ops per step × the floor."""
        return int(self.ops_per_step * self.floor_ns)

    @property
    def mean_step_ns(self) -> int:
        return self.step_ns // self.steps if self.steps else 0


def _thread(pid: str, tid: str) -> str:
    # Linux: a process's first thread has tid == pid
    return f"thread {tid}" + (", the main thread" if tid == pid else f" of process {pid}")


_JOIN = ("JOIN (SELECT unnest($a) AS a, unnest($s) AS s, unnest($e) AS e) w"
         " ON x.artifact_id = w.a AND x.start_ns >= w.s AND x.start_ns < w.e")


def compute(store: Store, steady: list[Step], quantile: float) -> list[OpCost]:
    """One record per artifact whose steady steps hold trivial ATen ops."""
    if not steady:
        return []
    prefix, names = trivial_ops()
    w = {"a": [s.artifact_id for s in steady], "s": [s.start_ns for s in steady],
         "e": [s.end_ns for s in steady]}
    trivial = store.sql(
        "SELECT x.artifact_id, count(*), quantile_disc(x.dur_ns, $q), median(x.dur_ns)"
        f" FROM f_host x {_JOIN} WHERE x.kind = 'op' AND x.name IN (SELECT unnest($n))"
        " GROUP BY 1", {**w, "q": quantile, "n": names}).fetchall()
    if not trivial:
        return []
    by_name: dict[int, list[NameCost]] = {}
    for a, n, c, m in store.sql(
            f"SELECT x.artifact_id, x.name, count(*), median(x.dur_ns) FROM f_host x {_JOIN}"
            " WHERE x.kind = 'op' AND x.name IN (SELECT unnest($n)) GROUP BY 1, 2"
            " ORDER BY 1, 3 DESC, 2", {**w, "n": names}).fetchall():
        by_name.setdefault(int(a), []).append(NameCost(str(n), int(c), int(m)))
    busiest = {int(a): (int(c), _thread(str(p), str(t))) for a, p, t, c in store.sql(
        f"SELECT x.artifact_id, x.pid, x.tid, count(*) AS c FROM f_host x {_JOIN}"
        " WHERE x.kind = 'op' AND starts_with(x.name, $p) GROUP BY 1, 2, 3"
        " QUALIFY row_number() OVER (PARTITION BY x.artifact_id ORDER BY c DESC, 2, 3) = 1",
        {**w, "p": prefix}).fetchall()}
    query = {int(a): (int(c), int(m)) for a, c, m in store.sql(
        f"SELECT x.artifact_id, count(*), median(x.dur_ns) FROM f_host x {_JOIN}"
        " WHERE x.kind = 'runtime' AND x.name IN (SELECT unnest($n)) GROUP BY 1",
        {**w, "n": api_roles.names_with_role("query")}).fetchall()}
    out = []
    for a, n, floor, med in trivial:
        a = int(a)
        mine = [s for s in steady if s.artifact_id == a]
        ops, thread = busiest.get(a, (0, ""))
        qn, qm = query.get(a, (0, None))
        out.append(OpCost(a, mine[0].artifact, len(mine), sum(s.wall_ns for s in mine),
                          int(n), int(floor), quantile, int(med), tuple(by_name.get(a, [])),
                          ops, thread, qn, qm))
    return out
