"""Hardware counters per device over the filter: GPU util, SM/tensor/DRAM activity, memory,
power, clocks, PCIe — one group per (artifact, device, host, capture section).

Reads f_metrics (scope/counters.py). Sources that describe the same device and phase
(nvidia-smi query rows and dmon rows of one section) are pooled; idle and load sections of a
capture stay separate groups, so they are never averaged together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crossview.core.bench_arm import BenchArm
from crossview.core.device_counters import DeviceCounters, GpuProcess, Stat, util
from crossview.knowledge.loader import load_yaml
from crossview.scope.counters import resolve_metrics
from crossview.scope.filter import ResolvedFilter
from crossview.store.store import Store
from crossview.views.workload.bench import bench_arms

# the counter, serving and host-CPU summaries are imported where a capture has metric
# samples: most traces have none (start-up time, docs/decisions/0760)
if TYPE_CHECKING:
    from crossview.views.counters.host_cpu import HostCpu
    from crossview.views.workload.serving import ServingSummary

# shown in this order; per-process memory is not a device quantity
SHOWN = ("gpu_util", "sm_active", "sm_occupancy", "tensor_active", "dram_active",
         "gr_engine_active", "fp16_active", "fp32_active", "fp64_active", "mem_copy_util",
         "mem_used", "mem_total", "power", "power_limit", "sm_clock", "mem_clock", "gpu_temp",
         "mem_temp", "pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx", "device_count")

_GROUPS_SQL = """
WITH m AS (
    SELECT f.*, a.path,
        coalesce(json_extract_string(labels, '$.Hostname'),
                 json_extract_string(labels, '$.hostname')) AS host,
        json_extract_string(labels, '$.section') AS section,
        coalesce(json_extract_string(labels, '$.UUID'), json_extract_string(labels, '$.uuid'),
                 json_extract_string(labels, '$.gpu_uuid')) AS uuid,
        coalesce(json_extract_string(labels, '$.modelName'),
                 json_extract_string(labels, '$.name')) AS gpu_name
    FROM f_metrics f JOIN artifacts a USING (artifact_id)
    WHERE f.metric IN (SELECT unnest($names)) AND f.mtype IN ('gauge', 'counter', 'untyped')
)
SELECT path, device, host, section, CASE WHEN device IS NULL THEN uuid END AS uid,
       metric, any_value(unit), count(*), avg(value), min(value), max(value),
       arg_max(value, coalesce(ts_ns, seq)), min(ts_ns), max(ts_ns),
       list(DISTINCT source ORDER BY source), list(DISTINCT raw_name ORDER BY raw_name),
       any_value(gpu_name) FILTER (gpu_name IS NOT NULL), count(DISTINCT (source, seq))
FROM m GROUP BY ALL ORDER BY ALL
"""


def device_counters(store: Store) -> list[DeviceCounters]:
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.knowledge import metric_names

    names = [m for m in metric_names.gpu_canonical() if m != "proc_mem_used"]
    groups: dict[tuple, DeviceCounters] = {}
    for (path, dev, host, section, uid, metric, unit, n, mean, lo, hi, last, t0, t1, srcs,
         raws, gname, samples) in store.sql(_GROUPS_SQL, {"names": names}).fetchall():
        key = (path, dev, host, section, uid)
        g = groups.get(key)
        if g is None:
            g = groups[key] = DeviceCounters(path, dev, host, section, uid, gname, [], 0,
                                             t0, t1)
        g.name = g.name or gname
        g.sources = sorted(set(g.sources) | set(srcs))
        g.samples = max(g.samples, int(samples))
        if t0 is not None:
            g.first_ns = t0 if g.first_ns is None else min(g.first_ns, t0)
            g.last_ns = t1 if g.last_ns is None else max(g.last_ns, t1)
        g.stats[metric] = Stat(unit or "", int(n), float(mean), float(lo), float(hi),
                               float(last), list(raws))
    synthetic = re.compile("|".join(f"(?:{p})" for p in load_yaml("gpu_processes.yaml")
                                    ["synthetic_loads"]), re.IGNORECASE)
    for (path, dev, host, section, uid, pname, pid, mib) in store.sql(_PROCS_SQL).fetchall():
        g = groups.get((path, dev, host, section, uid))
        if g is not None:
            g.processes.append(GpuProcess(str(pname), pid, float(mib),
                                          bool(synthetic.search(str(pname)))))
    for g in groups.values():
        g.processes.sort(key=lambda x: (-x.mem_mib, x.name))
    return list(groups.values())


_PROCS_SQL = """
SELECT a.path, f.device,
       coalesce(json_extract_string(labels, '$.Hostname'),
                json_extract_string(labels, '$.hostname')) AS host,
       json_extract_string(labels, '$.section') AS section,
       CASE WHEN f.device IS NULL THEN coalesce(json_extract_string(labels, '$.UUID'),
            json_extract_string(labels, '$.uuid'), json_extract_string(labels, '$.gpu_uuid'))
       END AS uid,
       coalesce(json_extract_string(labels, '$.process_name'), '?') AS pname,
       json_extract_string(labels, '$.pid') AS pid, max(f.value)
