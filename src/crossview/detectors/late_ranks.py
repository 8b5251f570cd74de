"""late-ranks: the ranks every collective waits for, by their share of the waiting.

Reads the cross-rank analysis (views/distributed/crossrank.py): per aligned collective the
group waits from its first member's arrival to its last one's; the late ranks
(views/distributed/late_ranks.py) are those holding ≥ `late.min_share` of the job's summed
start spread (knowledge/ranks.yaml), each with why, from its own time account between
collectives against the other ranks' (views/distributed/late_cause.py). The finding owns the
time account's peer-wait row — the collective kernels spinning for a late peer, which no
change of communication removes — and its fix is the late rank's (its host, data, GPU), not
a communication setting. The replay across ranks (replay/rank_findings.py) sets the expected
effect: the step with every rank on time.
"""

from __future__ import annotations

from crossview.core.finding import Evidence, Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.knowledge.loader import load_typed
from crossview.units import bandwidth
from crossview.views.device.account import PEER_WAIT
from crossview.views.distributed.late_ranks import LateRank
from crossview.views.views import Views

PATTERN = "late-ranks"
FIX = "late-rank"
CAUSES = (PEER_WAIT,)


def _who(ranks: list[LateRank]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0].rank}"
    return "ranks " + ", ".join(str(r.rank) for r in ranks[:-1]) + f" and {ranks[-1].rank}"


def detect(v: Views) -> list[Finding]:
    job = v.ranks
    if job is None or job.late is None or not job.late.named:
        return []
    late = job.late
    named = late.named
    p = load_typed("ranks.yaml").late
    sl = slice_of(v, *CAUSES)
    waits = {r: c.wait_ns for r, c in job.comm.items()}
    comm = {r: c.comm_ns for r, c in job.comm.items()}
    # without an account (no steps): the ranks' summed wait against their summed kernel span
    share = (sl.share if sl is not None and sl.ns else
             sum(waits.values()) / (sum(r.span_ns for r in job.ranks) or 1))
    sev = severity(share, p.red_share, p.yellow_share) or "info"
    who = _who(named)
    shares = ", ".join(f"rank {r.rank} {pct(r.share)}" for r in named)
    title = (f"{who[0].upper() + who[1:]} arrive{'s' if len(named) == 1 else ''} late at "
             f"the collectives: the ranks spend {pct(share)} of the step waiting for a late "
             f"peer ({shares} of the waiting caused)")
    per_rank = " ".join(_rank_text(r, late.collectives) for r in named)
    others = [r for r in late.ranks if not r.named and r.group_wait_ns]
    rest = ("; the rest: " + ", ".join(f"rank {r.rank} last at {r.last:,} ({pct(r.share)})"
                                      for r in others[:4])) if others else ""
    lo_w, hi_w = min(waits.values()), max(waits.values())
    xfer = [c.transfer_ns for c in job.comm.values()]
    obs = (f"The groups waited {ms(late.spread_ns)} in all over the {late.collectives:,} "
           f"aligned collectives (each collective's start spread: from its first rank's "
           f"arrival to its last one's, summed); by who arrived last: {shares}{rest}. "
           + per_rank
           + f" Per rank, collective kernels ran {ms(min(comm.values()))}–"
           f"{ms(max(comm.values()))}, of which {ms(lo_w)}–{ms(hi_w)} waiting for a peer and "
           f"{ms(min(xfer))}–{ms(max(xfer))} transferring{_busbw(v)}."
           + (f" Per steady step the time account holds {ms(sl.ns)} ({pct(sl.share)}) of "
              "collectives spinning for a late peer with no other kernel beside them."
              if sl is not None and sl.ns else "")
           + f" Clock: {job.clock_note}."
           + (f" This analysis is {job.partial_note()}." if job.partial else ""))
    return [Finding(
        pattern=PATTERN, severity=sev, title=title, observation=obs,
        fix=_fix(v, named), share=share,
        evidence=[Evidence(r.path, f"rank {r.rank}: collective kernels aligned across ranks "
                           "(start = arrival, end = completion); its time account between "
                           "collectives") for r in job.ranks],
        confidence="DRAFT" if not job.partial else "DRAFT (partial: ranks missing)",
        expected_effect=(f"With {who} on time the others stop waiting up to "
                         f"{ms(sum(r.group_wait_ns for r in named))} over the capture (the "
                         f"part only {'it' if len(named) == 1 else 'they'} held the group: "
                         f"{ms(sum(r.exclusive_ns for r in named))})."),
        details={**claims(*CAUSES), "late_ranks": [r.to_dict() for r in named],
                 "summed_start_spread_ns": late.spread_ns, "collectives": late.collectives,
                 "partial": job.partial},
    )]


def _rank_text(r: LateRank, collectives: int) -> str:
    why = f" Why: {r.cause.text}." if r.cause is not None else ""
    return (f"Rank {r.rank} arrived last at {r.last:,} of {collectives:,} collectives: the "
            f"others waited {ms(r.group_wait_ns)} for it ({pct(r.share)}), "
            f"{ms(r.exclusive_ns)} of it for it alone, longest {ms(r.worst_ns)} at "
            f"{r.worst}.{why}")


def _busbw(v: Views) -> str:
    rows = [c for c in v.comm_bandwidth.collectives if c.busbw_transfer_bytes_per_s]
    if not rows:
        return ""
    top = max(rows, key=lambda c: c.time_ns)
    of = (f", {top.pct_of_ceiling_transfer:.0f}% of {top.ceiling}"
          if top.pct_of_ceiling_transfer is not None else "")
    return (f" (busbw over the transfer part of the {top.op} calls: "
            f"{bandwidth(top.busbw_transfer_bytes_per_s or 0)}{of}; over the whole kernel "
            f"time {bandwidth(top.busbw_bytes_per_s or 0)})")


def _fix(v: Views, named: list[LateRank]) -> str:
    """One fix per kind of cause, naming the ranks it is for."""
    by_kind: dict[str, list[LateRank]] = {}
    for r in named:
        kind = r.cause.kind if r.cause is not None else "default"
        if kind == "host" and r.cause is not None and r.cause.stalls:
            kind = "host-stalls"
        by_kind.setdefault(kind, []).append(r)
    graphs = fix_for("late-rank-graphs", v.parallelism.kind)
    out = []
    for kind, ranks in by_kind.items():
        what = "; ".join(
            f"rank {r.rank}: " + ", ".join(f"{x.label} +{ms(x.excess_ns)}"
                                           for x in r.cause.excess[:2])
            for r in ranks if r.cause is not None and r.cause.excess) or "see above"
        stalls = ", ".join(f"`{s.name[:40]}` {ms(s.self_ns)} vs a median {ms(s.median_ns)}"
                           for r in ranks if r.cause is not None for s in r.cause.stalls[:2])
        out.append(fix_for(FIX, kind, who=_who(ranks), its="its" if len(ranks) == 1 else
                           "their", what=what, graphs=graphs,
                           stalls=stalls if kind == "host-stalls" else
                           (f" Its stalled host ops: {stalls}." if stalls else "")))
    return " ".join(out)


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("ranks.yaml:late",), fix_keys=(FIX, "late-rank-graphs"))
