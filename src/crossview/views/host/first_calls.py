"""First calls of a shape: host ops whose first call with given input shapes costs far more
than the later calls with the same shapes, over the steady steps.

With `record_shapes=True` each op carries its input dims and types (op_args). Calls of one
(op, dims, types) do the same work, so a first call that costs many times the later ones pays
a one-off setup for that shape (for a GEMM, the library's per-shape kernel selection; a first
allocation of that size). Self time, not duration, so an op and the op it calls are not both
charged. Facts only; detectors/first_calls.py judges them.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossview.scope.step_detect import Step, in_steps
from crossview.store.store import Store


@dataclass(frozen=True)
class FirstCall:
    artifact: str  # path
    name: str
    input_dims: str
    calls: int  # calls of this (op, dims, types) in the steady steps
    first_ns: int  # the first call's self time
    rest_median_ns: int  # the later calls' median self time

    @property
    def excess_ns(self) -> int:
        return self.first_ns - self.rest_median_ns


@dataclass(frozen=True)
class FirstCalls:
    groups: list[FirstCall]  # the (op, shape) groups past the cut, largest excess first
    steps: int  # steady steps counted (all artifacts)
    step_ns: int  # their wall time, summed

    @property
    def excess_ns(self) -> int:
        return sum(g.excess_ns for g in self.groups)


# one group per (op, dims, types): its calls' self times in call order, aggregated once (a
# window over the same partition sorted every group: 16-rank 18.8 → 9.8 ms, workers0
# 20.2 → 8.5 ms, the same rows)
_SQL = """
SELECT artifact_id, name, input_dims, n, first, rest FROM (
    SELECT artifact_id, name, input_dims, n, l[1] AS first,
           list_aggregate(l[2:], 'median') AS rest
    FROM (
        SELECT x.artifact_id, x.name, a.input_dims, count(*) AS n,
               list(x.self_ns ORDER BY x.start_ns, x.op_id) AS l
        FROM f_host_in_steps($a, $s, $e) x
        JOIN op_args a ON a.op_id = x.op_id AND a.artifact_id = x.artifact_id AND NOT a.on_gpu
        WHERE x.kind = 'op' AND a.input_dims IS NOT NULL
        GROUP BY x.artifact_id, x.name, a.input_dims, a.input_types
        HAVING n > $later))
WHERE first >= $ratio * rest AND first - rest >= $min_ns
ORDER BY first - rest DESC, name
"""


def compute(store: Store, steady: list[Step], ratio: float, min_ns: int, later: int
            ) -> FirstCalls:
    """The groups of ≥ `later` calls after the first whose first call costs ≥ ratio × the
    later calls' median and ≥ min_ns more (thresholds.yaml first_call_*: the cut decides what
    is worth listing, not the finding)."""
    if not steady:
        return FirstCalls([], 0, 0)
    paths = {s.artifact_id: s.artifact for s in steady}
    rows = store.sql(_SQL, {**in_steps(steady), "ratio": ratio, "min_ns": min_ns,
                            "later": later}).fetchall()
    groups = [FirstCall(paths[int(a)], str(n), str(d), int(c), int(f), int(r))
              for a, n, d, c, f, r in rows]
    return FirstCalls(groups, len(steady), sum(s.wall_ns for s in steady))
