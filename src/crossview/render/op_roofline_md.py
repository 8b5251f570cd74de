"""Recap sections: the analytic per-op roofline (from recorded shapes) and collective / copy
bandwidth. Formats sol/op_roofline.py and views/distributed/comm_bandwidth.py; computes nothing."""

from __future__ import annotations

from crossview.core import inert
from crossview.render.md_text import code
from crossview.sol.op_roofline import OpGroup, OpRoofline, limits
from crossview.units import bandwidth, duration, flop_rate, size
from crossview.views.distributed.comm_bandwidth import CommBandwidth
from crossview.views.views import Views


def _c(text: str) -> str:
    return inert.name(text).replace("|", "\\|")  # a name in a cell: data, one line


def _or(x: float | None, fmt: object) -> str:
    return fmt(x) if x is not None else "–"  # type: ignore[operator]


def _bound(g: OpGroup) -> str:
    """The bound with the level it is against: the analytic roofline's memory is DRAM."""
    return "memory (DRAM)" if g.bound == "memory" else g.bound


def op_table(r: OpRoofline, rows: int, narrow: bool = False) -> list[str]:
    """The op groups as a table. `narrow` (the HTML report, a page of fixed width): FLOPs
    and bytes per call share a cell, and a shape breaks only between its tensors (no-break
    spaces inside a bracket), never one number per line."""
    per_call = ("| per call " if narrow else "| FLOP/call | bytes/call ")
    out = ["| op | shape | dtype | calls | kernel time (share) " + per_call
           + "| FLOP/s | bytes/s | FLOP/byte | bound | % of roofline (ceiling) |",
           "|---|---|---|---:|---:|" + ("---|" if narrow else "---:|---:|")
           + "---:|---:|---:|---|---:|"]
    for g in r.groups[:rows]:
        ceil = "DRAM" if g.bound == "memory" else (g.ceiling or "–")
        pct = f"{g.pct_of_roofline:.1f}%" if g.pct_of_roofline is not None else "–"
        flop = size(g.flops).replace("B", "FLOP") if g.flops else None
        cells = ((f"{flop}, " if flop else "") + size(g.bytes) if narrow
                 else f"{flop or '– (bytes only)'} | {size(g.bytes)}")
        out.append(
            f"| `{_c(g.op)}` | {_c(_unbroken(g.shape) if narrow else g.shape)} | {g.dtype} "
            f"| {g.calls:,} | {duration(g.time_ns)} ({100 * g.share:.1f}%) | {cells} "
            f"| {_or(g.flops_per_s, flop_rate)} | {bandwidth(g.bytes_per_s)} "
            f"| {_or(g.intensity, lambda x: f'{x:,.3g}')} | {_bound(g)} | {pct} ({ceil}) |")
    return out


def _unbroken(shape: str) -> str:
    out, depth = [], 0
    for ch in shape:
        depth += ch == "["
        depth -= ch == "]"
        out.append("\u00a0" if ch == " " and depth > 0 else ch)
    return "".join(out)


