"""Carry-in: GPU work launched before the capture began that still runs inside its first
step. A profiler started mid-loop records the previous iteration's tail (its launch calls
fall before the capture, so the kernels have no launch op) running at the start of the first
recorded step, while that step's host waits for it (a sync at the top of the loop). The
step's wall time then holds work that is not its own."""

from __future__ import annotations

from dataclasses import dataclass

from crossview.scope.step_detect import Step
from crossview.views.views import Views

# per device: the kernels with no recorded launch that start before the first kernel whose
# launch the capture holds, and the first kernel the capture launched
_CARRY = """
WITH first_own AS (
  SELECT artifact_id, device, min(start_ns) AS own FROM f_gpu
  WHERE kind = 'kernel' AND launch_op_id IS NOT NULL AND artifact_id = $a GROUP BY ALL)
SELECT g.device, count(*) AS n, sum(g.dur_ns) AS ns, max(g.start_ns + g.dur_ns) AS last_end,
       any_value(f.own) AS own
FROM f_gpu g JOIN first_own f USING (artifact_id, device)
WHERE g.kind = 'kernel' AND g.launch_op_id IS NULL AND g.start_ns < f.own
  AND g.start_ns + g.dur_ns > $s AND g.start_ns < $e
GROUP BY ALL ORDER BY ns DESC LIMIT 1
"""
# the longest sync call of the step's process that starts before the carried work ends
_WAIT = """
SELECT name, dur_ns FROM host_ops
WHERE artifact_id = $a AND kind = 'runtime' AND name IN (SELECT unnest($names))
  AND start_ns >= $s AND start_ns < $end ORDER BY dur_ns DESC LIMIT 1
"""


@dataclass(frozen=True)
class CarryIn:
    step: Step
    device: int
    kernels: int
    kernel_ns: int
    ends_at_ns: int  # after the step's start
    own_start_ns: int  # the first kernel the capture launched, after the step's start
    wait_call: str | None  # the sync call the host waited in meanwhile
    wait_ns: int


def first_step(v: Views, step: Step, sync_names: list[str]) -> CarryIn | None:
    """The carried-in work of `step` (the capture's first step), if any."""
    store = v.store
    p = {"a": step.artifact_id, "s": step.start_ns, "e": step.end_ns}
    row = store.sql(_CARRY, p).fetchone()
    if row is None:
        return None
    dev, n, ns, last_end, own = row
    w = store.sql(_WAIT, {"a": step.artifact_id, "names": sync_names, "s": step.start_ns,
                          "end": int(last_end)}).fetchone()
    return CarryIn(step, int(dev), int(n), int(ns), int(last_end) - step.start_ns,
                   int(own) - step.start_ns, str(w[0]) if w else None, int(w[1]) if w else 0)
