"""launch-lag: every GPU op of a device starts milliseconds after its launch call returned.

A note about the capture (views/device/launch_lag.py): with even the shortest launch → start
delay at `launch_lag_min_ns` or more, the GPU ran something this capture does not hold before
it reached the captured work (or its clock is offset from the host's), so the delays, the
idle before the first op and a step stretched to the GPU's last op describe that, not the
workload."""

from __future__ import annotations

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Phrasing
from crossview.detectors.common import cites, ms
from crossview.detectors.declare import About, Declaration
from crossview.views.device import launch_lag
from crossview.views.views import Views

PATTERN = "launch-lag"


class Lag(Facts, frozen=True, kw_only=True):
    device: int
    ops: Count
    min_ns: Ns
    median_ns: Ns
    max_ns: Ns
    devices: Count


def detect(v: Views) -> list[Claim]:
    if v.metrics.cpu_only:
        return []
    lags = launch_lag.per_device(v, v.limits.launch_lag_min_ns)
    if not lags:
        return []
    x = lags[0]
    return [Claim(
        pattern=PATTERN, share=0.0, tier="note", fix=(FixPart(key=PATTERN),),
        cites=cites(v, "launch-lag"),
        facts=Lag(device=x.device, ops=x.ops, min_ns=x.min_ns, median_ns=x.median_ns,
                  max_ns=x.max_ns, devices=len(lags)))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Lag)
    more = f" ({f.devices} devices alike)" if f.devices > 1 else ""
    return Phrasing(
        title=f"Every GPU op starts ≥ {ms(f.min_ns)} after its launch call returned",
        observation=(f"On device {f.device}{more}, the {f.ops:,} GPU ops launched one by one "
                     f"(not replayed from a graph) start {ms(f.min_ns)}–{ms(f.max_ns)} after "
                     f"their launch calls return (median {ms(f.median_ns)}), where a launch "
                     "takes microseconds: the GPU ran work this capture does not hold before "
                     "it reached them (a previous step, another process), or its clock is "
                     "offset from the host's. The idle before the first GPU op and the launch "
                     "→ start delays describe that, not this workload."),
        details={"device": f.device, "ops": f.ops, "min_ns": f.min_ns,
                 "median_ns": f.median_ns, "max_ns": f.max_ns, "devices": f.devices})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("launch_lag_min_ns",), fix_keys=(PATTERN,), about=About(side="capture"))
