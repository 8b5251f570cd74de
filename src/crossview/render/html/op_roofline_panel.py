"""HTML panel: the analytic per-op roofline (from recorded shapes), drawn by report.js's
roofline chart (the same chart as the ncu one) and marked "analytic", with the recap's table
and the collective / copy bandwidth tables beneath. Formats views only."""

from __future__ import annotations

from typing import Any

from crossview.render import op_roofline_md
from crossview.render.html.esc import data_script, section
from crossview.render.html.recap import to_html
from crossview.views.views import Views

# op-model family → kernel-family colour of the page (report.css --fam-*)
_COLOUR = {"matmul": "gemm", "conv": "gemm", "attention": "attention", "norm": "norm",
           "softmax": "reduction", "reduction": "reduction", "elementwise": "elementwise",
           "embedding": "memory"}


def panel(v: Views) -> str | None:
    if not v.metrics.kernel_count:
        return None
    r = v.op_roofline
    md = op_roofline_md.section(v, narrow=True)
    if not md:
        return None
    pts = [{"name": f"{g.op} {g.shape} {g.dtype} (analytic)", "family": _COLOUR.get(g.family),
            "ai": g.intensity, "flops": g.flops_per_s, "hw": g.hw_key, "bound": g.bound,
            "pct": g.pct_of_roofline, "pctLabel": "of its roofline", "dur": g.time_ns}
           for g in r.groups if g.intensity and g.flops_per_s]
    ceilings: dict[tuple[str, str], dict[str, Any]] = {}
    for g in r.groups:
        if g.hw_key and g.peak_flops_per_s and g.peak_bytes_per_s:
            ceilings[(g.hw_key, g.ceiling or "")] = {
                "hw": g.hw_key, "basis": g.ceiling, "flops": g.peak_flops_per_s,
                "bw": g.peak_bytes_per_s}
    chart = ('<div class="roof" id="op-roofline-draw" data-src="op-roofline-data"></div>'
             + data_script("op-roofline-data",
                           {"points": pts, "ceilings": list(ceilings.values())})
             if pts else "")
    return section("op-roofline", "Per-op roofline (analytic)", chart + to_html("\n".join(md)),
                   "analytic: FLOPs and minimal DRAM bytes of each op call computed from the "
                   "trace's recorded input shapes and dtypes (crossview.opmodels), achieved "
                   "rates from its kernels' time, against the GPU's datasheet ceilings "
                   "(knowledge/sol_ceilings.yaml); rigor L2, no hardware counters. Points: "
                   "ops with FLOPs; bytes-only ops are in the table.")
