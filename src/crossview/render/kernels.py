"""The per-kernel roofline table (ncu, rigor L4): `crossview kernels` and a recap section.

Formats sol/roofline.py rows; computes nothing. Every number carries its unit; the notes
under the table say which ceilings the percentages are against (sol_ceilings.yaml and the
datasheet it cites), what each capture did not collect, and what ncu's own rules said.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from crossview.analysis import Analysis
from crossview.core import inert
from crossview.core.finding import Finding
from crossview.render import md_text
from crossview.sol.roofline import KernelRoofline
from crossview.units import bandwidth, duration, flop_rate, size
from crossview.views.views import Views

ROOFLINE_PATTERNS = ("memory-bandwidth-bound", "compute-bound", "below-roofline",
                     "tensor-cores-unused")
NAME_WIDTH = 60
_TC = {True: "yes", False: "no", None: "n/c"}  # n/c: not collected


def _cell(text: str) -> str:
    return inert.name(text).replace("|", "\\|")  # a name is data: one line


def _name(k: KernelRoofline) -> str:
    n = md_text.cut(k.name, NAME_WIDTH)
    return _cell(f"`{n}`" if "`" not in n else n)


def _pct(x: float | None) -> str:
    return f" ({x:.1f}%)" if x is not None else ""


def _or(x: float | None, fmt: Any) -> str:
    return fmt(x) if x is not None else "–"


def table(rows: list[KernelRoofline]) -> list[str]:
    out = ["| kernel | family | GPU | duration | DRAM bytes | DRAM BW (% of peak) "
           "| FLOP/s (% of peak) | FLOP/byte | occupancy achieved / theoretical | waves/SM "
           "| tensor cores | bound |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for k in rows:
        gpu = k.hw_key or (k.device_name or f"CC {k.cc} (unnamed)")
        occ = (f"{_or(k.achieved_occupancy_pct, lambda x: f'{x:.1f}%')} / "
               f"{_or(k.theoretical_occupancy_pct, lambda x: f'{x:.1f}%')}")
        out.append(
            f"| {_name(k)} | {k.family} | {_cell(gpu)} | {_or(k.duration_ns, duration)} "
            f"| {_or(k.dram_bytes, size)} "
            f"| {_or(k.dram_bytes_per_s, bandwidth)}{_pct(k.pct_of_peak_dram_bw)} "
            f"| {_or(k.achieved_flops_per_s, flop_rate)}{_pct(k.pct_of_peak_flops)} "
            f"| {_or(k.arithmetic_intensity, lambda x: f'{x:,.3g}')} | {occ} "
            f"| {_or(k.waves_per_sm, lambda x: f'{x:,.2f}')} | {_TC[k.tensor_cores]} "
            f"| {_bound(k)} |")
    return out


def _bound(k: KernelRoofline) -> str:
    """memory-bound names its level (the busiest memory unit), as the notes and findings do."""
    level = k.memory_level if k.bound == "memory-bound" else None
    return f"{k.bound} ({level})" if level else k.bound


def _class_line(k: KernelRoofline) -> str:
    pipe = (f", tensor pipe {k.tensor_pipe_pct:.1f}% of peak"
            if k.tensor_pipe_pct is not None else "")
    return f"compute class: {k.compute_class}{pipe} — {_cell(k.tensor_note)}"


def _missing_line(k: KernelRoofline) -> str:
    return "not in the capture: " + "; ".join(k.missing) if k.missing else ""


def notes(rows: list[KernelRoofline]) -> list[str]:
    out: list[str] = []
    seen_gpu: set[str] = set()
    # a line every launch shares (a report without the SpeedOfLight section: all 12 miss the
    # same sections) is said once, above the list
    shared = {f for f in (_class_line, _missing_line)
              if len(rows) > 1 and len({f(k) for k in rows}) == 1 and f(rows[0])}
    for f in (_class_line, _missing_line):
        if f in shared:
            out.append(f"All {len(rows)} launches — {f(rows[0])}.")
    for i, k in enumerate(rows, 1):
        head = f"{i}. {_name(k)}: {k.bound_reason}"
        if k.flops_per_s:
            head += "; FLOP/s by precision: " + ", ".join(
                f"{p} {flop_rate(x)}" for p, x in k.flops_per_s.items())
            if k.peak_flops_basis:
                head += f" (% against the {k.peak_flops_basis} ceiling)"
        if k.ncu_peak_fp32_flops_per_s or k.ncu_peak_dram_bytes_per_s:
            head += "; ncu's own ceilings at the measured clocks: " + ", ".join(
                p for p in (k.ncu_peak_fp32_flops_per_s and
                            f"FP32 {flop_rate(k.ncu_peak_fp32_flops_per_s)}",
                            k.ncu_peak_dram_bytes_per_s and
                            f"DRAM {bandwidth(k.ncu_peak_dram_bytes_per_s)}") if p)
        if k.at_roofline is True:
            head += "; **at its roofline** (achieved rate ≥ the high mark of its ceiling)"
        out.append(head + ".")
        if k.tensor_cores is not None:
            out.append(f"   - tensor cores: {_TC[k.tensor_cores]} ({_cell(k.tensor_evidence)})")
        for f in (_class_line, _missing_line):
            if f not in shared and f(k):
                out.append(f"   - {f(k)}")
        for r in k.ncu_rules:
            if r.get("type") in ("OPT", "WRN", "ERR") or r.get("rule") == "SOLBottleneck":
                title = f"{r['title']}: " if r.get("title") else ""
                out.append(f"   - ncu {r['rule']} ({r['type'] or 'INF'}): {title}"
                           f"{_cell(str(r['message'])[:300])}")
        if k.hw_key and k.hw_key not in seen_gpu:
            seen_gpu.add(k.hw_key)
            out.append(f"   - ceilings: {k.ceilings_note} — {k.ceilings_source}")
        elif not k.hw_key:
            out.append(f"   - ceilings: {k.ceilings_note}")
        for how in k.evidence:
            if how.startswith(("waves per SM derived", "DRAM bandwidth =", "DRAM bytes =")):
                out.append(f"   - {how}")
        out.append("   - evidence: " + ", ".join(Path(a).name for a in k.artifacts))
    return out


def kernels_only(v: Views) -> bool:
    """The input holds ncu per-kernel counters and no GPU timeline at all."""
    m = v.metrics
    return bool(v.kernels) and not m.devices and not m.cpu_only and not m.summary_only


def _gpus(v: Views) -> str:
    names = dict.fromkeys(k.ceilings_note if k.hw_key else (k.device_name or f"CC {k.cc}")
                          for k in v.kernels)
    return ", ".join(names)


def metrics_lines(v: Views) -> list[str]:
    """The recap's metrics block when only ncu counters are in scope."""
    n = len(v.kernels)
    return [f"**GPU metrics** no GPU timeline in this input: per-kernel counters only "
            f"(Nsight Compute, rigor L4) for {n} profiled kernel launch{'es' if n != 1 else ''} "
            f"on {_gpus(v)} (the per-kernel roofline table). Busy %, idle gaps and the call tree "
            "need a timeline (PyTorch profiler or nsys) of the same workload."]


