"""What each input holds, for the report header: timed events of a trace, the rows of an
nsys stats summary, the kernels of an Nsight Compute capture (never "1 timed events" for a
summary). Formats what the views already hold."""

from __future__ import annotations

from pathlib import Path

from crossview.render.recap_lines import artifact_line
from crossview.views.views import ArtifactInfo, Views


def holds(v: Views, info: ArtifactInfo, kind: str) -> str:
    """`kind` is the reader's (ArtifactReport.kind: kineto, nsys-stats, ncu-rep, …)."""
    reports = [s for s in v.summaries if s.artifact == info.path]
    if reports:
        return "; ".join(f"nsys stats {s.report}: {s.row_count:,} rows (totals per name, "
                         "no timeline)" for s in reports)
    if kind == "ncu-rep":
        n = info.events
        return f"{n:,} kernel launch{'es' if n != 1 else ''} profiled (Nsight Compute)"
    if kind == "ncu-csv":
        return "Nsight Compute CSV export (one launch)"
    return artifact_line(info)


def inputs_line(v: Views, kinds: dict[str, str]) -> str:
    return " · ".join(f"{Path(i.path).name}: {holds(v, i, kinds.get(i.path, ''))}"
                      for i in v.artifact_info)
