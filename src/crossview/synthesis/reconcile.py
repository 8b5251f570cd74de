"""Reconciliation: one table per kernel family and phase joining the tiers (L1 sampled share,
L2 traced time / host gap / CUDA graph, L3 workload bound, L4 roofline of the dominant kernel),
and the per-kernel join of ncu launches to the trace rows of the same kernel."""

from __future__ import annotations

from dataclasses import dataclass, field

from crossview import units
from crossview.core.device_counters import util
from crossview.core.measurement import Comparison, Measurement, compare
from crossview.identity import kernel_key as normalize
from crossview.kernels import match as kernel_match
from crossview.kernels.families import classify
from crossview.knowledge import hardware
from crossview.knowledge import synthesis as kb
from crossview.sol.roofline import KernelRoofline
from crossview.synthesis.inventory import Entry, Inventory
from crossview.views import summary
from crossview.views.host import sampled

NOT_IN_BUNDLE = "not in bundle"


@dataclass
class KernelRow:
    """One kernel (raw name) in one phase of one L2 artifact."""

    phase: str
    family: str
    name: str
    artifact: str
    time: Measurement  # ns, total in the phase
    share: Measurement  # % of the phase's kernel time in that artifact
    count: int
    avg: Measurement  # ns per launch
    med: Measurement | None
    timeline: bool  # from a timeline (gaps and graphs known) or a summary
    lo_ns: float | None = None  # shortest / longest launch of the row
    hi_ns: float | None = None

    @property
    def signature(self) -> str:
        return kernel_match.signature(self.name)

    def to_dict(self) -> dict[str, object]:
        return {"phase": self.phase, "family": self.family, "kernel":
                normalize(self.name), "name": self.name, "artifact": self.artifact,
                "time": self.time.to_dict(), "share": self.share.to_dict(),
                "count": self.count, "avg": self.avg.to_dict(),
                "median": self.med.to_dict() if self.med else None}


@dataclass
class KernelJoin:
    """An ncu-measured kernel joined to the trace rows of the same kernel."""

    kernel: str  # base name
    family: str
    phase: str
    ncu: KernelRoofline
    ncu_artifacts: list[str]
    ncu_duration: Measurement | None
    match: str  # identity (same signature) | base name only | none
    trace: KernelRow | None
    also_in: list[str]  # other phases/artifacts holding the same kernel
    duration_cmp: Comparison | None
    ratio: Measurement | None  # ncu duration ÷ trace median (or mean)
    # why no ratio was formed although both durations exist: the trace row mixes launches
    # whose durations spread wider than the ratio cut, and ncu's one launch lies among them
    mixed: str | None = None

    def pct_roofline(self) -> Measurement | None:
        k = self.ncu
        best = max((p for p in (k.pct_of_peak_flops, k.pct_of_peak_dram_bw) if p is not None),
                   default=None)
        if best is None:
            return None
        basis = ("DRAM bandwidth" if best == k.pct_of_peak_dram_bw else
                 f"{k.peak_flops_basis} FLOP/s")
        return Measurement(best, "%", self.ncu_artifacts[0] + f": % of {basis} ceiling",
                           {"hardware": k.hw_key or "unknown", "phase": self.phase,
                            "tool": "ncu"})

    def identity(self) -> dict[str, object]:
        """The kernel's full identity (issue 17): the demangled names each source gives, the
        ncu launch and its geometry — a base name like `cutlass::Kernel2` names 15 kernels."""
        k = self.ncu
        return {"base_name": self.kernel, "ncu_name": k.name,
                "trace_name": self.trace.name if self.trace else None,
                "ncu_launch": self.ncu_artifacts[0],
                "grid": k.grid, "block": k.block, "match": self.match}

    def identity_text(self) -> str:
        k = self.ncu
        geo = ", ".join(f"{n} {v}" for n, v in (("grid", k.grid), ("block", k.block)) if v)
        return f"`{k.name}`" + (f" ({geo})" if geo else "")

    def to_dict(self) -> dict[str, object]:
        k = self.ncu
        pr = self.pct_roofline()
        return {"kernel": self.kernel, "identity": self.identity(),
                "family": self.family, "phase": self.phase,
                "match": self.match, "ncu_name": k.name, "ncu_artifacts": self.ncu_artifacts,
                "ncu_duration": self.ncu_duration.to_dict() if self.ncu_duration else None,
                "trace": self.trace.to_dict() if self.trace else None,
                "also_in": self.also_in,
                "duration_ratio": self.ratio.to_dict() if self.ratio else None,
                "comparison_refused": (self.duration_cmp.reason() if self.duration_cmp
                                       and not self.duration_cmp.ok else None),
                "pct_of_roofline": pr.to_dict() if pr else None,
                "pct_of_peak_dram_bw": k.pct_of_peak_dram_bw,
                "pct_of_peak_flops": k.pct_of_peak_flops,
                "tensor_cores": k.tensor_cores, "bound": k.bound,
                "at_roofline": k.at_roofline, "dram_bytes": k.dram_bytes}


