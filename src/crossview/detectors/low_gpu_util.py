"""low-gpu-utilization: the nsys expert rule `gpu_time_util`. Each device's GPU-op span is cut
into equal chunks (default 30); a chunk whose GPU ops keep it busy less than half the time is
flagged. The chunks show *when* the GPU starves (start-up, one phase, all along), which the
span-wide busy % of gpu-idle cannot.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, fix_where, ms, pct
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.device import gpu_activity
from crossview.views.views import Views

PATTERN = "low-gpu-utilization"
SHOWN_RUNS = 4  # runs of low chunks named in the observation (presentation)


def detect(v: Views) -> list[Finding]:
    lim = v.limits
    per_device = gpu_activity.chunks(v.store, v.device_activity, lim.gpu_util_chunks)
    span = sum(c.chunk_ns * len(c.busy) for c in per_device)
    if span <= 0:
        return []
    flagged = idle = 0
    parts: list[str] = []
    rows = []
    for c in per_device:
        low = [i for i, b in enumerate(c.busy) if b < lim.gpu_util_low_share]
        if not low:
            continue
        flagged += len(low)
        idle += int(sum((1 - c.busy[i]) * c.chunk_ns for i in low))
        worst = min(low, key=lambda i: c.busy[i])
        runs = _runs(low)
        where = ", ".join(f"{a + 1}–{b + 1}" if b > a else f"{a + 1}" for a, b in runs[:SHOWN_RUNS])
        parts.append(
            f"device {c.device}: {len(low)} of {len(c.busy)} chunks ({ms(c.chunk_ns)} each) "
            f"under {pct(lim.gpu_util_low_share)} busy (chunks {where}"
            f"{', …' if len(runs) > SHOWN_RUNS else ''}); lowest chunk {worst + 1} at "
            # offset into the span first (a bare epoch-ns stamp means nothing to a reader);
            # the trace-clock value stays because `--window START:END` takes it
            f"{pct(c.busy[worst])}, starting {ms(worst * c.chunk_ns)} into the GPU-op span "
            f"(trace clock {c.first_ns + worst * c.chunk_ns} ns, for `--window`)")
        rows.append({"artifact": c.artifact, "device": c.device, "chunk_ns": c.chunk_ns,
                     "first_ns": c.first_ns, "busy": c.busy, "flagged": low})
    if not flagged:
        return []
    share = idle / span
    m = v.metrics
    # when the whole span is already judged by gpu-idle, the chunks only say *when*: keep
    # them as info (in JSON) rather than spend a yellow slot on the same idle time twice
    span_idle = m.idle.total_ns / m.kernel_span_ns if m.kernel_span_ns else 0.0
    duplicate = span_idle >= lim.gpu_idle_yellow_share
    return [Finding(
        pattern=PATTERN,
        severity="yellow" if share >= lim.nsys_rule_yellow_share and not duplicate else "info",
        title=f"Low GPU utilization in {flagged} of {sum(len(c.busy) for c in per_device)} "
              f"time chunks ({ms(idle)} idle in them, {pct(share)} of the GPU-op span)",
        observation="GPU ops (kernels, copies, memsets) per time chunk: " + "; ".join(parts)
                    + ".",
        fix=fix_for(PATTERN, v.engine, fix_where(v)), share=share,
        evidence=evidence(v, "GPU op intervals (kernel, memcpy, memset) per device, busy "
                             "share per time chunk"),
        details={"devices": rows, "chunks": lim.gpu_util_chunks,
                 "low_share": lim.gpu_util_low_share},
    )]


def _runs(idx: list[int]) -> list[tuple[int, int]]:
    """Consecutive chunk numbers as (first, last) runs."""
    out: list[tuple[int, int]] = []
    for i in idx:
        if out and i == out[-1][1] + 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("gpu_idle_yellow_share", "gpu_util_chunks", "gpu_util_low_share",
        "nsys_rule_yellow_share"),
    fix_keys=(PATTERN,), summarizes=("*",))
