"""Markdown pieces for what a capture holds: notes (what was not collected), the L1 sampled CPU
view, and summary-only evidence (nsys stats CSV). Formats only; computes nothing."""

from __future__ import annotations

from pathlib import Path

from crossview.render import md_text
from crossview.scope.samples import untimed_samples
from crossview.units import duration as _ms
from crossview.views.views import Views

SUMMARY_ROWS = 8


def _code(name: str) -> str:
    return md_text.code(name, cell=True)


def _cut(name: str, limit: int = 80) -> str:
    return md_text.cut(name, limit)


def notes_lines(v: Views) -> list[str]:
    """One line per artifact with notes: what its capture did not collect or left out."""
    return [f"Capture notes {md_text.code(Path(p).name)}: " + "; ".join(n) + "."
            for p, n in v.capture_notes.items()]


def host_recorded(v: Views) -> str:
    m = v.metrics
    if m.cpu_samples and not m.cpu_sampled_ns:  # the file gave no sampling period
        return (f"Host side: {m.cpu_samples:,} CPU samples (L1 sampled; sampling period "
                "unknown, so shares are of samples, no time).")
    if m.cpu_samples:
        return (f"Host side: {m.cpu_samples:,} CPU samples (L1 sampled, ~{_ms(m.cpu_sampled_ns)}"
                " of sampled thread time).")
    return f"Host time recorded: {_ms(m.host_time_ns)} over {_ms(m.host_span_ns)}."


def sampled_cpu_check(v: Views) -> str:
    top = [f for f in v.top_self if f.share >= 0.01][:5]
    head = (f"L1 sampled: {v.cpu.samples:,} CPU samples (~{_ms(v.cpu.total_ns)} of thread "
            "time; time = samples × the sampling period)")
    if v.cpu.counts_only:
        head = (f"L1 sampled: {v.cpu.samples:,} CPU samples (sampling period unknown: shares "
                "of samples, no time)")
    elif untimed := untimed_samples(v.store):  # mixed: some stack files gave no period
        head += (f"; {untimed:,} of the samples come from files with no sampling period and "
                 "carry no time, so the time shares below leave them out")
    if not top:
        return head + "; no frame holds 1% of the samples."
    parts = [f"{_code(_cut(f.frame))} {f.samples or 0:,} samples ({100 * f.share:.1f}%"
             + ("" if v.cpu.counts_only else f", ~{_ms(f.self_ns)}")
             + f"){' (your code)' if f.user else ''}" for f in top]
    return head + "; innermost frames: " + "; ".join(parts) + "."


def summary_only_block(v: Views) -> list[str]:
    return [f"**GPU metrics** none — **summary-only evidence** (nsys stats CSV: totals per "
            f"name, no timeline) in {v.evidence_path}: no busy %, idle gaps, call tree or "
            "timeline finding can be derived. Export the report as SQLite "
            "(`nsys export --type sqlite`) for the full analysis."]


def summary_lines(v: Views) -> list[str]:
    out: list[str] = []
    for s in v.summaries:
        unit = s.unit
        out.append(f"\n**{s.report}** — {s.evidence}, `{Path(s.artifact).name}`: "
                   f"{s.row_count:,} rows, "
                   + (f"{_ms(s.total)} listed in total" if unit == "ns"
                      else f"{s.total:,.3f} {unit} listed in total") + "\n")
        out.append("| name | total | count | avg | med | share of listed |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for r in s.rows[:SUMMARY_ROWS]:
            share = f"{r.time_pct:.1f}%" if r.time_pct is not None else "–"
            name = r.name + (f" [{r.category}]" if r.category else "")
            out.append(f"| {_code(_cut(name))} | {_val(r.total, unit)} | "
                       f"{r.count if r.count is not None else '–'} | {_val(r.avg, unit)} | "
                       f"{_val(r.med, unit)} | {share} |")
    return out


def _val(x: float | None, unit: str) -> str:
    if x is None:
        return "–"
    return _ms(x) if unit == "ns" else f"{x:,.3f} {unit}"


def summary_key_findings(v: Views) -> str:
    kern = next((s for s in v.summaries if s.report == "cuda_gpu_kern_sum" and s.rows), None)
    if kern is None:
        return ("Summary-only evidence: totals per name without a timeline; nothing here says "
                "whether the GPU idles or which host call limits it.")
    top = kern.rows[0]
    share = f"{top.time_pct:.1f}%" if top.time_pct is not None else "the largest share"
    return (f"Summary-only evidence: the top kernel {_code(_cut(top.name))} takes {share} of "
            f"the listed kernel time ({_ms(top.total or 0)} over {top.count or 0:,} instances; "
            f"{kern.artifact}, {kern.report}). Whether the GPU idles between kernels needs the "
            "timeline (the .sqlite export).")