@dataclass
class FamilyRow:
    phase: str
    family: str
    artifact: str
    time: Measurement
    share: Measurement
    count: int
    top_kernel: str
    l1_share: Measurement | None
    host_gap: Measurement | None  # GPU idle right before this family's kernels (timeline)
    in_graph: Measurement | None  # % of launches replayed from a CUDA graph
    l3: str
    l4: KernelJoin | None
    why_missing: dict[str, str] = field(default_factory=dict)
    top_name: str = ""  # the top kernel's full demangled name (top_kernel is its base name)

    def to_dict(self) -> dict[str, object]:
        def m(x: Measurement | None, key: str) -> object:
            return x.to_dict() if x else self.why_missing.get(key, NOT_IN_BUNDLE)
        return {"phase": self.phase, "family": self.family, "artifact": self.artifact,
                "l2_time": self.time.to_dict(), "l2_share": self.share.to_dict(),
                "count": self.count, "top_kernel": self.top_kernel,
                "top_kernel_name": self.top_name,
                "l1_share": m(self.l1_share, "l1"), "host_gap_before": m(self.host_gap, "gap"),
                "in_cuda_graph": m(self.in_graph, "graph"), "l3_workload": self.l3,
                "l4_dominant_kernel": self.l4.kernel if self.l4 else NOT_IN_BUNDLE,
                "l4_pct_of_roofline": (m(self.l4.pct_roofline(), "l4") if self.l4
                                       else NOT_IN_BUNDLE),
                "l4_tensor_cores": self.l4.ncu.tensor_cores if self.l4 else None}


@dataclass
class Reconciliation:
    families: list[FamilyRow]
    kernels: list[KernelRow]
    joins: list[KernelJoin]
    phase_totals: dict[tuple[str, str], Measurement]  # (phase, artifact) → kernel time
    l3: list[tuple[str, str]]  # (artifact, verdict) per device
    l1_note: str
    l3_host: list[tuple[str, str]] = field(default_factory=list)  # (artifact, host CPU reading)

    def to_dict(self) -> dict[str, object]:
        return {"families": [f.to_dict() for f in self.families],
                "kernel_joins": [j.to_dict() for j in self.joins],
                "phase_totals": [{"phase": p, "artifact": a, "kernel_time": m.to_dict()}
                                 for (p, a), m in sorted(self.phase_totals.items())],
                "l3_workload": [{"artifact": a, "verdict": v} for a, v in self.l3],
                "l3_host": [{"artifact": a, "reading": v} for a, v in self.l3_host],
                "l1": self.l1_note}


def base_context(inv: Inventory, phase: str, tool: str) -> dict[str, str]:
    c = inv.bundle.context
    return {"model": str(c.model or "unknown"), "hardware": str(c.hardware or c.gpu
                                                                or "unknown"),
            "phase": phase, "tool": tool}


def _l2_rows(inv: Inventory, e: Entry) -> list[KernelRow]:
    s, aid = inv.store, e.artifact_id
    phase = e.phase or "all"
    if e.kind == "nsys-stats":
        rows = [(r.name, r.total, r.count, r.avg, r.med, r.min, r.max)
                for r in (summary.kernel_summary(s, aid) if aid is not None else [])
                if r.total is not None]
        timeline = False
    else:
        rows = s.sql("SELECT name, sum(dur_ns), count(*), avg(dur_ns), median(dur_ns),"
                     " min(dur_ns), max(dur_ns) FROM kernels WHERE artifact_id=$a"
                     " GROUP BY name", {"a": aid}).fetchall()
        timeline = True
    total = sum(float(r[1]) for r in rows) or 1.0
    ctx = base_context(inv, phase, "nsys" if e.source == "nsys" else e.source)
    what = "nsys stats cuda_gpu_kern_sum" if not timeline else "kernel intervals"
    out = []
    for name, t, n, avg, med, lo, hi in rows:
        ev = f"{e.path}: {what}, `{normalize(name)}`"
        out.append(KernelRow(phase, classify(name), name, e.path,
                             Measurement(float(t), "ns", ev, ctx),
                             Measurement(100.0 * float(t) / total, "%", ev + " ÷ phase "
                                         "kernel time", ctx), int(n or 0),
                             Measurement(float(avg or 0), "ns", ev, ctx),
                             Measurement(float(med), "ns", ev, ctx) if med else None,
                             timeline, float(lo) if lo else None, float(hi) if hi else None))
    out.sort(key=lambda r: (-r.time.value, r.name))
    return out


