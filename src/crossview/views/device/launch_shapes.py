"""Kernel launches whose grid or block is too small for the GPU they ran on: fewer blocks
than a share of its SMs, or fewer threads per block than a warp (communication kernels left
out), grouped by name and launch shape in the filter's scope."""

from __future__ import annotations

from typing import NamedTuple

from crossview.views.views import Views

# launches summed per (device, name, shape) first, each shape's grid and block parsed once per
# group, not once per launch (1 M nsys kernels: 116 → 13 ms); ties by name, then shape
_SMALL = """
WITH a AS (
  SELECT device, name, grid, block, count(*) AS n, sum(dur_ns) AS t
  FROM f_kernels WHERE grid IS NOT NULL AND block IS NOT NULL
    AND coalesce(family, '') <> 'comm'
  GROUP BY ALL),
k AS (
  SELECT a.*,
         list_reduce(list_transform(string_split(trim(grid, '[]() '), ','),
                                    lambda x: TRY_CAST(trim(x) AS BIGINT)),
                     lambda p, q: p * q) AS blocks,
         list_reduce(list_transform(string_split(trim(block, '[]() '), ','),
                                    lambda x: TRY_CAST(trim(x) AS BIGINT)),
                     lambda p, q: p * q) AS threads
  FROM a)
SELECT k.name, k.grid, k.block, k.blocks, k.threads, d.sm_count, sum(k.n), sum(k.t)
FROM k JOIN (SELECT device, max(sm_count) AS sm_count FROM devices GROUP BY device) d
  USING (device)
WHERE d.sm_count > 0 AND (k.blocks < $share * d.sm_count OR k.threads < $warp)
GROUP BY k.name, k.grid, k.block, k.blocks, k.threads, d.sm_count ORDER BY 8 DESC, 1, 2, 3
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
