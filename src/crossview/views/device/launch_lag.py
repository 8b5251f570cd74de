"""Launch lag: how long after its launch call returned each GPU op started, per device. When
even the shortest lag is milliseconds, the GPU began this capture's work behind something the
capture does not hold (earlier work on the device, another process) or its clock is offset
from the host's: then launch → start delays and the idle before the first op are not this
workload's."""

from __future__ import annotations

from dataclasses import dataclass

from crossview.views.views import Views

_LAGS = """
SELECT g.artifact_id, g.device, count(*) AS n,
       min(g.start_ns - (h.start_ns + h.dur_ns)) AS lo,
       median(g.start_ns - (h.start_ns + h.dur_ns)) AS mid,
       max(g.start_ns - (h.start_ns + h.dur_ns)) AS hi
FROM f_gpu g JOIN host_ops h ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id
WHERE NOT coalesce(g.via_graph, false)
GROUP BY ALL ORDER BY lo DESC
"""


# a cheap first look: any of a few thousand launched ops starting soon after its call rules
# the note out (every capture but a lagged one stops here; a full join of 5 M nsys kernels to
# their calls is seconds)
_ANY_PROMPT = """
SELECT count(*) FROM (SELECT start_ns, launch_op_id, artifact_id FROM f_gpu
  WHERE launch_op_id IS NOT NULL AND NOT coalesce(via_graph, false) LIMIT 4096) g
JOIN host_ops h ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id
WHERE g.start_ns - (h.start_ns + h.dur_ns) < $min
"""


@dataclass(frozen=True)
class Lag:
    artifact_id: int
    device: int
    ops: int
    min_ns: int
    median_ns: int
    max_ns: int


def per_device(v: Views, min_ns: int) -> list[Lag]:
    """Devices whose launched ops all start ≥ `min_ns` after their calls return, worst first
    ([] at the first prompt start found)."""
    if v.store.sql(_ANY_PROMPT, {"min": min_ns}).fetchall()[0][0]:
        return []
    return [x for x in all_devices(v) if x.min_ns >= min_ns]


def all_devices(v: Views) -> list[Lag]:
    """Every device's launch → start lags (ops launched one by one with a recorded call)."""
    return [Lag(int(a), int(d), int(n), int(lo), int(mid), int(hi))
            for a, d, n, lo, mid, hi in v.store.sql(_LAGS).fetchall()]