def _gaps(inv: Inventory, e: Entry) -> dict[str, tuple[float, int, int, int]]:
    """family → (GPU idle ns right before its kernels, kernels, via graph, with a gap): the
    store's named views (store/stdlib: `idle_gaps` ends at the kernel after each gap)."""
    rows = inv.store.sql(
        "SELECT k.family, sum(coalesce(g.dur_ns, 0)), count(*), count(*) FILTER (k.via_graph),"
        " count(g.next_gpu_op_id) FROM kernels k LEFT JOIN idle_gaps g"
        " ON g.next_gpu_op_id = k.gpu_op_id AND g.artifact_id = k.artifact_id"
        " WHERE k.artifact_id = $a GROUP BY k.family", {"a": e.artifact_id}).fetchall()
    return {f: (float(g or 0), int(n), int(v), int(w)) for f, g, n, v, w in rows}


def _l1(inv: Inventory) -> tuple[dict[str, float], str, str]:
    """family → % of GPU-view samples (leaf = kernel); note; evidence artifact."""
    rows = sampled.gpu_leaves(inv.store)
    if not rows:
        cpu = sampled.rows_held(inv.store)
        note = ("L1: CPU stack samples only (no GPU-view samples): sample share per kernel "
                "family not available" if cpu else "L1: no sampled stacks in bundle")
        return {}, note, ""
    total = sum(int(c) for _, c, _ in rows) or 1
    by: dict[str, float] = {}
    for name, c, _ in rows:
        fam = classify(name)
        by[fam] = by.get(fam, 0.0) + 100.0 * int(c) / total
    return by, "L1: GPU-view sampled stacks (leaf = kernel)", inv.bundle.rel(rows[0][2])


def _l3(inv: Inventory) -> list[tuple[str, str]]:
    v = inv.views
    if v is None:
        return []
    out = []
    for d in v.workload_sol:
        verdict = next((x for x in d.verdicts if "workload level" in x or "latency-bound" in x
                        or "cannot tell" in x or "no DRAM_ACTIVE" in x), None)
        if verdict is None and d.verdicts:
            verdict = d.verdicts[0]
        out.append((inv.bundle.rel(d.artifact), f"{d.device}: {verdict or 'no verdict'}"))
    if not out:
        for dc in v.gpu_metrics.devices:
            u = util(dc)
            if u is not None:
                out.append((inv.bundle.rel(dc.artifact), f"{dc.label}: utilization {u:.1f}% "
                            "(no DCGM DRAM/tensor counters: bytes- vs compute-bound unknown)"))
    return out


def _l3_host(inv: Inventory) -> list[tuple[str, str]]:
    """Host CPU samples (L3, host side): what the host CPU did in the bundle's window."""
    v = inv.views
    if v is None:
        return []
    lim = v.limits
    out = []
    for h in v.gpu_metrics.host_cpu:
        w = h.whole
        b = w.busiest
        r = w.regime(lim.host_core_pinned_pct, lim.host_cpu_oversub_pct)
        verdict = {"pinned": "one core pinned (single-threaded host loop)",
                   "oversubscribed": "every CPU busy (oversubscribed)"}.get(
            r or "", "spare CPU" if b else "no per-core samples")
        out.append((inv.bundle.rel(h.artifact),
                     f"host CPU {w.busy_mean_pct or 0:.1f}% busy (all CPUs, mean of "
                     f"{w.samples} samples)" + (f", busiest core cpu{b.core} {b.mean_pct:.1f}%"
                                               if b else "") + f": {verdict}"))
    return out


