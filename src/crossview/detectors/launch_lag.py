"""launch-lag: every GPU op of a device starts milliseconds after its launch call returned.

A note about the capture (views/device/launch_lag.py): with even the shortest launch → start
delay at `launch_lag_min_ns` or more, the GPU ran something this capture does not hold before
it reached the captured work (or its clock is offset from the host's), so the delays, the
idle before the first op and a step stretched to the GPU's last op describe that, not the
workload."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, ms
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.device import launch_lag
from crossview.views.views import Views

PATTERN = "launch-lag"


def detect(v: Views) -> list[Finding]:
    if v.metrics.cpu_only:
        return []
    lags = launch_lag.per_device(v.store, v.limits.launch_lag_min_ns)
    if not lags:
        return []
    x = lags[0]
    more = f" ({len(lags)} devices alike)" if len(lags) > 1 else ""
    return [Finding(
        pattern=PATTERN, severity="info",
        title=f"Every GPU op starts ≥ {ms(x.min_ns)} after its launch call returned",
        observation=(f"On device {x.device}{more}, the {x.ops:,} GPU ops launched one by one "
                     f"(not replayed from a graph) start {ms(x.min_ns)}–{ms(x.max_ns)} after "
                     f"their launch calls return (median {ms(x.median_ns)}), where a launch "
                     "takes microseconds: the GPU ran work this capture does not hold before "
                     "it reached them (a previous step, another process), or its clock is "
                     "offset from the host's. The idle before the first GPU op and the launch "
                     "→ start delays describe that, not this workload."),
        fix=fix_for(PATTERN, None), share=0.0,
        evidence=evidence(v, "GPU op start − its launch call's end, ops with a recorded launch"),
        details={"device": x.device, "ops": x.ops, "min_ns": x.min_ns,
                 "median_ns": x.median_ns, "max_ns": x.max_ns, "devices": len(lags)},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("launch_lag_min_ns",), fix_keys=(PATTERN,))