FROM f_metrics f JOIN artifacts a USING (artifact_id)
WHERE f.metric = 'proc_mem_used'
GROUP BY ALL ORDER BY ALL
"""


@dataclass
class GpuMetrics:
    """Everything metric-like in the bundle under the filter: counters, serving, benchmarks."""

    devices: list[DeviceCounters]
    serving: list[ServingSummary]
    bench: list[BenchArm]
    notes: list[str] = field(default_factory=list)
    samples: int = 0  # metric samples in scope (recognized or not)
    unmapped: list[str] = field(default_factory=list)  # sources with no recognized metric
    host_cpu: list[HostCpu] = field(default_factory=list)  # host sampler (host_cpu.py)

    @property
    def present(self) -> bool:
        return bool(self.devices or self.serving or self.bench or self.samples)

    @property
    def engine(self) -> str | None:
        """The serving engine the metrics (or benchmark Context) name, if any."""
        for s in self.serving:
            return s.engine
        for b in self.bench:
            e = b.context.get("engine")
            if isinstance(e, str) and e != "unknown":
                return e
        return None

    def loaded_devices(self, idle_pct: float) -> list[DeviceCounters]:
        """Device groups whose GPU did some work (mean utilization above idle_pct)."""
        return [d for d in self.devices if (util(d) or 0.0) > idle_pct]

    def to_dict(self) -> dict[str, object]:
        return {"devices": [d.to_dict() for d in self.devices],
                "serving": [s.to_dict() for s in self.serving],
                "bench": [b.to_dict() for b in self.bench], "notes": list(self.notes),
                "samples": self.samples, "unmapped": list(self.unmapped),
                "host_cpu": [h.to_dict() for h in self.host_cpu]}


def compute(store: Store, resolved: ResolvedFilter, spike_ratio: float) -> GpuMetrics:
    notes = resolve_metrics(store, resolved)
    if not store.sql(  # no metric sample in the selected artifacts: nothing to summarize
            "SELECT EXISTS (SELECT 1 FROM metrics WHERE artifact_id IN (SELECT artifact_id"
            " FROM artifacts WHERE path IN (SELECT unnest($p))))",
            {"p": list(resolved.artifacts)}).fetchall()[0][0]:
        return GpuMetrics([], [], bench_arms(store, spike_ratio), notes)
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.views.counters.host_cpu import compute as host_cpu
    from crossview.views.workload.serving import serving_summaries

    gm = GpuMetrics(device_counters(store), serving_summaries(store),
                    bench_arms(store, spike_ratio), notes)
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.views.counters.counter_match import apart, traced

    t = traced(store, resolved.artifacts)
    for d in gm.devices:
        d.apart = apart(t, d.name, d.first_ns, d.last_ns)
    gm.samples = int(store.sql("SELECT count(*) FROM f_metrics").fetchall()[0][0])
    gm.host_cpu = host_cpu(store, resolved)
    shown = ({d.artifact for d in gm.devices} | {s.artifact for s in gm.serving}
             | {h.artifact for h in gm.host_cpu})
    gm.unmapped = [f"{Path(p).name}: {n:,} samples ({', '.join(names)})" for p, n, names in
                   store.sql("SELECT a.path, count(*), list(DISTINCT f.metric ORDER BY f.metric)"
                             "[1:5] FROM f_metrics f JOIN artifacts a USING (artifact_id)"
                             " GROUP BY 1 ORDER BY 1").fetchall() if p not in shown]
    return gm