def _join(inv: Inventory, k: KernelRoofline, rows: list[KernelRow]) -> KernelJoin:
    arts = [inv.bundle.rel(p) for p in k.artifacts]
    ent = inv.entry(k.artifacts[0]) if k.artifacts else None
    phase = (ent.phase if ent and ent.phase else "unknown")
    ctx = base_context(inv, phase, "ncu")
    if k.hw_key:
        ctx["hardware"] = str(k.device_name or k.hw_key)
    dur = (Measurement(k.duration_ns, "ns", f"{arts[0]}: gpu__time_duration (one launch, ncu "
                       "replay)", ctx) if k.duration_ns else None)
    sig, b = kernel_match.signature(k.name), kernel_match.base(k.name)
    same = [r for r in rows if r.signature == sig and r.family == k.family]
    match = "identity"
    if not same:
        same = [r for r in rows if kernel_match.base(r.name) == b and r.family == k.family]
        match = "base name only" if same else "none"
    pick = next((r for r in same if r.phase == phase), None) or (same[0] if same else None)
    if pick is not None:  # the trace's name keeps the namespace ncu's CSV drops
        b = normalize(pick.name)
    also = sorted({f"{r.phase} ({r.artifact})" for r in same if r is not pick})
    cmp_, ratio = None, None
    if pick and dur:
        ref = pick.med or pick.avg
        # the bundle's hardware spelling vs ncu's device name are one GPU when both match
        a_ctx = dict(dur.context)
        if k.hw_key and inv.bundle.context.hardware:
            spec = hardware.match(str(inv.bundle.context.hardware))
            if spec and spec.hw_key == k.hw_key:
                a_ctx["hardware"] = ref.context["hardware"]
        a = Measurement(dur.value, dur.unit, dur.evidence, a_ctx)
        cmp_ = compare(a, ref, lever=("tool",))
        lo, hi = pick.lo_ns, pick.hi_ns
        spread = kb.table("contradictions")["duration_ratio_max"]
        if cmp_.ok and lo and hi and hi / lo > spread and lo <= dur.value <= hi:
            # DeepSeek-OCR's cutlass GEMM: 37,853 launches of 5.7–28.1 µs (mean 8.0 µs); the
            # profiled launch (grid 152×4, 23.4 µs) is one of the long ones, not 2.9× slower
            mixed = (f"the trace row spans launches of {units.duration(lo)}–"
                     f"{units.duration(hi)} (different shapes), and ncu's one launch "
                     f"({dur.text()}) lies within that range")
            return KernelJoin(b, k.family, phase, k, arts, dur, match, pick, also, cmp_,
                              None, mixed)
        if cmp_.ok:
            ratio = Measurement(dur.value / ref.value, "x", f"{arts[0]} ÷ {pick.artifact}",
                                {**ref.context, "tool": "ncu vs " + ref.context["tool"]})
    return KernelJoin(b, k.family, phase, k, arts, dur, match, pick, also, cmp_, ratio)


def build(inv: Inventory) -> Reconciliation:
    l2 = [e for e in inv.valid() if e.tier == "L2"]
    rows: list[KernelRow] = []
    for e in l2:
        rows += _l2_rows(inv, e)
    joins = [_join(inv, k, rows) for k in (inv.views.kernels if inv.views else [])]
    joins.sort(key=lambda j: (-(j.trace.time.value if j.trace else 0), j.kernel))
    l1, l1_note, l1_art = _l1(inv)
    l3 = _l3(inv)
    l3_text = "; ".join(f"{v} [{a}]" for a, v in l3) or NOT_IN_BUNDLE
    fams: list[FamilyRow] = []
    totals: dict[tuple[str, str], Measurement] = {}
    for e in l2:
        mine = [r for r in rows if r.artifact == e.path]
        if not mine:
            continue
        phase = mine[0].phase
        total = sum(r.time.value for r in mine)
        ctx = mine[0].time.context
        totals[(phase, e.path)] = Measurement(total, "ns", f"{e.path}: sum of kernel time",
                                              ctx)
        gaps = _gaps(inv, e) if mine[0].timeline else {}
        by_fam: dict[str, list[KernelRow]] = {}
        for r in mine:
            by_fam.setdefault(r.family, []).append(r)
        for fam, rs in by_fam.items():
            t = sum(r.time.value for r in rs)
            ev = f"{e.path}: kernels of family {fam}"
            why: dict[str, str] = {}
            gap = graph = None
            if fam in gaps:
                g, n, via, _w = gaps[fam]
                gap = Measurement(g, "ns", ev + ": GPU idle before each (device level)", ctx)
                graph = Measurement(100.0 * via / max(n, 1), "%", ev + ": via_graph", ctx)
            else:
                why["gap"] = why["graph"] = (f"{NOT_IN_BUNDLE} (summary only: {e.path} has "
                                             "no timeline)")
            l1s = (Measurement(l1[fam], "%", f"{l1_art}: GPU samples", ctx) if fam in l1
                   else None)
            if l1s is None:
                why["l1"] = l1_note
            l4 = next((j for j in joins if j.family == fam and j.trace is not None
                       and j.trace.artifact == e.path), None)
            if l4 is None:
                l4 = next((j for j in joins if j.family == fam and j.phase == phase), None)
            fams.append(FamilyRow(phase, fam, e.path, Measurement(t, "ns", ev, ctx),
                                  Measurement(100.0 * t / (total or 1), "%", ev +
                                              " ÷ phase kernel time", ctx),
                                  sum(r.count for r in rs), normalize(rs[0].name),
                                  l1s, gap, graph, l3_text, l4, why, rs[0].name))
    order = {"decode": 0, "prefill": 1, "all": 2}
    fams.sort(key=lambda f: (order.get(f.phase, 3), f.artifact, -f.time.value, f.family))
    return Reconciliation(fams, rows, joins, totals, l3, l1_note, _l3_host(inv))
