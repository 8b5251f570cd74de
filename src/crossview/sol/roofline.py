"""Per-kernel roofline (rigor L4) from Nsight Compute counters: one typed row per launch.

For each profiled launch (its exports merged, see kernel_inputs.py): duration; achieved
FLOP/s as ncu computes it (FP32 = (FADD + FMUL + 2·FFMA) SASS thread instructions per
elapsed cycle × SM cycles/s; FP64 alike; tensor FLOP from the tensor-pipe op counts ÷
duration); DRAM bytes and bandwidth; arithmetic intensity; % of the device's datasheet
ceilings (knowledge/sol_ceilings.yaml); occupancy; waves per SM; tensor cores engaged; and
the speed-of-light class (roofline_class.py). Inputs a capture lacks are listed in
`missing`, never guessed. ncu's own rule results ride along as evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import NamedTuple

from crossview.knowledge import hardware
from crossview.knowledge.hardware import HwSpec
from crossview.knowledge.thresholds import Thresholds
from crossview.sol import roofline_class, tensor_class
from crossview.sol.kernel_inputs import (
    KernelInputs,
    pipe_pattern,
    tensor_rules,
    waves_rule_pattern,
)

CEILINGS = hardware.CEILINGS_FILE


@dataclass
class KernelRoofline:
    name: str
    family: str
    device_name: str | None
    hw_key: str | None
    ceilings_note: str  # the GPU the % are against, or why there is no ceiling
    ceilings_source: str  # the datasheet(s) sol_ceilings.yaml cites for that GPU
    duration_ns: float | None
    dram_bytes: float | None
    dram_bytes_per_s: float | None
    achieved_flops_per_s: float | None
    flops_per_s: dict[str, float]  # by sol_ceilings precision key (fp32, bf16_tensor, …)
    arithmetic_intensity: float | None  # FLOP per DRAM byte
    peak_flops_per_s: float | None
    peak_flops_basis: str | None  # the precision key pct_of_peak_flops is against
    pct_of_peak_flops: float | None  # % (0-100) of the datasheet ceiling
    peak_dram_bytes_per_s: float | None
    pct_of_peak_dram_bw: float | None
    ncu_peak_fp32_flops_per_s: float | None  # ncu's own ceiling at the measured clocks
    ncu_peak_dram_bytes_per_s: float | None
    compute_sol_pct: float | None  # ncu speed-of-light throughput, % of peak
    memory_sol_pct: float | None
    dram_sol_pct: float | None
    l1_sol_pct: float | None
    l2_sol_pct: float | None
    achieved_occupancy_pct: float | None
    theoretical_occupancy_pct: float | None
    occupancy_limiter: str | None
    waves_per_sm: float | None
    tensor_cores: bool | None  # None: no tensor counter collected
    tensor_evidence: str
    busiest_pipes: dict[str, float]  # SM pipe → % of peak (top 3, when collected)
    bound: str  # memory-bound | compute-bound | balanced | latency-bound | small-grid | unknown
    bound_reason: str
    at_roofline: bool | None  # from achieved FLOP/s or bytes/s vs the ceiling, never SM-busy
    grid: str | None
    block: str | None
    cc: str | None
    missing: list[str] = field(default_factory=list)
    grid_blocks: float | None = None  # blocks in the launch (LaunchStats grid)
    sm_count: float | None = None  # SMs of its GPU (the capture, else sol_ceilings.yaml)
    # tensor-core class (sol/tensor_class.py): tensor-core | cuda-core | not collected
    compute_class: str = "not collected"
    tensor_pipe_pct: float | None = None  # tensor pipe utilization, % of peak
    tensor_ceiling: str | None = None  # the sol_ceilings key that judges its FLOP/s
    tensor_note: str = ""
    ncu_rules: list[dict[str, object]] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    artifacts: list[str] = field(default_factory=list)

    @property
    def memory_level(self) -> str | None:
        """The busiest memory unit by ncu's speed-of-light % (L1/TEX, L2 or DRAM): the level
        a memory-bound kernel is bound at; None when no unit's throughput was collected."""
        units = [(v, n) for n, v in (("L1/TEX", self.l1_sol_pct), ("L2", self.l2_sol_pct),
                                      ("DRAM", self.dram_sol_pct)) if v is not None]
        return max(units)[1] if units else None

    def to_dict(self) -> dict[str, object]:
        return {**asdict(self), "memory_level": self.memory_level}


