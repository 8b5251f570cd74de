"""The host calls that launched a memcpy to or from pageable host memory in scope, as
intervals: (start ns, end ns, artifact id) arrays for timeline.host_window_effect."""

from __future__ import annotations

import numpy as np

from crossview.intervals import I64
from crossview.views.views import Views

_PAGEABLE_CALLS = """
SELECT h.start_ns, h.start_ns + h.dur_ns, h.artifact_id FROM f_gpu g JOIN f_host h
  ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id
WHERE g.kind = 'memcpy' AND lower(g.mem_kinds) LIKE '%pageable%'
"""


def intervals(v: Views) -> tuple[I64, I64, I64] | None:
    """(starts, ends, artifact ids) of the calls; None when there are none."""
    r = v.store.sql(_PAGEABLE_CALLS).fetchall()
    if not r:
        return None
    hs, he, art = (np.array([x[i] for x in r], dtype=np.int64) for i in range(3))
    return hs, he, art
