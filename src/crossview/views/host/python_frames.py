"""The Python frames (host ops of kind 'python') in the filter's scope: how many start inside
given windows (how densely the profiler recorded stacks) and their distinct names (which
engine version the frames show)."""

from __future__ import annotations

from crossview.views.views import Views

_IN_WINDOWS = """
SELECT count(*) FROM f_host h JOIN (SELECT unnest($s) AS s, unnest($e) AS e) w
  ON h.start_ns >= w.s AND h.start_ns < w.e WHERE h.kind = 'python'
"""


def count_in(v: Views, starts: list[int], ends: list[int]) -> int:
    """Python frames starting inside the windows [starts[i], ends[i])."""
    return int(v.store.sql(_IN_WINDOWS, {"s": starts, "e": ends}).fetchall()[0][0])


def names(v: Views) -> list[str]:
    """The distinct names of the Python frames in scope."""
    return [n for (n,) in v.store.sql(
        "SELECT DISTINCT name FROM f_host WHERE kind = 'python'").fetchall()]
