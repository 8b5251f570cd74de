"""Helpers shared by the serving-metric detectors: evidence citations, the batch cap, units."""

from __future__ import annotations

from typing import TYPE_CHECKING

from msgspec import Struct

from crossview.core.claim import Cite, Count, Seconds
from crossview.views.views import Views

if TYPE_CHECKING:  # imported where a capture has serving metrics (decision 0760)
    from crossview.views.workload.serving import ServingSummary


class Scrapes(Struct, frozen=True, kw_only=True):
    """Which scrape(s) a serving number covers."""

    engine: str
    model: str | None
    scrapes: Count
    window_s: Seconds | None


def scrapes(s: ServingSummary) -> Scrapes:
    return Scrapes(engine=s.engine, model=s.model, scrapes=s.scrapes, window_s=s.window_s)


def where(s: Scrapes) -> str:
    """(phrasing) Which scrape(s) a number covers, for observations."""
    if s.scrapes > 1:
        win = f" over {s.window_s:,.0f} s" if s.window_s else ""
        return f"{s.scrapes} scrapes{win}"
    return "1 scrape (cumulative since the engine started)"


def model(s: Scrapes) -> str:
    return f" ({s.model})" if s.model else ""


def ev(s: ServingSummary, *metrics: str) -> tuple[Cite, ...]:
    """Evidence: the artifact and the metric names exactly as the engine exported them."""
    raw: list[str] = []
    for m in metrics:
        src = s.gauges.get(m) or s.counters.get(m) or s.histograms.get(m)
        if src is not None and src.raw_name not in raw:
            raw.append(src.raw_name)
    read = ("serving-window" if s.scrapes > 1 and s.window_s else "serving-many"
            if s.scrapes > 1 else "serving-one")
    return (Cite(artifact=s.artifact, read=read, fill=(
        ("engine", s.engine), ("names", ", ".join(raw) if raw else ", ".join(metrics)),
        ("scrapes", str(s.scrapes)), ("window_s", f"{s.window_s or 0:,.0f}"))),)


def batch_cap(v: Views, s: ServingSummary) -> tuple[float | None, str, str | None]:
    """The engine's concurrent-sequence cap: recorded (benchmark Context, --metadata or sweep
    override max_num_seqs) or, failing that, the highest running count observed: (cap, where
    it comes from — "recorded" or "observed" —, the artifact that recorded it)."""
    for b in v.gpu_metrics.bench:
        cap = b.context.get("max_num_seqs")
        if isinstance(cap, int | float) and not isinstance(cap, bool) and cap > 0:
            return float(cap), "recorded", b.artifact
    run = s.gauges.get("requests_running")
    if run is not None and run.max > 0:
        return run.max, "observed", None
    return None, "unknown", None


def fmt_s(x: float | None) -> str:
    if x is None:
        return "n/a"
    return f"{x * 1e3:,.1f} ms" if x < 1 else f"{x:,.2f} s"
