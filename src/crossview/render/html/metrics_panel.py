"""The metrics-first panel: workload metrics (counters, serving, bench) then the trace's GPU
metrics as cards and a per-device table. Numbers are Views' own; this module only formats."""

from __future__ import annotations

from pathlib import Path

from crossview.render import metrics_md
from crossview.render.html.esc import code, esc, section, table
from crossview.render.html.recap import to_html
from crossview.units import duration
from crossview.views.views import Views


def _card(label: str, value: str, sub: str = "", cls: str = "") -> str:
    return (f'<div class="card {cls}"><div class="k">{esc(label)}</div>'
            f'<div class="v">{esc(value)}</div><div class="s">{esc(sub)}</div></div>')


def _busy_cls(pct: float) -> str:
    return "good" if pct >= 85 else "warn" if pct >= 50 else "bad"


def metrics_panel(v: Views) -> str:
    parts: list[str] = []
    workload = metrics_md.block(v)
    if workload:
        parts.append(to_html("\n".join(workload)))
    m = v.metrics
    src = f"Evidence: {esc(v.evidence_path)} (trace), filter: {esc(v.filter.describe())}."
    if m.kernel_count:
        if workload:
            parts.append("<h3>Trace: kernel timeline</h3>")
        idle = m.idle
        cards = [
            _card("Kernel busy", f"{m.kernel_busy_pct:.1f}%",
                  f"of the {duration(m.kernel_span_ns)} kernel span", _busy_cls(
                      m.kernel_busy_pct)),
            _card("Kernels", f"{m.kernel_count:,}", f"{duration(m.kernel_time_ns)} kernel time"),
            _card("GPU idle", duration(idle.total_ns),
                  f"host wait {duration(idle.host_wait_ns)} · kernel wait "
                  f"{duration(idle.kernel_wait_ns)} · other {duration(idle.other_ns)}"),
        ]
        if m.launch:
            ls = m.launch
            cards.append(_card("Launches", f"{ls.launch_calls:,}",
                               f"{duration(ls.launch_time_ns)} host · {ls.graph_launches:,} "
                               f"graph launches · median kernel {duration(ls.median_kernel_ns)}"))
        if m.sync_apis:
            top = m.sync_apis[0]
            cards.append(_card("Top sync call", duration(top.time_ns),
                               f"{top.name} ×{top.count:,} (host time blocked)"))
        parts.append('<div class="cards">' + "".join(cards) + "</div>")
        rows = [[esc(Path(d.artifact).name), esc(d.device), esc(d.name or "–"),
                 esc(f"{d.kernel_count:,}"), esc(duration(d.kernel_time_ns)),
                 esc(duration(d.kernel_span_ns)), esc(f"{d.kernel_busy_pct:.1f}%"),
                 esc(duration(d.idle.host_wait_ns)), esc(duration(d.idle.kernel_wait_ns)),
                 esc(duration(d.idle.other_ns))] for d in m.devices]
        parts.append(table(["capture", "device", "GPU", "kernels", "kernel time", "span",
                            "busy", "idle: host wait", "idle: kernel wait", "idle: other"],
                           rows, num={1, 3, 4, 5, 6, 7, 8, 9}))
    elif m.cpu_only:
        parts.append(f'<p>CPU-only capture: no kernel, memcpy or memset events. Host time in '
                     f'scope {esc(duration(v.cpu.total_ns))}.</p>')
    elif v.summaries:  # nsys stats CSVs: kernel totals without a timeline
        parts.append("<p>Summary-only evidence (nsys stats): " + "; ".join(
            f"{code(Path(s.artifact).name)} {esc(s.report)}, {s.row_count:,} rows"
            for s in v.summaries) + ". No timeline, so busy and idle are not measured; the "
            "per-name totals are in the recap below.</p>")
    if not parts:
        parts.append('<p class="dim">No GPU timeline or workload metrics in this input.</p>')
    return section("metrics", "Metrics first", "".join(parts), src)
