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

from crossview.knowledge.frames import trivial_ops
from crossview.scope.step_detect import Step, in_steps
from crossview.store.store import Store


@dataclass(frozen=True)
class NameCost:
    name: str
    count: int
    median_ns: int


@dataclass(frozen=True)
class OpCost:
    artifact_id: int
    artifact: str  # its path
    steady: tuple[Step, ...]  # its steady steps
    trivial: int  # trivial ATen ops in those steps
    floor_ns: int  # the `quantile` of their host time: what nearly every op pays at least
    quantile: float
    median_ns: int
    names: tuple[NameCost, ...]  # per trivial op name, most frequent first

    @property
    def steps(self) -> int:
        return len(self.steady)

    @property
    def step_ns(self) -> int:
        """The steady steps' wall time, summed."""
        return sum(s.wall_ns for s in self.steady)

    @property
    def mean_step_ns(self) -> int:
        return self.step_ns // self.steps if self.steps else 0


def compute(store: Store, steady: list[Step], quantile: float) -> list[OpCost]:
    """One record per artifact whose steady steps hold trivial ATen ops (one scan: the
    artifact's pooled numbers and each name's, by grouping sets)."""
    if not steady:
        return []
    _, names = trivial_ops()
    pooled: dict[int, tuple[int, int, int]] = {}
    by_name: dict[int, list[NameCost]] = {}
    for a, n, c, floor, med in store.sql(
            "SELECT x.artifact_id, x.name, count(*), quantile_disc(x.dur_ns, $q),"
            " median(x.dur_ns) FROM f_host_in_steps($a, $s, $e) x"
            " WHERE x.kind = 'op' AND x.name IN (SELECT unnest($n))"
            " GROUP BY GROUPING SETS ((x.artifact_id), (x.artifact_id, x.name))"
            " ORDER BY 1, 3 DESC, 2", {**in_steps(steady), "q": quantile, "n": names}
    ).fetchall():
        if n is None:
            pooled[int(a)] = (int(c), int(floor), int(med))
        else:
            by_name.setdefault(int(a), []).append(NameCost(str(n), int(c), int(med)))
    out = []
    for a, (n, floor, med) in pooled.items():
        mine = [s for s in steady if s.artifact_id == a]
        out.append(OpCost(a, mine[0].artifact, tuple(mine), n, floor, quantile, med,
                          tuple(by_name.get(a, []))))
    return out
