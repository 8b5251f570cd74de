"""gpu-gap: stretches where a device runs no GPU op at all for longer than a threshold (the nsys
expert rule `gpu_gaps`, default 500 ms), each named with the host op that covers it.

gpu-idle judges the idle share and its cause; this names *where* the long holes are, so a user
can re-query them with `--window`. Kernels, memcpy and memset all count as GPU work here.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Cutoff, Facts, FixPart, Ns, Phrasing
from crossview.detectors.common import cites, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.views.device import activity_gaps
from crossview.views.views import Views

PATTERN = "gpu-gap"
SHOWN = 3


class Gap(Struct, frozen=True, kw_only=True):
    artifact: str
    device: int
    start_ns: int  # trace clock
    dur_ns: Ns
    host: str | None  # the host op covering most of the gap
    host_kind: str | None
    host_ns: Ns


class Gaps(Facts, frozen=True, kw_only=True):
    gaps: tuple[Gap, ...]
    count: Count
    total_ns: Ns
    min_gap_ns: Ns


def detect(v: Views) -> list[Claim]:
    lim = v.limits
    acts = v.device_activity
    span = sum(a.last - a.first for a in acts)
    if span <= 0:
        return []
    res = activity_gaps.gaps(v, lim.gpu_gap_min_ns)
    if not res.count:
        return []
    share = res.total_ns / span
    cut = lim.nsys_rule_yellow_share
    return [Claim(
        pattern=PATTERN, share=share, tier="consider" if share >= cut else "note",
        cutoff=Cutoff("nsys_rule_yellow_share", cut, share) if share >= cut else None,
        fix=(FixPart(key=PATTERN, located=True),), cites=cites(v, "gpu-gaps"),
        facts=Gaps(gaps=tuple(Gap(artifact=g.artifact, device=g.device, start_ns=g.start_ns,
                                  dur_ns=g.dur_ns, host=g.host,
                                  host_kind=g.host_kind, host_ns=g.host_ns)
                              for g in res.longest),
                   count=res.count, total_ns=res.total_ns, min_gap_ns=lim.gpu_gap_min_ns))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Gaps)
    parts = []
    for g in f.gaps[:SHOWN]:
        # the op covering most of the gap, with how much it covers: a 0.26 ms cudaMalloc in
        # a 1.629 s gap is no explanation of the gap (nvFuser 2025.1)
        host = (f"; host in `{short(g.host, 60)}` ({g.host_kind}) for {ms(g.host_ns)} of it"
                if g.host else "; no host event recorded meanwhile")
        parts.append(f"{ms(g.dur_ns)} on device {g.device} at {g.start_ns}–"
                     f"{g.start_ns + g.dur_ns} ns{host}")
    more = f" (+{f.count - SHOWN:,} more)" if f.count > SHOWN else ""
    return Phrasing(
        title=(f"{f.count:,} GPU gap{'s' if f.count > 1 else ''} longer than "
               f"{ms(f.min_gap_ns)} ({ms(f.total_ns)}, {pct(c.share)} of the GPU-op span)"),
        observation=(f"No kernel, memcpy or memset ran for {ms(f.total_ns)} in gaps over "
                     f"{ms(f.min_gap_ns)}: " + "; ".join(parts) + more + "."),
        details={"gaps": [{"artifact": g.artifact, "device": g.device, "start_ns": g.start_ns,
                           "dur_ns": g.dur_ns, "host": g.host} for g in f.gaps],
                 "count": f.count, "total_ns": f.total_ns, "min_gap_ns": f.min_gap_ns})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("gpu_gap_min_ns", "nsys_rule_yellow_share"),
    fix_keys=(PATTERN,), summarizes=("*",), about=About(side="host"))