class ProfiledLaunch(NamedTuple):
    launch_key: str  # the launch several exports (a .ncu-rep, its CSVs) describe
    kernel_id: int
    path: str  # the export it came from
    name: str
    family: str
    device_name: str | None
    cc: str | None
    sm_count: int | None
    mem_bytes: int | None
    grid: str | None
    block: str | None
    device_name_source: str | None  # capture | --gpu | another artifact of the bundle


# (section, metric, value in SI units, unit, path of the export)
Metric = tuple[str, str, float | None, str, str]
# (section, rule, type, title, message, speedup_type, speedup_pct)
Rule = tuple[object, ...]


@dataclass(frozen=True)
class NcuRows:
    """The Nsight Compute rows of the captures in scope (views/counters/ncu_launches.py):
    each profiled launch by artifact and id, its counters and ncu's rule results by id."""
    launches: list[ProfiledLaunch]
    metrics: dict[int, list[Metric]]
    rules: dict[int, list[Rule]]


def compute(rows: NcuRows, limits: Thresholds) -> list[KernelRoofline]:
    """One row per profiled launch in scope, longest first."""
    if not rows.launches:
        return []
    groups: dict[str, list[ProfiledLaunch]] = {}
    for row in rows.launches:
        groups.setdefault(str(row.launch_key), []).append(row)
    out = [_one(g, rows.metrics, rows.rules, limits) for g in groups.values()]
    out.sort(key=lambda k: -(k.duration_ns or 0.0))
    return out


def _device(rows: Sequence[tuple[object, ...]]
            ) -> tuple[str | None, str | None, HwSpec | None, str]:
    def first(i: int) -> object:
        return next((r[i] for r in rows if r[i] is not None), None)

    name, cc, sms, mem, how = first(5), first(6), first(7), first(8), first(11)
    if not name:
        spec = None
        note = (f"the capture does not name its GPU (CC {cc or '?'}): no ceiling from "
                f"{CEILINGS}; pass --gpu NAME")
    else:
        spec = hardware.match(str(name), sm_count=sms, mem_bytes=mem,  # type: ignore[arg-type]
                              cc=str(cc) if cc else None)
        by = f" (named by {how})" if how and how != "capture" else ""
        note = f"{name} is not in {CEILINGS}" if spec is None else f"{spec.name}{by}"
    return (str(name) if name else None), (str(cc) if cc else None), spec, note


