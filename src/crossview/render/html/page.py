"""Assemble the report: header, navigation, panels, the rest of the recap; CSS and JS inlined."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from crossview.analysis import Analysis
from crossview.render import kernels as kernels_md
from crossview.render.html import ledger_tables as extras
from crossview.render.html import op_roofline_panel, panels, whatif_panel
from crossview.render.html.account_panel import account_panel
from crossview.render.html.esc import code, esc, section
from crossview.render.html.findings_panel import findings_panel
from crossview.render.html.inputs import Synthesis
from crossview.render.html.inputs_line import inputs_line
from crossview.render.html.metrics_panel import metrics_panel
from crossview.render.html.ranks_panel import ranks_panel
from crossview.render.html.recap import recap_html


@dataclass
class Extras:
    """Inputs beside the analysis (already read and checked by inputs.py)."""

    synthesis: list[Synthesis] = field(default_factory=list)
    ab: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)


def _asset(name: str) -> str:
    return files("crossview.render.html").joinpath("assets", name).read_text(encoding="utf-8")


def _panels(a: Analysis, ex: Extras) -> list[tuple[str, str, str]]:
    """(id, nav label, html) of each panel present for this input."""
    v = a.views
    out: list[tuple[str, str, str]] = []
    if v is None:
        return out
    out.append(("metrics", "Metrics", metrics_panel(v)))
    out.append(("findings", "Findings", findings_panel(a)))  # right after the metrics
    trace = v.has_trace and not v.metrics.summary_only and not kernels_md.kernels_only(v)
    if trace and v.gpu.total_ns:
        out.append(("gpu", "GPU flamegraph", panels.flame_panel(
            "gpu", "GPU flamegraph", v.gpu,
            "Kernel time under the host stack that launched it; kernel leaves coloured by "
            "family.", families=True)))
    if trace and v.cpu.total_ns:
        what = ("sampled thread time by stack (L1)" if v.cpu.samples
                else "host time by stack (self time per frame)")
        out.append(("cpu", "CPU flamegraph", panels.flame_panel(
            "cpu", "CPU flamegraph", v.cpu, f"The CPU view, same filter: {what}.",
            families=False)))
    if v.families:
        out.append(("families", "Kernel families", panels.families_panel(v)))
    if trace and v.steps.steps:  # issue 15: steps and the time account
        out.append(("account", "Time account", account_panel(v)))
    if v.metrics.kernel_count:
        out.append(("timeline", "Timeline", panels.timeline_panel(v)))
    # a multi-rank job: one lane per rank
    if v.ranks is not None and v.ranks.comm and (lanes := ranks_panel(v.ranks)):
        out.append(("ranks", "Ranks", lanes))
    if v.kernels:
        out.append(("roofline", "Roofline", panels.roofline_panel(v)))
    if trace and (ops := op_roofline_panel.panel(v)):
        out.append(("op-roofline", "Op roofline", ops))
    if whatif_panel.rows(a.findings):
        out.append(("whatif", "What-if", whatif_panel.whatif_panel(a.findings)))
    for syn in ex.synthesis:
        out.append(("ledger", "Ledger", extras.ledger_panel(syn)))
    for path, d in ex.ab:
        out.append(("ab", "A/B", extras.ab_panel(d, path)))
    return out


def _shown(body: list[tuple[str, str, str]]) -> frozenset[str]:
    """Recap parts an optional panel of this page already holds (by panel id)."""
    return frozenset({"ranks"}) if any(sid == "ranks" for sid, _, _ in body) else frozenset()


def render(a: Analysis, ex: Extras | None = None) -> str:
    ex = ex or Extras()
    v = a.views
    names = ", ".join(Path(p).name for p in v.filter.artifacts) if v else "no readable input"
    head = [f"<h1>crossview report <span>— {esc(names)}</span></h1>"]
    if v:
        kinds = {r.path: r.kind for r in a.artifacts}
        head.append(f'<p class="meta">Filter: {esc(v.filter.describe())} · '
                    f"{esc(inputs_line(v, kinds))}</p>")
    for r in a.rejected:
        head.append(f'<p class="bad">Rejected {code(r.path)} ({esc(r.status)}): '
                    f"{esc('; '.join(r.problems))}</p>")
    body = _panels(a, ex)
    body.append(("recap", "Recap", section(
        "recap", "Recap", f'<div class="md">{recap_html(a, _shown(body))}</div>',
        "The parts of <code>crossview analyze --detail full</code> that no panel above "
        "shows: key findings, the call tree with its sync points, the CPU cross-check "
        "(same filter) and notes.")))
    nav = "".join(f'<a href="#{sid}">{esc(label)}</a>' for sid, label, _ in body)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>crossview — {esc(names)}</title><style>{_asset('report.css')}</style>"
        f'</head><body><header>{"".join(head)}<nav>{nav}</nav></header><main>'
        + "".join(h for _, _, h in body)
        + '</main><footer>crossview · self-contained report: no network '
        "needed to view it.</footer>"
        f"<script>{_asset('report.js')}</script></body></html>\n")
