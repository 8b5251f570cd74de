"""Contradictions between sources: listed as findings, never averaged away (conventions §6)."""

from __future__ import annotations

from dataclasses import dataclass, field

from crossview.core.device_counters import util
from crossview.core.measurement import Measurement, compare
from crossview.knowledge import hardware, thresholds
from crossview.knowledge import synthesis as kb
from crossview.synthesis.inventory import Inventory
from crossview.synthesis.reconcile import Reconciliation, base_context


@dataclass
class Contradiction:
    id: str  # stable: <kind>:<subject>
    kind: str
    title: str
    observation: str  # the numbers, each cited
    meaning: str  # what it changes in the ledger
    evidence_artifacts: list[str]
    measurements: list[Measurement] = field(default_factory=list)
    refused: str | None = None  # the comparison could not be made: the differing fields
    kernels: list[dict[str, object]] = field(default_factory=list)  # full identities

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "kind": self.kind, "title": self.title,
                "kernels": self.kernels,
                "observation": self.observation, "meaning": self.meaning,
                "evidence_artifacts": self.evidence_artifacts,
                "measurements": [m.to_dict() for m in self.measurements],
                "refused": self.refused}


def _from_joins(rec: Reconciliation, t: dict[str, float]) -> list[Contradiction]:
    lim = thresholds.defaults()
    out: list[Contradiction] = []
    for j in rec.joins:
        n_before = len(out)
        k = j.ncu
        arts = list(j.ncu_artifacts) + ([j.trace.artifact] if j.trace else [])
        pr = j.pct_roofline()
        if j.trace and pr and k.at_roofline and j.trace.share.value >= t["hot_share_pct"]:
            out.append(Contradiction(
                f"hot-at-roofline:{j.kernel}", "hot-at-roofline",
                f"{j.identity_text()} is hot but already at its roofline",
                f"{j.trace.share.cited()} of {j.trace.phase} kernel time, yet ncu measures "
                f"{pr.cited()}", "not addressable by a kernel change: only fewer bytes/FLOPs "
                "(precision, batching, algorithm) move it", arts, [j.trace.share, pr]))
        if j.ratio and not (1 / t["duration_ratio_max"] <= j.ratio.value
                            <= t["duration_ratio_max"]):
            ref = j.trace.med or j.trace.avg if j.trace else None
            assert ref is not None and j.ncu_duration is not None
            out.append(Contradiction(
                f"duration-disagrees:{j.kernel}:{j.phase}", "duration-disagrees",
                f"ncu and the trace disagree on how long {j.identity_text()} takes",
                f"ncu {j.ncu_duration.cited()} vs trace {ref.cited()} per launch: "
                f"{j.ratio.text()} (threshold {t['duration_ratio_max']}×)",
                "ncu replays one launch serialized, with clocks locked to base and caches "
                "flushed; the trace is the real run. Recoverable time is computed from the "
                "trace's duration; the ncu % of roofline understates the kernel in the real "
                "run by about this factor (re-capture with `ncu --clock-control none "
                "--cache-control none` to check)", arts, [j.ncu_duration, ref, j.ratio]))
        elif j.mixed is not None:
            out.append(Contradiction(
                f"not-comparable:{j.kernel}", "not-comparable",
                f"ncu and trace durations of {j.identity_text()} cannot be compared",
                j.mixed, "no per-launch ratio: the trace's mean averages other shapes; ncu's "
                "% of roofline stands for the profiled launch, and recoverable time is taken "
                "from the trace", arts, [x for x in (j.ncu_duration,) if x is not None]))
        elif j.duration_cmp is not None and not j.duration_cmp.ok:
            out.append(Contradiction(
                f"not-comparable:{j.kernel}", "not-comparable",
                f"ncu and trace durations of {j.identity_text()} cannot be compared",
                "their contexts differ beyond the tool", "the join is kept for identity "
                "only; no duration or recoverable time is taken from the mismatched pair",
                arts, [], j.duration_cmp.reason()))
        sm = k.compute_sol_pct
        if (sm is not None and sm >= lim.sol_high_pct and k.pct_of_peak_flops is not None
                and k.pct_of_peak_flops < t["sm_busy_roofline_max_pct"]):
            out.append(Contradiction(
                f"sm-busy-below-roofline:{j.kernel}", "sm-busy-below-roofline",
                f"{j.identity_text()} keeps the SMs busy but is far below its FLOP roofline",
                f"ncu SM throughput {sm:.1f}% vs {k.pct_of_peak_flops:.1f}% of the "
                f"{k.peak_flops_basis} FLOP/s ceiling [{j.ncu_artifacts[0]}]",
                "SM-busy is not at-roof (spin, split-K, serialization): a kernel lever, not "
                "a throughput wall", list(j.ncu_artifacts)))
        if j.match == "none":
            out.append(Contradiction(
                f"ncu-not-in-trace:{j.kernel}", "ncu-not-in-trace",
                f"ncu measured {j.identity_text()}, which no trace of the bundle shows",
                f"no L2 row of family {j.family} with that name", "its roofline cannot be "
                "weighed by time: no recoverable time, frontier only", list(j.ncu_artifacts)))
        for c in out[n_before:]:
            c.kernels = [j.identity()]
    return out


