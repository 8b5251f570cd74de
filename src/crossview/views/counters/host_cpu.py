"""Host CPU load from crossview's host sampler (sources/counters/host_jsonl.py, rigor L3): all
CPUs' busy / user / system / iowait share, memory used, and per-core busy share with the
busiest core — over the whole capture and within the filter's window (f_metrics).

One group per host-sample artifact. Per-core rows exist only in captures whose sampler wrote
`core_util_pct` (crossview ≥ this change); older files give the all-CPU shares only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from crossview.scope.filter import ResolvedFilter
from crossview.store.store import Store

_TOTALS_SQL = """
SELECT a.path, m.metric, avg(m.value), max(m.value), min(m.ts_ns), max(m.ts_ns),
       count(DISTINCT m.seq), any_value(json_extract_string(m.labels, '$.hostname')),
       any_value(json_extract_string(m.labels, '$.cpus'))
FROM {table} m JOIN artifacts a USING (artifact_id)
WHERE m.source = 'host' AND m.metric LIKE 'host_%' AND m.metric <> 'host_core_util' {where}
GROUP BY ALL ORDER BY ALL
"""
_CORES_SQL = """
SELECT a.path, CAST(json_extract_string(m.labels, '$.core') AS INTEGER) AS core,
       avg(m.value), max(m.value)
FROM {table} m JOIN artifacts a USING (artifact_id)
WHERE m.source = 'host' AND m.metric = 'host_core_util' {where}
GROUP BY ALL ORDER BY ALL
"""


@dataclass
class CoreLoad:
    core: int
    mean_pct: float
    max_pct: float


@dataclass
class HostWindow:
    """Host CPU over one window (the whole capture, or the filter's)."""

    samples: int
    first_ns: int | None
    last_ns: int | None
    busy_mean_pct: float | None = None  # all CPUs: not idle, not iowait
    busy_max_pct: float | None = None
    user_mean_pct: float | None = None
    system_mean_pct: float | None = None
    iowait_mean_pct: float | None = None
    iowait_max_pct: float | None = None
    mem_used_peak_mib: float | None = None
    cores: list[CoreLoad] = field(default_factory=list)

    @property
    def busiest(self) -> CoreLoad | None:
        return max(self.cores, key=lambda c: (c.mean_pct, -c.core)) if self.cores else None

    @property
    def window_s(self) -> float | None:
        if self.first_ns is None or self.last_ns is None or self.last_ns == self.first_ns:
            return None
        return (self.last_ns - self.first_ns) / 1e9

    def cores_at_or_above(self, pct: float) -> int:
        return sum(1 for c in self.cores if c.mean_pct >= pct)

    def others_mean_pct(self) -> float | None:
        """Mean busy share of every core but the busiest."""
        b = self.busiest
        rest = [c.mean_pct for c in self.cores if b is not None and c.core != b.core]
        return sum(rest) / len(rest) if rest else None

    def regime(self, pinned_pct: float, oversub_pct: float) -> str | None:
        """"oversubscribed" (all CPUs busy), "pinned" (one core busy, the rest not), or None.
        Thresholds: knowledge/thresholds.yaml host_cpu_oversub_pct / host_core_pinned_pct."""
        if self.busy_mean_pct is not None and self.busy_mean_pct >= oversub_pct:
            return "oversubscribed"
        b = self.busiest
        if b is not None and len(self.cores) >= 2 and b.mean_pct >= pinned_pct:
            return "pinned"
        return None


@dataclass
class HostCpu:
    artifact: str
    host: str | None
    cpus: int | None  # os.cpu_count() on the sampled host (header)
    scoped: HostWindow  # within the filter (the whole capture when the filter has no window)
    whole: HostWindow  # every sample of the artifact

    @property
    def name(self) -> str:
        return Path(self.artifact).name

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        for key, w in (("scoped", self.scoped), ("whole", self.whole)):
            b = w.busiest
            d[key]["busiest_core"] = asdict(b) if b else None
            d[key]["window_s"] = w.window_s
        return d


_FIELDS = {"host_cpu_util": ("busy_mean_pct", "busy_max_pct"),
           "host_cpu_user": ("user_mean_pct", None), "host_cpu_system": ("system_mean_pct", None),
           "host_cpu_iowait": ("iowait_mean_pct", "iowait_max_pct"),
           "host_mem_used": (None, "mem_used_peak_mib")}


def _windows(store: Store, table: str, where: str, params: dict[str, object]
             ) -> tuple[dict[str, HostWindow], dict[str, tuple[str | None, int | None]]]:
    wins: dict[str, HostWindow] = {}
    who: dict[str, tuple[str | None, int | None]] = {}
    for path, metric, mean, hi, t0, t1, n, host, cpus in store.sql(
            _TOTALS_SQL.format(table=table, where=where), params).fetchall():
        w = wins.setdefault(path, HostWindow(0, t0, t1))
        w.samples = max(w.samples, int(n))
        if t0 is not None:
            w.first_ns = t0 if w.first_ns is None else min(w.first_ns, t0)
            w.last_ns = t1 if w.last_ns is None else max(w.last_ns, t1)
        mean_f, max_f = _FIELDS.get(metric, (None, None))
        if mean_f:
            setattr(w, mean_f, round(float(mean), 2))
        if max_f:
            setattr(w, max_f, round(float(hi), 2))
        who[path] = (host or None, int(cpus) if cpus and cpus.isdigit() else None)
    for path, core, mean, hi in store.sql(_CORES_SQL.format(table=table, where=where),
                                          params).fetchall():
        if path in wins and core is not None:
            wins[path].cores.append(CoreLoad(int(core), round(float(mean), 2),
                                             round(float(hi), 2)))
    return wins, who


def compute(store: Store, resolved: ResolvedFilter) -> list[HostCpu]:
    """Host CPU per host-sample artifact; needs f_metrics (scope/counters.py) in place."""
    whole, who = _windows(store, "metrics", "AND a.path IN (SELECT unnest($p))",
                          {"p": list(resolved.artifacts)})
    scoped, _ = _windows(store, "f_metrics", "", {})
    return [HostCpu(p, who[p][0], who[p][1], scoped.get(p, HostWindow(0, None, None)), w)
            for p, w in sorted(whole.items())]
