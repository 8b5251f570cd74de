"""The launch queue (HTA's "queue length"): at each launch call, the kernels of the device
launched earlier and not yet finished. Empty at most launches = the host never got ahead."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crossview.store.store import Store

I64 = npt.NDArray[np.int64]


def depth_at_launches(store: Store, a: int, d: int) -> tuple[I64, I64]:
    """Launch-call start times on the device and, per call, kernels launched earlier and
    still unfinished (the launch queue HTA calls queue length)."""
    r = store.sql(
        "SELECT h.op_id, min(h.start_ns) AS ls, max(g.start_ns + g.dur_ns) AS e FROM f_gpu g"
        " JOIN host_ops h ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id"
        " WHERE g.kind = 'kernel' AND g.artifact_id = $a AND g.device = $d GROUP BY 1",
        {"a": a, "d": d},
    ).fetchnumpy()
    ls = np.sort(np.asarray(r["ls"], dtype=np.int64))
    k = store.sql(
        "SELECT h.start_ns AS ls, g.start_ns + g.dur_ns AS e FROM f_gpu g JOIN host_ops h"
        " ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id WHERE g.kind = 'kernel'"
        " AND g.artifact_id = $a AND g.device = $d", {"a": a, "d": d},
    ).fetchnumpy()
    kl = np.sort(np.asarray(k["ls"], dtype=np.int64))
    ke = np.sort(np.asarray(k["e"], dtype=np.int64))
    depth = np.searchsorted(kl, ls, side="left") - np.searchsorted(ke, ls, side="right")
    return ls, np.maximum(depth, 0)
