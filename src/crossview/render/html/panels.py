"""Panels drawn by report.js from inlined data, each with a server-rendered table so the
numbers read without JavaScript: flamegraphs, kernel families, busy timeline, roofline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crossview.kernels.families import FAMILIES
from crossview.render import kernels as kernels_md
from crossview.render.html.esc import data_script, esc, section, table
from crossview.render.html.flame import MIN_SHARE, flame_data
from crossview.render.html.recap import to_html
from crossview.units import duration
from crossview.views.host.calltree import CallTree
from crossview.views.views import Views


def _swatch(family: str) -> str:
    return f'<span class="sw" style="background:var(--fam-{esc(family)})"></span>'


def flame_panel(sid: str, title: str, tree: CallTree, note: str, families: bool) -> str:
    data = flame_data(tree, title)
    controls = (f'<div class="fg-bar"><input type="search" class="fg-search" '
                f'placeholder="Search frames (regex)…" aria-label="search {esc(title)}">'
                f'<button class="fg-reset">Reset zoom</button><span class="fg-status"></span>'
                f"</div>")
    legend = "".join(f'<span class="lg">{_swatch(f)}{esc(f)}</span>' for f in FAMILIES
                     ) if families else ""
    kinds = ('<span class="lg"><span class="sw k-python"></span>python</span>'
             '<span class="lg"><span class="sw k-op"></span>operator / annotation</span>'
             '<span class="lg"><span class="sw k-runtime"></span>runtime API</span>'
             + ("" if families else
                '<span class="lg"><span class="sw k-native"></span>native (sampled)</span>')
             + ('<span class="lg dim">kernels by family:</span>' if families else ""))
    body = (controls + f'<div class="flame" id="{sid}-fg" data-src="{sid}-data">'
            '<noscript>The flamegraph needs JavaScript; the recap above holds the same tree '
            "as text.</noscript></div>"
            f'<div class="legend">{kinds}{legend}</div>' + data_script(f"{sid}-data", data))
    return section(sid, title, body,
                   f"{note} Total {esc(duration(tree.total_ns))}. Click a frame to zoom, "
                   f"hover for time and share; frames under {MIN_SHARE:.1%} of the total are "
                   "grouped as “(other)”.")


def families_panel(v: Views) -> str:
    rows = [[_swatch(f.family) + esc(f.family), esc(f"{f.count:,}"), esc(duration(f.time_ns)),
             f'<div class="bar"><span style="width:{100 * f.share:.2f}%;background:'
             f'var(--fam-{esc(f.family)})"></span><em>{100 * f.share:.1f}%</em></div>']
            for f in v.families]
    return section("families", "Kernel families", table(
        ["family", "kernels", "kernel time", "share of kernel time"], rows, num={1, 2}),
        "Families from knowledge/kernel_families.yaml (first matching rule wins). Same filter.")


def timeline_panel(v: Views) -> str:
    bl = v.busy_lanes
    lanes = [{"label": (f"GPU {ln.device} · all streams" if ln.stream is None
                        else f"stream {ln.stream}"), "device": ln.stream is None,
              "group": f"{Path(ln.artifact).name} · GPU {ln.device}",
              "t0": ln.t0_ns, "t1": ln.t1_ns, "busy": ln.busy_ns, "kernels": ln.kernels,
              "b": ln.bucket_busy_ns} for ln in bl.lanes]
    rows = [[esc(Path(ln.artifact).name), esc(ln.device),
             esc("all (union)" if ln.stream is None else ln.stream), esc(f"{ln.kernels:,}"),
             esc(duration(ln.busy_ns)),
             esc(f"{100 * ln.busy_ns / max(ln.t1_ns - ln.t0_ns, 1):.1f}%"),
             esc(duration(ln.t1_ns - ln.t0_ns))] for ln in bl.lanes]
    gaps = [[esc(Path(g.artifact).name), esc(g.device), esc(duration(g.dur_ns)),
             esc(f"+{duration(g.start_ns - _t0(bl.lanes, g.artifact, g.device))}")]
            for g in bl.gaps]
    body = ('<div class="tl" id="timeline-draw" data-src="timeline-data"></div>'
            + data_script("timeline-data", {"lanes": lanes, "buckets": bl.buckets})
            + table(["capture", "device", "stream", "kernels", "busy", "busy % of span",
                     "kernel span"], rows, num={1, 3, 4, 5, 6})
            + ("<h3>Longest idle gaps</h3>" + table(
                ["capture", "device", "idle gap", "starts at (from first kernel)"], gaps,
                num={1, 2, 3}) if gaps else ""))
    return section("timeline", "GPU busy / idle timeline", body,
                   f"Kernel time per device (union of its streams) and per stream, in "
                   f"{bl.buckets} equal slices of each device's kernel span; darker = busier, "
                   "blank = idle. Hover a slice for its busy share.")


def _t0(lanes: list[Any], artifact: str, device: int) -> int:
    return next(ln.t0_ns for ln in lanes if ln.artifact == artifact and ln.device == device)


def roofline_panel(v: Views) -> str:
    rows = v.kernels
    pts = [{"name": k.name, "family": k.family, "ai": k.arithmetic_intensity,
            "flops": k.achieved_flops_per_s, "hw": k.hw_key, "bound": k.bound,
            "pct": k.pct_of_peak_flops, "dur": k.duration_ns}
           for k in rows if k.arithmetic_intensity and k.achieved_flops_per_s]
    ceilings: dict[tuple[str, str], dict[str, Any]] = {}
    for k in rows:
        if k.hw_key and k.peak_flops_per_s and k.peak_dram_bytes_per_s:
            ceilings[(k.hw_key, k.peak_flops_basis or "")] = {
                "hw": k.hw_key, "basis": k.peak_flops_basis, "flops": k.peak_flops_per_s,
                "bw": k.peak_dram_bytes_per_s}
    chart = ('<div class="roof" id="roofline-draw" data-src="roofline-data"></div>'
             + data_script("roofline-data", {"points": pts, "ceilings": list(ceilings.values())})
             if pts else '<p class="dim">No kernel has both FLOP counts and DRAM bytes in this '
             "capture (collect the SpeedOfLight_RooflineChart and MemoryWorkloadAnalysis "
             "sections), so no point can be placed; the table lists what was measured.</p>")
    # the table, then its notes (ceilings, what ncu did not collect, ncu's rules): the
    # recap section leaves both to this panel
    body = chart + to_html("\n".join([*kernels_md.table(rows), "", *kernels_md.notes(rows)]))
    return section("roofline", "Per-kernel roofline (Nsight Compute)", body,
                   "Arithmetic intensity (FLOP per DRAM byte) vs achieved FLOP/s against the "
                   "device's datasheet ceilings (knowledge/sol_ceilings.yaml); rigor L4.")
