"""Own (self) host time on the threads that launched GPU work in scope, by frame: what the
launching threads did between their launches."""

from __future__ import annotations

from crossview.views.views import Views

_SELF_ON_LAUNCH_THREADS = """
WITH t AS (SELECT DISTINCT h.artifact_id, h.pid, h.tid FROM f_gpu g
           JOIN host_ops h ON h.op_id = g.launch_op_id)
SELECT f.name, f.kind, sum(f.self_ns) AS s
FROM f_host f JOIN t USING (artifact_id, pid, tid)
WHERE f.start_ns >= $lo AND f.start_ns < $hi
GROUP BY ALL ORDER BY s DESC
"""


def self_time(v: Views, lo: int, hi: int) -> list[tuple[str, str, int]]:
    """(name, kind, self ns) of the ops starting in [lo, hi) on a thread that launched a GPU
    op in scope, most self time first."""
    return [(str(n), str(k), int(s)) for n, k, s in v.store.sql(
        _SELF_ON_LAUNCH_THREADS, {"lo": lo, "hi": hi}).fetchall()]
