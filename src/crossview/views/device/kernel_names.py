"""Kernel time by kernel name in the filter's scope (f_kernels), for the questions detectors
ask of names: the time of given names, the names matching a pattern, the eager kernels a
graph-replaying step still launches one by one, and Triton's share of the kernels; and the
time an nsys kernel summary lists per name (no timeline)."""

from __future__ import annotations

from crossview.store.host_calls import NO_LIMIT
from crossview.views.views import Views

# the regex on the distinct names, not on every kernel
_MATCHING = f"""
SELECT name, count(*), sum(dur_ns) FROM f_kernels
WHERE name IN (
  SELECT name FROM (SELECT DISTINCT name FROM f_kernels LIMIT {NO_LIMIT})
  WHERE regexp_matches(lower(name), $re))
GROUP BY name ORDER BY 3 DESC, 1
"""
_EAGER = """
SELECT name, count(*), sum(dur_ns) FROM f_kernels WHERE NOT coalesce(via_graph, false)
GROUP BY 1 ORDER BY 2 DESC LIMIT 3
"""
_TRITON = """
SELECT count(*) FILTER (starts_with(name, 'triton')), count(*),
       count(*) FILTER (family = 'elementwise')
FROM f_kernels
"""


def time_of(v: Views, names: list[str]) -> int:
    """Kernel ns in scope of kernels with one of these names (exact, as recorded)."""
    return int(v.store.sql("SELECT coalesce(sum(dur_ns), 0) FROM f_kernels"
                           " WHERE name IN (SELECT unnest($n))", {"n": names}
                           ).fetchall()[0][0])


def matching(v: Views, regex: str) -> list[tuple[str, int, int]]:
    """(name, kernels, ns) of the kernel names whose lower case matches `regex`, most time
    first."""
    return [(str(n), int(c), int(t))
            for n, c, t in v.store.sql(_MATCHING, {"re": regex}).fetchall()]


def eager(v: Views) -> list[tuple[str, int, int]]:
    """(name, kernels, ns) of the 3 names launched most often outside a graph replay."""
    return [(str(n), int(c), int(t)) for n, c, t in v.store.sql(_EAGER).fetchall()]


def triton_counts(v: Views) -> tuple[int, int, int]:
    """(Triton kernels, kernels, elementwise kernels) in scope."""
    t, n, e = v.store.sql(_TRITON).fetchall()[0]
    return int(t), int(n), int(e)


def listed(v: Views, artifact: str, report: str) -> list[tuple[str, float]]:
    """(name, total) of each row of an nsys summary `report` (cuda_gpu_kern_sum, …) read from
    `artifact`, rows without a total left out."""
    return [(str(n), float(t)) for n, t in v.store.sql(
        "SELECT s.name, s.total FROM summary_stats s JOIN artifacts a USING (artifact_id)"
        " WHERE a.path = $p AND s.report = $r AND s.total IS NOT NULL",
        {"p": artifact, "r": report}).fetchall()]
