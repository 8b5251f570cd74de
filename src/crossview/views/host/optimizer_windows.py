"""The optimizer's per-parameter work: kernels launched and GPU idle inside its host windows.

Three parts (frames.yaml `optimizer`): `Optimizer.zero_grad#…` (zero-filling every gradient
when `set_to_none=False`), autograd's `AccumulateGrad` (adding each new gradient into the
zeroed .grad — with the gradients set to None it assigns them and launches nothing) and
`Optimizer.step#…` (one update kernel or more per parameter without `foreach` / `fused`).
Per part: its windows, the kernels launched inside them and the GPU idle inside them, per step
of the capture (each step runs each part once; AccumulateGrad once per parameter).

hta_v100_ddp_training, per step: zero_grad 404 kernels with 9.48 ms of GPU idle, AccumulateGrad
404 kernels / 10.46 ms, SGD.step 404 kernels / 7.31 ms — one kernel per parameter in each.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.knowledge.frames import optimizer_frames
from crossview.store.host_calls import NamesMatching
from crossview.views.views import Views

# the launch calls of every kernel (an equi-join on the op id), counted per window in numpy:
# a range join of 14,000 AccumulateGrad windows against the launches took 3 s on 1.5 M events
_LAUNCHES = """
SELECT h.start_ns FROM f_gpu g
JOIN host_ops h ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id
WHERE g.kind = 'kernel'
"""
_WINDOWS = """
SELECT start_ns, start_ns + dur_ns FROM f_host
WHERE name ILIKE '%' || $c || '%' AND regexp_matches(name, $p)
"""


@dataclass(frozen=True)
class Part:
    name: str  # zero_grad | step | accumulate
    windows: int  # host intervals of the part in the capture
    kernels: int  # kernels launched inside them
    idle_ns: int  # GPU idle inside them


@dataclass(frozen=True)
class OptimizerWindows:
    steps: int  # steps of the capture the parts are spread over
    parts: dict[str, Part]

    def per_step(self, x: int) -> float:
        return x / self.steps if self.steps else 0.0


def compute(v: Views) -> OptimizerWindows | None:
    """None without steps or without any optimizer window."""
    steps = len(v.steps.steps)
    if not steps:
        return None
    parts: dict[str, Part] = {}
    launches: npt.NDArray[np.int64] | None = None
    for name, (contains, pattern) in optimizer_frames().items():
        eff = v.gpu_inside(NamesMatching(contains, pattern))
        if not eff.count:
            continue
        if launches is None:
            launches = np.sort(np.asarray(v.store.sql(_LAUNCHES).fetchnumpy()["start_ns"],
                                          dtype=np.int64))
        w = v.store.sql(_WINDOWS, {"c": contains, "p": pattern}).fetchnumpy()
        ws, we = intervals.merge(*(np.asarray(x, dtype=np.int64) for x in w.values()))
        k = int((np.searchsorted(launches, we) - np.searchsorted(launches, ws)).sum())
        parts[name] = Part(name, eff.count, k, eff.gpu_idle_inside_ns)
    return OptimizerWindows(steps, parts) if parts else None


# zero-fill ops directly under the optimizer's reset, and how many resets
_ZERO_FILLS = """
SELECT count(*), count(DISTINCT p.op_id) FROM f_host z JOIN host_ops p ON p.op_id = z.parent
WHERE z.name = $fill AND starts_with(p.name, $call)
"""


def zero_fills(v: Views, fill: str, call: str) -> tuple[int, int]:
    """(`fill` ops in scope directly under an op whose name starts with `call`, such calls):
    the optimizer's zero_grad zero-filling gradients (frames.yaml zero_grad_ops)."""
    fills, resets = v.store.sql(_ZERO_FILLS, {"fill": fill, "call": call}).fetchall()[0]
    return int(fills), int(resets)