def _one(rows: Sequence[tuple[object, ...]], metrics: dict[int, list[tuple[str, str, float | None,
         str, str]]], rules: dict[int, list[tuple[object, ...]]], limits: Thresholds
         ) -> KernelRoofline:
    kids = [int(r[1]) for r in rows]  # type: ignore[call-overload]
    inp = KernelInputs([m for k in kids for m in metrics.get(k, [])])
    name, cc, spec, note = _device(rows)
    missing: list[str] = []
    evidence: list[str] = []

    def cite(key: str) -> float | None:
        v = inp.get(key)
        if v is not None:
            evidence.append(v.cite())
        return v.value if v else None

    duration = cite("duration_ns")
    if duration is None:
        missing.append("duration (gpu__time_duration.sum)")
    dram_bytes, dram_rate = _dram(inp, duration, missing, evidence)
    flops = _flops(inp, duration, spec, missing, evidence)
    achieved = sum(flops.values()) if flops else None
    tc, tc_how = roofline_class.tensor_cores(inp, tensor_rules()[2])
    tcls = tensor_class.classify(str(rows[0][3]), tc, tc_how, inp, flops, spec)
    peak, basis, pct_flops = _pct_flops(
        flops if tcls.judge_fp32 else {k: v for k, v in flops.items()
                                       if k.endswith(tensor_class.TENSOR_KEYS_SUFFIX)},
        spec, missing)
    # counted but without a ceiling (an unnamed GPU) is not "missing": the ceiling note says it
    if not tcls.judge_fp32 and basis is None and not any(
            k.endswith(tensor_class.TENSOR_KEYS_SUFFIX) for k in flops):
        missing.append("tensor operation counts (sm__ops_path_tensor_*): a tensor-core "
                       "kernel is not judged on FP32 FLOP/s")
    peak_bw = spec.dram_bytes_per_s if spec else None
    if spec is not None and peak_bw is None:
        missing.append(f"DRAM bandwidth ceiling of {spec.hw_key} ({CEILINGS})")
    pct_bw = 100.0 * dram_rate / peak_bw if dram_rate is not None and peak_bw else None
    hz = inp.value("roofline_sm_hz")
    pf = inp.value("peak_ffma_per_cycle")
    pd, dhz = inp.value("peak_dram_bytes_per_cycle"), inp.value("dram_hz")
    sol = {k: cite(k) for k in ("compute_sol_pct", "memory_sol_pct", "dram_sol_pct",
                                 "l1_sol_pct", "l2_sol_pct")}
    if sol["compute_sol_pct"] is None or sol["memory_sol_pct"] is None:
        missing.append("compute / memory throughput % (SpeedOfLight section)")
    occ_a, occ_t = cite("achieved_occupancy_pct"), cite("theoretical_occupancy_pct")
    if occ_a is None:
        missing.append("achieved occupancy (Occupancy section)")
    limiter, waves, waves_how = roofline_class.waves(inp, rows[0][9], spec)  # type: ignore[arg-type]
    ncu_rules = _rules(kids, rules)
    if waves is None:
        waves, waves_how = roofline_class.waves_from_rules(
            ncu_rules, waves_rule_pattern())
    if waves_how:
        evidence.append(waves_how)
    elif waves is None:
        missing.append("waves per SM (LaunchStats section, or Occupancy limits + SM count)")
    cover = roofline_class.grid_cover(inp, rows[0][9], spec)  # type: ignore[arg-type]
    bound, reason = roofline_class.classify(sol["compute_sol_pct"], sol["memory_sol_pct"],
                                            waves, limits, cover)
    ai = achieved / dram_rate if achieved is not None and dram_rate else None
    return KernelRoofline(
        name=str(rows[0][3]), family=str(rows[0][4]), device_name=name,
        hw_key=spec.hw_key if spec else None, ceilings_note=note,
        ceilings_source=spec.source if spec else "", duration_ns=duration,
        dram_bytes=dram_bytes, dram_bytes_per_s=dram_rate, achieved_flops_per_s=achieved,
        flops_per_s=flops, arithmetic_intensity=ai, peak_flops_per_s=peak,
        peak_flops_basis=basis, pct_of_peak_flops=pct_flops, peak_dram_bytes_per_s=peak_bw,
        pct_of_peak_dram_bw=pct_bw,
        ncu_peak_fp32_flops_per_s=2 * pf * hz if pf is not None and hz else None,
        ncu_peak_dram_bytes_per_s=pd * dhz if pd is not None and dhz else None,
        compute_sol_pct=sol["compute_sol_pct"], memory_sol_pct=sol["memory_sol_pct"],
        dram_sol_pct=sol["dram_sol_pct"], l1_sol_pct=sol["l1_sol_pct"],
        l2_sol_pct=sol["l2_sol_pct"], achieved_occupancy_pct=occ_a,
        theoretical_occupancy_pct=occ_t, occupancy_limiter=limiter, waves_per_sm=waves,
        tensor_cores=tc, tensor_evidence=tc_how,
        busiest_pipes=roofline_class.pipes(inp, pipe_pattern()), bound=bound, bound_reason=reason,
        at_roofline=roofline_class.at_roofline(pct_flops, pct_bw, limits),
        grid=rows[0][9], block=rows[0][10], cc=cc,  # type: ignore[arg-type]
        grid_blocks=cover.blocks if cover else None, sm_count=cover.sms if cover else None,
        missing=missing, compute_class=tcls.compute_class, tensor_pipe_pct=tcls.pipe_pct,
        tensor_ceiling=tcls.ceiling_key, tensor_note=tcls.note, ncu_rules=ncu_rules,
        evidence=list(dict.fromkeys(evidence)),
        artifacts=list(dict.fromkeys(str(r[2]) for r in rows)),
    )