def drivers(inv: Inventory) -> dict[str, int]:
    """Artifact path → the CUDA version its GPU driver supports, where the file says
    (artifacts.driver_cuda: Kineto `cuda_driver_version`, nvidia-smi `CUDA Version`)."""
    v = inv.views
    if v is None:
        return {}
    return {str(p): int(d) for p, d in v.store.sql(
        "SELECT path, driver_cuda FROM input_files WHERE driver_cuda IS NOT NULL").fetchall()}


def _cuda(d: int) -> str:
    return f"CUDA {d // 1000}.{d % 1000 // 10}"


def _different_drivers(inv: Inventory) -> list[Contradiction]:
    """Files recorded under different GPU drivers come from different runs: one driver holds
    for a whole run (the Qwen trace's driver supports CUDA 12.9, the nvidia-smi capture
    beside it reports 13.1 — and gpu-burn as its load)."""
    by: dict[int, list[str]] = {}
    for path, d in drivers(inv).items():
        by.setdefault(d, []).append(inv.bundle.rel(path))
    if len(by) <= 1:  # one driver, or none said
        return []
    groups = sorted(by.items())
    arts = [a for _, names in groups for a in sorted(names)]
    return [Contradiction(
        "different-runs:" + ":".join(arts), "different-runs",
        "the bundle's files were recorded under different GPU drivers",
        "; ".join(f"a driver supporting {_cuda(d)}: " + ", ".join(f"`{a}`" for a in sorted(n))
                  for d, n in groups)
        + " (the trace's `cuda_driver_version`, nvidia-smi's `CUDA Version`)",
        "a driver does not change within a run: these files describe different runs "
        "(another machine, or another day). Read each group's numbers on their own — counter "
        "utilization is not compared here with a trace of another driver — and capture the "
        "counters during the traced run (`nvidia-smi dmon` or DCGM beside the profiler) to "
        "cross-check one against the other", arts)]


def _busy_idle(inv: Inventory, t: dict[str, float]) -> list[Contradiction]:
    v = inv.views
    if v is None or not v.metrics.devices:
        return []
    by_path = drivers(inv)
    out = []
    for dc in v.gpu_metrics.devices:
        u = util(dc)
        if u is None or u < v.limits.counters_busy_util_pct:
            continue
        for dm in v.metrics.devices:
            if dm.kernel_busy_pct >= t["trace_idle_busy_pct"]:
                continue
            dd, dt = by_path.get(dc.artifact), by_path.get(dm.artifact)
            if dd is not None and dt is not None and dd != dt:
                continue  # different runs: said once by _different_drivers
            ca, ta = inv.bundle.rel(dc.artifact), inv.bundle.rel(dm.artifact)
            hw_c = hardware.match(dc.name) if dc.name else None
            hw_t = hardware.match(dm.name) if dm.name else None
            cc = base_context(inv, inv.bundle.facts_of(dc.artifact).phase or "all",
                              "counters")
            tc = base_context(inv, inv.bundle.facts_of(dm.artifact).phase or "all", "trace")
            cc["hardware"] = hw_c.hw_key if hw_c else cc["hardware"]
            tc["hardware"] = hw_t.hw_key if hw_t else tc["hardware"]
            a = Measurement(u, "%", f"{ca}: GPU utilization (mean)", cc)
            b = Measurement(dm.kernel_busy_pct, "%", f"{ta}: kernel busy share of the span",
                            tc)
            cmp_ = compare(a, b, lever=("tool",))
            if not cmp_.ok:  # different GPUs or runs: refused, the fields named
                out.append(Contradiction(
                    f"not-comparable:{ca}:{ta}:{dm.device}", "not-comparable",
                    "counters and trace utilization cannot be compared",
                    f"counters {a.cited()} vs trace {b.cited()}", "no contradiction is "
                    "drawn from numbers of different contexts", [ca, ta], [a, b],
                    cmp_.reason()))
                continue
            out.append(Contradiction(
                f"busy-counters-idle-trace:{ca}:{ta}:{dm.device}", "busy-counters-idle-trace",
                "busy in the counters, idle in the trace",
                f"counters {a.cited()} ≥ {v.limits.counters_busy_util_pct:.0f}% while the trace's "
                f"GPU {dm.device} is busy {b.cited()} < {t['trace_idle_busy_pct']:.0f}%",
                "utilization counts any kernel resident, the trace counts kernel time: "
                "either the windows differ or short kernels keep the GPU 'busy' while SMs "
                "idle — do not rank kernel levers on the counters' busy figure",
                [ca, ta], [a, b]))
    return out


def _share_gap(rec: Reconciliation, t: dict[str, float]) -> list[Contradiction]:
    out = []
    for f in rec.families:
        if f.l1_share and abs(f.l1_share.value - f.share.value) >= t["share_gap_points"]:
            out.append(Contradiction(
                f"share-gap:{f.phase}:{f.family}", "share-gap",
                f"L1 sampled and L2 traced shares of {f.family} disagree",
                f"L1 {f.l1_share.cited()} vs L2 {f.share.cited()}",
                "sampling and tracing windows or weights differ: rank by the L2 time, "
                "keep the L1 share as a pointer", [f.artifact,
                                                   f.l1_share.evidence.split(":")[0]],
                [f.l1_share, f.share]))
    return out


def find(inv: Inventory, rec: Reconciliation) -> list[Contradiction]:
    t = {k: float(v) for k, v in kb.table("contradictions").items()}
    out = (_from_joins(rec, t) + _busy_idle(inv, t) + _share_gap(rec, t)
           + _different_drivers(inv))
    return sorted(out, key=lambda c: (c.kind, c.id))