def op_section(v: Views, narrow: bool = False) -> list[str]:
    r = v.op_roofline
    if not r.kernel_ns:
        return []
    if not r.shapes_recorded:
        return [f"\n**Per-op roofline (analytic)**: {r.note}."]
    if not r.groups:
        return [f"\n**Per-op roofline (analytic)**: {r.note}."]
    n = limits()["recap_rows"]
    gpus = ", ".join(r.devices) or "GPU not in sol_ceilings.yaml"
    out = [f"\n**Per-op roofline (analytic, from recorded shapes; rigor L2)** — top {n} "
           f"(op, shape, dtype) groups by kernel time; % of the roofline of {gpus} "
           "(sol_ceilings.yaml: the dtype's tensor ceiling, DRAM bandwidth); "
           f"{duration(r.modeled_ns)} of {duration(r.kernel_ns)} kernel time "
           f"({100 * r.modeled_ns / r.kernel_ns:.1f}%) is under a modeled op\n",
           *op_table(r, n, narrow), ""]
    out.append("- FLOPs and bytes per call: crossview.opmodels (formulas in each model's "
               "docstring; bytes = the minimal DRAM traffic, each tensor moved once); FLOP/s "
               "= Σ FLOPs ÷ Σ kernel time of the calls' kernels; bound = compute when "
               "FLOP/byte ≥ the ridge point (peak FLOP/s ÷ peak bytes/s).")
    if any((g.pct_of_roofline or 0) > 100 for g in r.groups[:n]):
        out.append("- Above 100%: the kernel does less arithmetic or traffic than the direct "
                   "formula counts (Winograd/FFT convolution, cache reuse), so the formula "
                   "overstates its work.")
    top_un = [f"{code(o)} {duration(t)}" for o, t, _w in r.unmodeled[:4]]
    if top_un:
        out.append("- Kernel time under no modeled op (or inputs that do not determine "
                   "the cost; communication kernels are in the bandwidth table): "
                   + ", ".join(top_un) + ".")
    for a in r.agreement:
        out.append(f"- ncu check `{_c(str(a['kernel'])[:60])}`: analytic "
                   f"{size(float(a['analytic_flops'])).replace('B', 'FLOP')} vs ncu "
                   f"{size(float(a['ncu_flops'])).replace('B', 'FLOP')} per call, ratio "
                   f"{float(a['ratio']):.2f} ({'agree' if a['agree'] else 'DISAGREE'}).")
    return out


def comm_section(c: CommBandwidth) -> list[str]:
    out: list[str] = []
    if c.collectives:
        out += ["\n**Collectives — bandwidth** (per type, group, message size, dtype; "
                "algbw = size ÷ time, busbw = algbw × NCCL's factor, nccl-tests "
                "PERFORMANCE.md; kernel time includes waits for peers)\n",
                "| collective | group | ranks | dtype | message | calls | time | mean "
                "| algbw | busbw (factor) | % of ceiling |",
                "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
        misnamed = any(x.kernel_name_differs for x in c.collectives)
        for x in c.collectives[:15]:
            pct = f"{x.pct_of_ceiling:.1f}%" if x.pct_of_ceiling is not None else "–"
            fac = f" (×{x.bus_factor:.2f})" if x.bus_factor is not None else ""
            guess = " (kernel name only)" if misnamed and x.typed_by_name == x.count else ""
            out.append(
                f"| {x.op}{guess} | {x.group} | {x.ranks or '–'} | {x.dtype or '–'} "
                f"| {_or(x.message_bytes, size)} | {x.count:,} | {duration(x.time_ns)} "
                f"| {duration(x.mean_ns)} | {_or(x.algbw_bytes_per_s, bandwidth)} "
                f"| {_or(x.busbw_bytes_per_s, bandwidth)}{fac} | {pct} |")
        ceilings = dict.fromkeys(x.ceiling for x in c.collectives)
        out.append("- Ceiling: " + "; ".join(ceilings) + ".")
    if c.copies:
        out += ["\n**Copies — bandwidth** (per copy kind)\n",
                "| copy | memory | count | bytes | time | bytes/s | % of ceiling (ceiling) |",
                "|---|---|---:|---:|---:|---:|---|"]
        for y in c.copies[:10]:
            pct = f"{y.pct_of_ceiling:.1f}%" if y.pct_of_ceiling is not None else "–"
            out.append(f"| {y.kind} | {y.mem or '–'} | {y.count:,} | {size(y.bytes)} "
                       f"| {duration(y.time_ns)} | {_or(y.bytes_per_s, bandwidth)} "
                       f"| {pct} ({y.ceiling}) |")
    if c.note and (c.collectives or c.copies):
        out.append(f"- Note: {c.note}.")
    return out


def section(v: Views, narrow: bool = False) -> list[str]:
    """Both sections for the recap (empty for inputs without a GPU timeline); `narrow` for
    the HTML report (op_table)."""
    if not v.metrics.kernel_count:
        return []
    return op_section(v, narrow) + comm_section(v.comm_bandwidth)
