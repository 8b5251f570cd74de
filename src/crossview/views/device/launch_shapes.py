"""Kernel launches whose grid or block is too small for the GPU they ran on: fewer blocks
than a share of its SMs, or fewer threads per block than a warp (communication kernels left
out), grouped by name and launch shape in the filter's scope."""

from __future__ import annotations

from typing import NamedTuple

from crossview.views.views import Views

_SMALL = """
WITH k AS (
  SELECT g.device, g.name, g.dur_ns, g.grid, g.block,
         list_reduce(list_transform(string_split(trim(g.grid, '[]() '), ','),
                                    lambda x: TRY_CAST(trim(x) AS BIGINT)),
                     lambda a, b: a * b) AS blocks,
         list_reduce(list_transform(string_split(trim(g.block, '[]() '), ','),
                                    lambda x: TRY_CAST(trim(x) AS BIGINT)),
                     lambda a, b: a * b) AS threads
  FROM f_kernels g WHERE g.grid IS NOT NULL AND g.block IS NOT NULL
    AND coalesce(g.family, '') <> 'comm')
SELECT k.name, k.grid, k.block, k.blocks, k.threads, d.sm_count, count(*), sum(k.dur_ns)
FROM k JOIN (SELECT device, max(sm_count) AS sm_count FROM devices GROUP BY device) d
  USING (device)
WHERE d.sm_count > 0 AND (k.blocks < $share * d.sm_count OR k.threads < $warp)
GROUP BY ALL ORDER BY 8 DESC, 1
"""


class SmallLaunch(NamedTuple):
    name: str
    grid: str  # as recorded
    block: str
    blocks: int | None  # grid x·y·z (None: not a number)
    threads: int | None  # block x·y·z
    sms: int  # the device's SM count
    calls: int
    ns: int


def small(v: Views, sm_share: float, warp: int) -> list[SmallLaunch]:
    """Launches with blocks < `sm_share` × SMs or threads < `warp`, most kernel time first."""
    return [SmallLaunch(*r) for r in v.store.sql(_SMALL, {"share": sm_share, "warp": warp}
                                                  ).fetchall()]