def counters_line(v: Views) -> str | None:
    if not v.kernels:
        return None
    return (f"- Counters: Nsight Compute per-kernel counters for {len(v.kernels)} profiled "
            "kernel launch(es) (rigor L4; roofline table below); no DCGM/NVML; serving "
            "metrics: none.")


def key_findings(v: Views, findings: list[Finding]) -> str:
    by_bound: dict[str, int] = {}
    for k in v.kernels:
        by_bound[k.bound] = by_bound.get(k.bound, 0) + 1
    kinds = ", ".join(f"{n} {b}" for b, n in sorted(by_bound.items(), key=lambda x: -x[1]))
    reds = [f for f in findings if f.severity == "red"]
    lead = (f" The dominant pattern is **{reds[0].pattern}**." if reds else "")
    n = len(v.kernels)
    return (f"Per-kernel evidence only ({n} profiled launch{'es' if n != 1 else ''}: "
            f"{kinds}).{lead} "
            "How much each kernel matters to the whole workload needs a timeline of it; the "
            "shares here are of the kernel time profiled on each GPU.")


def section(a: Analysis) -> list[str]:
    """The recap's section (analyze): the table plus its notes; empty without ncu data."""
    v = a.views
    if v is None or not v.kernels:
        return []
    return ["\n**Per-kernel roofline** (ncu counters, rigor L4; % of the datasheet ceilings "
            "in sol_ceilings.yaml)\n", *table(v.kernels), "", *notes(v.kernels)]


def render(a: Analysis) -> str:
    """`crossview kernels` as text: the table, its notes, the roofline findings."""
    v = a.views
    rows = v.kernels if v else []
    out = [f"# Per-kernel roofline — {len(rows)} profiled kernel launch"
           f"{'es' if len(rows) != 1 else ''}\n"]
    if v is not None:
        out.append("Sources: " + ", ".join(md_text.code(p) for p in v.filter.artifacts) + ".")
    for r in a.rejected:
        out.append(f"❌ Rejected {md_text.code(r.path)} ({r.status}): "
                   + "; ".join(map(inert.name, r.problems)))
    for r in (r for r in a.warned if r.status != "skipped"):
        out.append(f"⚠️ Read with a warning {md_text.code(r.path)} ({r.status}): "
                   + "; ".join(map(inert.name, r.problems)))
    out.append("")
    if rows:
        out += table(rows) + [""] + notes(rows)
    found = [f for f in a.findings if f.pattern in ROOFLINE_PATTERNS]
    if found:
        out.append("\n**Findings**")
        for f in found:
            mark = {"red": "🔴", "yellow": "🟡"}.get(f.severity, "ℹ️")
            out.append(f"- {mark} **{f.title}** — {f.observation} **Fix:** {f.fix}")
    return "\n".join(out) + "\n"


def as_list(a: Analysis) -> list[dict[str, Any]]:
    return [k.to_dict() for k in (a.views.kernels if a.views else [])]


def render_json(a: Analysis) -> str:
    return msgspec.json.format(msgspec.json.encode(as_list(a)), indent=1).decode() + "\n"
