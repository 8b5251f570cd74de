"""low-gpu-utilization: the nsys expert rule `gpu_time_util`. Each device's GPU-op span is cut
into equal chunks (default 30); a chunk whose GPU ops keep it busy less than half the time is
flagged. The chunks show *when* the GPU starves (start-up, one phase, all along), which the
span-wide busy % of gpu-idle cannot.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Cutoff, Facts, FixPart, Index, Ns, Phrasing, Share
from crossview.detectors.common import cites, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.device import activity_gaps
from crossview.views.views import Views

PATTERN = "low-gpu-utilization"
SHOWN_RUNS = 4  # runs of low chunks named in the observation (presentation)


class DeviceChunks(Struct, frozen=True, kw_only=True):
    artifact: str
    device: int
    chunk_ns: Ns
    first_ns: int  # trace clock
    busy: tuple[Share, ...]
    flagged: tuple[Index, ...]  # the low chunks' positions


class LowUtil(Facts, frozen=True, kw_only=True):
    devices: tuple[DeviceChunks, ...]
    flagged: Count
    chunks_total: Count
    idle_ns: Ns
    chunks: Count
    low_share: Share


def detect(v: Views) -> list[Claim]:
    lim = v.limits
    per_device = activity_gaps.chunks(v, lim.gpu_util_chunks)
    span = sum(c.chunk_ns * len(c.busy) for c in per_device)
    if span <= 0:
        return []
    flagged = idle = 0
    rows: list[DeviceChunks] = []
    for c in per_device:
        low = [i for i, b in enumerate(c.busy) if b < lim.gpu_util_low_share]
        if not low:
            continue
        flagged += len(low)
        idle += int(sum((1 - c.busy[i]) * c.chunk_ns for i in low))
        rows.append(DeviceChunks(artifact=c.artifact, device=c.device, chunk_ns=c.chunk_ns,
                                 first_ns=c.first_ns, busy=tuple(c.busy), flagged=tuple(low)))
    if not flagged:
        return []
    share = idle / span
    m = v.metrics
    # when the whole span is already judged by gpu-idle, the chunks only say *when*: keep
    # them as a note (in JSON) rather than spend a mention on the same idle time twice
    span_idle = m.idle.total_ns / m.kernel_span_ns if m.kernel_span_ns else 0.0
    duplicate = span_idle >= lim.gpu_idle_yellow_share
    cut = lim.nsys_rule_yellow_share
    mention = share >= cut and not duplicate
    return [Claim(
        pattern=PATTERN, share=share, tier="consider" if mention else "note",
        cutoff=Cutoff("nsys_rule_yellow_share", cut, share) if mention else None,
        fix=(FixPart(key=PATTERN, located=True),), cites=cites(v, "util-chunks"),
        facts=LowUtil(devices=tuple(rows), flagged=flagged,
                      chunks_total=sum(len(c.busy) for c in per_device), idle_ns=idle,
                      chunks=lim.gpu_util_chunks, low_share=lim.gpu_util_low_share))]


def _runs(idx: tuple[int, ...]) -> list[tuple[int, int]]:
    """Consecutive chunk numbers as (first, last) runs."""
    out: list[tuple[int, int]] = []
    for i in idx:
        if out and i == out[-1][1] + 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, LowUtil)
    parts: list[str] = []
    for d in f.devices:
        worst = min(d.flagged, key=lambda i: d.busy[i])
        runs = _runs(d.flagged)
        where = ", ".join(f"{a + 1}–{b + 1}" if b > a else f"{a + 1}" for a, b in runs[:SHOWN_RUNS])
        parts.append(
            f"device {d.device}: {len(d.flagged)} of {len(d.busy)} chunks ({ms(d.chunk_ns)} "
            f"each) under {pct(f.low_share)} busy (chunks {where}"
            f"{', …' if len(runs) > SHOWN_RUNS else ''}); lowest chunk {worst + 1} at "
            # offset into the span first (a bare epoch-ns stamp means nothing to a reader);
            # the trace-clock value stays because `--window START:END` takes it
            f"{pct(d.busy[worst])}, starting {ms(worst * d.chunk_ns)} into the GPU-op span "
            f"(trace clock {d.first_ns + worst * d.chunk_ns} ns, for `--window`)")
    return Phrasing(
        title=f"Low GPU utilization in {f.flagged} of {f.chunks_total} "
              f"time chunks ({ms(f.idle_ns)} idle in them, {pct(c.share)} of the GPU-op span)",
        observation="GPU ops (kernels, copies, memsets) per time chunk: " + "; ".join(parts)
                    + ".",
        details={"devices": [{"artifact": d.artifact, "device": d.device,
                              "chunk_ns": d.chunk_ns, "first_ns": d.first_ns,
                              "busy": list(d.busy), "flagged": list(d.flagged)}
                             for d in f.devices],
                 "chunks": f.chunks, "low_share": f.low_share})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("gpu_idle_yellow_share", "gpu_util_chunks", "gpu_util_low_share",
                "nsys_rule_yellow_share"),
    fix_keys=(PATTERN,), summarizes=("*",), about=About(side="host"))
