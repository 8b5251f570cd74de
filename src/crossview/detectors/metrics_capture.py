"""capture-window notes for metric captures: a GPU or engine that was idle while recorded, and
a single cumulative scrape (numbers since the engine started, warm-up included).

Notes only: an idle capture is a capture problem to fix (conventions §5), never read as
"nothing to find" and never as a bottleneck.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Cite, Claim, Facts, FixPart, MiB, Pct, Phrasing
from crossview.core.device_counters import util
from crossview.detectors.declare import About, Declaration
from crossview.detectors.serving_common import Scrapes, ev, model, scrapes
from crossview.views.views import Views

PATTERN = "capture-window"


class IdleDevice(Struct, frozen=True, kw_only=True):
    label: str
    util_pct: Pct
    mem_used_mib: MiB | None


class IdleCounters(Facts, frozen=True, kw_only=True):
    devices: tuple[IdleDevice, ...]


class ServingWindow(Facts, frozen=True, kw_only=True):
    where: Scrapes
    idle: bool  # else a single cumulative scrape


def detect(v: Views) -> list[Claim]:
    out: list[Claim] = []
    gm = v.gpu_metrics
    idle = [d for d in gm.devices if (u := util(d)) is not None
            and u < v.limits.counters_idle_util_pct]
    if idle:
        out.append(Claim(
            pattern=PATTERN, form="idle-counters", share=0.0, tier="note", rigor="L3",
            fix=(FixPart(key="counters-idle"),),
            cites=tuple(Cite(artifact=d.artifact, read="counters-group", fill=(
                ("sources", "/".join(d.sources)), ("label", d.label),
                ("names", ", ".join(g.raw_names if (g := d.get("gpu_util"))
                                    else ["gr_engine_active"])))) for d in idle),
            facts=IdleCounters(devices=tuple(IdleDevice(label=d.label, util_pct=util(d) or 0.0,
                                                        mem_used_mib=d.mean("mem_used"))
                                             for d in idle))))
    for s in gm.serving:
        if s.idle:
            out.append(Claim(
                pattern=PATTERN, form="idle-serving", share=0.0, tier="note", rigor="L3",
                fix=(FixPart(key="counters-idle"),),
                cites=ev(s, "requests_running", "requests_waiting", "requests_finished"),
                facts=ServingWindow(where=scrapes(s), idle=True)))
        elif s.scrapes <= 1:
            out.append(Claim(
                pattern=PATTERN, form="one-scrape", share=0.0, tier="note", rigor="L3",
                fix=(FixPart(key="counters-one-scrape"),), cites=ev(s, "requests_finished"),
                facts=ServingWindow(where=scrapes(s), idle=False)))
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if isinstance(f, IdleCounters):
        labels = "; ".join(f"{d.label} {d.util_pct:.0f}% util"
                           + (f", {d.mem_used_mib:,.0f} MiB used"
                              if d.mem_used_mib is not None else "") for d in f.devices)
        return Phrasing(title=f"GPU idle in {len(f.devices)} counter group(s)",
                        observation=(f"No GPU work while these counters were recorded "
                                     f"({labels}): they describe an idle GPU, not the "
                                     "workload."))
    assert isinstance(f, ServingWindow)
    w = f.where
    if f.idle:
        return Phrasing(
            title=f"{w.engine}{model(w)} was idle when scraped",
            observation=("0 requests running or waiting, none finished, latency histograms "
                         "empty: the scrape holds no load to judge (queueing, KV use, "
                         "prefix caching and latency detectors have nothing to say)."))
    return Phrasing(
        title=f"{w.engine}{model(w)}: one scrape, cumulative numbers",
        observation=("Counters and histograms of a single scrape count everything "
                     "since the engine started (warm-up included); gauges are one instant."))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("counters_idle_util_pct",),
    fix_keys=("counters-idle", "counters-one-scrape"), about=About(side="capture"))
