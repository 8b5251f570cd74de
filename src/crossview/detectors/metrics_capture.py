"""capture-window notes for metric captures: a GPU or engine that was idle while recorded, and
a single cumulative scrape (numbers since the engine started, warm-up included).

Info only: an idle capture is a capture problem to fix (conventions §5), never read as
"nothing to find" and never as a bottleneck.
"""

from __future__ import annotations

from crossview.core.finding import Evidence, Finding
from crossview.detectors.declare import Declaration
from crossview.detectors.serving_common import ev
from crossview.knowledge.fixes import fix_for
from crossview.views.counters.device_counters import util
from crossview.views.views import Views

PATTERN = "capture-window"


def detect(v: Views) -> list[Finding]:
    out: list[Finding] = []
    gm = v.gpu_metrics
    idle = [d for d in gm.devices if (u := util(d)) is not None
            and u < v.limits.counters_idle_util_pct]
    if idle:
        labels = "; ".join(f"{d.label} {util(d):.0f}% util"
                           + (f", {d.mean('mem_used'):,.0f} MiB used"
                              if d.mean("mem_used") is not None else "") for d in idle)
        out.append(Finding(
            pattern=PATTERN, severity="info",
            title=f"GPU idle in {len(idle)} counter group(s)",
            observation=(f"No GPU work while these counters were recorded ({labels}): they "
                         "describe an idle GPU, not the workload."),
            fix=fix_for("counters-idle", None), share=0.0,
            evidence=[Evidence(d.artifact, f"{'/'.join(d.sources)} {d.label}: "
                               + ", ".join(g.raw_names if (g := d.get("gpu_util"))
                                           else ["gr_engine_active"]))
                      for d in idle],
            rigor="L3"))
    for s in gm.serving:
        model = f" ({s.model})" if s.model else ""
        if s.idle:
            out.append(Finding(
                pattern=PATTERN, severity="info",
                title=f"{s.engine}{model} was idle when scraped",
                observation=("0 requests running or waiting, none finished, latency histograms "
                             "empty: the scrape holds no load to judge (queueing, KV use, "
                             "prefix caching and latency detectors have nothing to say)."),
                fix=fix_for("counters-idle", None), share=0.0,
                evidence=ev(s, "requests_running", "requests_waiting", "requests_finished"),
                rigor="L3"))
        elif s.scrapes <= 1:
            out.append(Finding(
                pattern=PATTERN, severity="info",
                title=f"{s.engine}{model}: one scrape, cumulative numbers",
                observation=("Counters and histograms of a single scrape count everything "
                             "since the engine started (warm-up included); gauges are one "
                             "instant."),
                fix=("Scrape before and after the load window (`# scrape_time <epoch s>` "
                     "before each scrape, docs/input-formats.md) so crossview reports the "
                     "window's rates and quantiles."),
                share=0.0, evidence=ev(s, "requests_finished"), rigor="L3"))
    return out


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("counters_idle_util_pct",),
    fix_keys=("counters-idle",))
