"""Helpers shared by the serving-metric detectors: evidence lines, the batch cap, units."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossview.core.finding import Evidence
from crossview.views.views import Views

if TYPE_CHECKING:  # imported where a capture has serving metrics (decision 0760)
    from crossview.views.workload.serving import ServingSummary


def where(s: ServingSummary) -> str:
    """Which scrape(s) a number covers, for observations."""
    if s.scrapes > 1:
        win = f" over {s.window_s:,.0f} s" if s.window_s else ""
        return f"{s.scrapes} scrapes{win}"
    return "1 scrape (cumulative since the engine started)"


def ev(s: ServingSummary, *metrics: str) -> list[Evidence]:
    """Evidence: the artifact and the metric names exactly as the engine exported them."""
    raw: list[str] = []
    for m in metrics:
        src = s.gauges.get(m) or s.counters.get(m) or s.histograms.get(m)
        if src is not None and src.raw_name not in raw:
            raw.append(src.raw_name)
    what = ", ".join(raw) if raw else ", ".join(metrics)
    return [Evidence(s.artifact, f"{s.engine} /metrics: {what} ({where(s)})")]


def batch_cap(v: Views, s: ServingSummary) -> tuple[float | None, str]:
    """The engine's concurrent-sequence cap: recorded (benchmark Context, --metadata or sweep
    override max_num_seqs) or, failing that, the highest running count observed."""
    for b in v.gpu_metrics.bench:
        cap = b.context.get("max_num_seqs")
        if isinstance(cap, int | float) and not isinstance(cap, bool) and cap > 0:
            return float(cap), f"max_num_seqs {int(cap)} (from {b.artifact})"
    run = s.gauges.get("requests_running")
    if run is not None and run.max > 0:
        return run.max, f"the highest running count observed ({run.max:,.0f}; cap not recorded)"
    return None, "unknown"


def fmt_s(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x * 1e3:,.1f} ms" if x < 1 else f"{x:,.2f} s"