def _dram(inp: KernelInputs, duration: float | None, missing: list[str], evidence: list[str]
          ) -> tuple[float | None, float | None]:
    """(bytes, bytes/s): counted bytes first; the measured rate first for bandwidth (the
    byte counts are printed to 3 digits); each derived from the other when alone."""
    rd, wr, total = inp.get("dram_read_bytes"), inp.get("dram_write_bytes"), inp.get("dram_bytes")
    rate = inp.get("dram_bytes_per_s")
    nbytes: float | None = None
    if rd is not None and wr is not None:
        nbytes = rd.value + wr.value
        evidence += [rd.cite(), wr.cite()]
    elif total is not None:
        nbytes = total.value
        evidence.append(total.cite())
    elif rd is not None:
        nbytes = rd.value
        evidence.append(rd.cite())
        missing.append("DRAM write bytes (dram__bytes_write.sum): bytes count reads only")
    if rate is not None:
        evidence.append(rate.cite())
    bw = rate.value if rate is not None else None
    if bw is None and nbytes is not None and duration:
        bw = nbytes / (duration * 1e-9)
        evidence.append("DRAM bandwidth = DRAM bytes ÷ duration")
    if nbytes is None and bw is not None and duration:
        nbytes = bw * duration * 1e-9
        evidence.append("DRAM bytes = DRAM bandwidth × duration")
    if nbytes is None:
        missing.append("DRAM bytes (dram__bytes_read.sum / dram__bytes_write.sum, or the "
                       "MemoryWorkloadAnalysis section)")
    return nbytes, bw


def _flops(inp: KernelInputs, duration: float | None, spec: HwSpec | None,
           missing: list[str], evidence: list[str]) -> dict[str, float]:
    """FLOP/s by precision key, as ncu's roofline computes them."""
    out: dict[str, float] = {}
    hz = inp.get("roofline_sm_hz")
    for key, fma, add, mul, legacy in (
        ("fp32", "ffma_per_cycle", "fadd_per_cycle", "fmul_per_cycle", "fp32_flop"),
        ("fp64", "dfma_per_cycle", "dadd_per_cycle", "dmul_per_cycle", "fp64_flop"),
        ("fp16", "hfma_per_cycle", "hadd_per_cycle", "hmul_per_cycle", "fp16_flop"),
    ):
        parts = [inp.get(fma), inp.get(add), inp.get(mul)]
        if hz is not None and all(p is not None for p in parts):
            f, a, m = (p.value for p in parts)  # type: ignore[union-attr]
            out[key] = (a + m + 2 * f) * hz.value
            evidence.extend([hz.cite(), *(p.cite() for p in parts)])  # type: ignore[union-attr]
        elif (lg := inp.get(legacy)) is not None and duration:
            out[key] = lg.value / (duration * 1e-9)
            evidence.append(lg.cite())
    pattern, rules, _ = tensor_rules()
    for metric, v in inp.matching(pattern):
        if v is None or not duration:
            continue
        keys = next((ks for rx, ks in rules if rx.search(metric)), None)
        if keys is None:
            continue
        key = next((k for k in keys if spec and spec.peak_flops(k) is not None), keys[0])
        out[key] = out.get(key, 0.0) + v.value / (duration * 1e-9)
        evidence.append(v.cite())
    if not out:
        missing.append("FLOP counts (SpeedOfLight_RooflineChart section: SASS FADD/FMUL/FFMA "
                       "per cycle; tensor: sm__ops_path_tensor_* metrics)")
    return out


def _pct_flops(flops: dict[str, float], spec: HwSpec | None, missing: list[str]
               ) -> tuple[float | None, str | None, float | None]:
    """Against the ceiling the kernel is closest to (the precision it leans on most)."""
    best: tuple[float, float, str] | None = None
    for key, rate in flops.items():
        peak = spec.peak_flops(key) if spec else None
        if peak is None:
            if spec is not None and rate > 0:
                missing.append(f"{key} ceiling of {spec.hw_key} ({CEILINGS} has none)")
            continue
        if best is None or rate / peak > best[0]:
            best = (rate / peak, peak, key)
    if best is None:
        return None, None, None
    return best[1], best[2], 100.0 * best[0]


def _rules(kids: list[int], rules: dict[int, list[tuple[object, ...]]]
           ) -> list[dict[str, object]]:
    seen: dict[tuple[object, object], dict[str, object]] = {}
    for k in kids:
        for section, rule, typ, title, message, stype, speedup in rules.get(k, []):
            seen.setdefault((rule, message), {
                "section": section, "rule": rule, "type": typ, "title": title,
                "message": message, "speedup_type": stype, "speedup_pct": speedup})
    return list(seen.values())
