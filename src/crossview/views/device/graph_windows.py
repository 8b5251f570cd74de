"""CUDA-graph replay windows: from the first to the last recorded GPU op of one graph launch.

A graph replay runs its nodes back to back in dependency order; the GPU is not idle inside
one unless the replay holds work the trace did not record. CUPTI before CUDA 12 records no
kernel of a graph captured before the profiler initialized it (pytorch/pytorch#75504):
hta_a100_16rank_training_graphs' 70 replays record 1–20 ops each, and 29–52 ms of each step
lies idle between one replay's recorded ops (up to 25.9 ms inside a single replay). The time
account gives that idle its own cause instead of the host's (views/device/idle_pieces.py).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]


def windows(store: Store, a: int, d: int) -> tuple[I64, I64]:
    """The device's replay windows (launches with ≥ 2 recorded ops), merged and sorted."""
    w = store.sql(
        "SELECT min(start_ns) AS s, max(start_ns + dur_ns) AS e FROM f_gpu WHERE "
        "artifact_id = $a AND device = $d AND via_graph AND launch_op_id IS NOT NULL "
        "GROUP BY launch_op_id HAVING count(*) > 1", {"a": a, "d": d}).fetchnumpy()
    return intervals.merge(np.asarray(w["s"], dtype=np.int64), np.asarray(w["e"], dtype=np.int64))


def inside(s: I64, ws: I64, we: I64) -> npt.NDArray[np.bool_]:
    """Which instants `s` fall inside a window."""
    if not len(ws):
        return np.zeros(len(s), dtype=bool)
    i = np.searchsorted(ws, s, side="right") - 1
    return (i >= 0) & (s < we[np.maximum(i, 0)])
