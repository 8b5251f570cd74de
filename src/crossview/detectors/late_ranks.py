"""late-ranks: the ranks every collective waits for, by their share of the waiting.

Reads the cross-rank analysis (views/distributed/crossrank.py): per aligned collective the
group waits from its first member's arrival to its last one's; the late ranks
(views/distributed/late_ranks.py) are those holding ≥ `late.min_share` of the job's summed
start spread (knowledge/ranks.yaml), each with why, from its own time account between
collectives against the other ranks' (views/distributed/late_cause.py). The claim owns the
time account's peer-wait row — the collective kernels spinning for a late peer, which no
change of communication removes — and its fix is the late rank's (its host, data, GPU), not
a communication setting. The verdict replays the job across ranks (verdict/replayed.py,
replay/rank_findings.py): every rank on time, the named ranks on time, every rank's host
stalls removed; the best of them is the predicted saving.
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Cite, Claim, Count, Facts, FixPart, Ns, Owns, Phrasing, Share
from crossview.detectors.account_share import AccountSlice, facts, slice_of
from crossview.detectors.common import crossed, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.knowledge.fixes import flag_text
from crossview.knowledge.loader import load_typed
from crossview.units import bandwidth
from crossview.views.device.account import PEER_WAIT
from crossview.views.distributed.late_ranks import LateRank
from crossview.views.views import Views

PATTERN = "late-ranks"
FIX = "late-rank"
GRAPHS = "late-rank-graphs"
CAUSES = (PEER_WAIT,)


class Late(Struct, frozen=True, kw_only=True):
    rank: int
    last: Count  # collectives it arrived last at
    share: Share  # of the job's summed start spread
    group_wait_ns: Ns
    exclusive_ns: Ns
    worst_ns: Ns
    worst: str
    why: str  # its cause, in the view's words ("" when unknown)


class Other(Struct, frozen=True):
    rank: int
    last: Count
    share: Share


class LateFacts(Facts, frozen=True, kw_only=True):
    named: tuple[Late, ...]
    others: tuple[Other, ...]
    spread_ns: Ns  # the groups' summed start spread
    collectives: Count
    comm_ns: tuple[Ns, Ns]  # collective kernel time per rank, least and most
    wait_ns: tuple[Ns, Ns]  # of which waiting for a peer
    transfer_ns: tuple[Ns, Ns]  # … and transferring
    busbw: str  # the busiest collective's bus bandwidth over its transfer part ("" if none)
    slice: AccountSlice | None
    clock: str
    partial: str  # "" or what is missing
    late_ranks: tuple[dict[str, object], ...]  # the view's rows, for the JSON


def who(ranks: tuple[int, ...]) -> str:
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"


def detect(v: Views) -> list[Claim]:
    job = v.ranks
    if job is None or job.late is None or not job.late.named:
        return []
    late = job.late
    named = late.named
    p = load_typed("ranks.yaml").late
    sl = slice_of(v, *CAUSES)
    waits = [c.wait_ns for c in job.comm.values()]
    comm = [c.comm_ns for c in job.comm.values()]
    xfer = [c.transfer_ns for c in job.comm.values()]
    # without an account (no steps): the ranks' summed wait against their summed kernel span
    share = (sl.share if sl is not None and sl.ns else
             sum(waits) / (sum(r.span_ns for r in job.ranks) or 1))
    cut = crossed(share, p.red_share, p.yellow_share,
                  ("ranks.yaml:late.red_share", "ranks.yaml:late.yellow_share"))
    f = LateFacts(
        named=tuple(Late(rank=r.rank, last=r.last, share=r.share, group_wait_ns=r.group_wait_ns,
                         exclusive_ns=r.exclusive_ns, worst_ns=r.worst_ns, worst=r.worst,
                         why=r.cause.text if r.cause is not None else "") for r in named),
        others=tuple(Other(r.rank, r.last, r.share) for r in late.ranks
                     if not r.named and r.group_wait_ns)[:4],
        spread_ns=late.spread_ns, collectives=late.collectives,
        comm_ns=(min(comm), max(comm)), wait_ns=(min(waits), max(waits)),
        transfer_ns=(min(xfer), max(xfer)), busbw=_busbw(v),
        slice=facts(sl) if sl is not None and sl.ns else None, clock=job.clock_note,
        partial=job.partial_note() or "" if job.partial else "",
        late_ranks=tuple(r.to_dict() for r in named))
    return [Claim(
        pattern=PATTERN, share=share, tier=cut[0] if cut else "note",
        cutoff=cut[1] if cut else None,
        owns=Owns(causes=CAUSES) if sl is not None and sl.ns else Owns(),
        fix=_fix(v, named), partial=bool(job.partial),
        cites=tuple(Cite(artifact=r.path, read="rank-arrivals", fill=(("rank", str(r.rank)),))
                    for r in job.ranks),
        facts=f)]


def _fix(v: Views, named: list[LateRank]) -> tuple[FixPart, ...]:
    """One fix part per kind of cause, naming the ranks it is for."""
    by_kind: dict[str, list[LateRank]] = {}
    for r in named:
        kind = r.cause.kind if r.cause is not None else "default"
        if kind == "host" and r.cause is not None and r.cause.stalls:
            kind = "host-stalls"
        by_kind.setdefault(kind, []).append(r)
    kind_of_job = v.parallelism.kind
    graphs = flag_text(GRAPHS, (kind_of_job,) if kind_of_job else (), v.context.has)
    out = []
    for kind, ranks in by_kind.items():
        what = "; ".join(
            f"rank {r.rank}: " + ", ".join(f"{x.label} +{ms(x.excess_ns)}"
                                           for x in r.cause.excess[:2])
            for r in ranks if r.cause is not None and r.cause.excess) or "see above"
        stalls = ", ".join(f"`{s.name[:40]}` {ms(s.self_ns)} vs a median {ms(s.median_ns)}"
                           for r in ranks if r.cause is not None for s in r.cause.stalls[:2])
        out.append(FixPart(key=FIX, flags=(kind,), fill=(
            ("who", who(tuple(r.rank for r in ranks))),
            ("its", "its" if len(ranks) == 1 else "their"), ("what", what), ("graphs", graphs),
            ("stalls", stalls if kind == "host-stalls" else
             (f" Its stalled host ops: {stalls}." if stalls else "")))))
    return tuple(out)


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


def _rank_text(r: Late, collectives: int) -> str:
    why = f" Why: {r.why}." if r.why else ""
    return (f"Rank {r.rank} arrived last at {r.last:,} of {collectives:,} collectives: the "
            f"others waited {ms(r.group_wait_ns)} for it ({pct(r.share)}), "
            f"{ms(r.exclusive_ns)} of it for it alone, longest {ms(r.worst_ns)} at "
            f"{r.worst}.{why}")


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, LateFacts)
    names = who(tuple(r.rank for r in f.named))
    shares = ", ".join(f"rank {r.rank} {pct(r.share)}" for r in f.named)
    rest = ("; the rest: " + ", ".join(f"rank {r.rank} last at {r.last:,} ({pct(r.share)})"
                                      for r in f.others)) if f.others else ""
    sl = f.slice
    obs = (f"The groups waited {ms(f.spread_ns)} in all over the {f.collectives:,} aligned "
           "collectives (each collective's start spread: from its first rank's arrival to its "
           f"last one's, summed); by who arrived last: {shares}{rest}. "
           + " ".join(_rank_text(r, f.collectives) for r in f.named)
           + f" Per rank, collective kernels ran {ms(f.comm_ns[0])}–{ms(f.comm_ns[1])}, of "
           f"which {ms(f.wait_ns[0])}–{ms(f.wait_ns[1])} waiting for a peer and "
           f"{ms(f.transfer_ns[0])}–{ms(f.transfer_ns[1])} transferring{f.busbw}."
           + (f" Per steady step the time account holds {ms(sl.ns)} ({pct(sl.share)}) of "
              "collectives spinning for a late peer with no other kernel beside them."
              if sl is not None else "")
           + f" Clock: {f.clock}."
           + (f" This analysis is {f.partial}." if f.partial else ""))
    one = len(f.named) == 1
    return Phrasing(
        title=(f"{names[0].upper() + names[1:]} arrive{'s' if one else ''} late at the "
               f"collectives: the ranks spend {pct(c.share)} of the step waiting for a late "
               f"peer ({shares} of the waiting caused)"),
        observation=obs,
        effect=(f"With {names} on time the others stop waiting up to "
                f"{ms(sum(r.group_wait_ns for r in f.named))} over the capture (the part only "
                f"{'it' if one else 'they'} held the group: "
                f"{ms(sum(r.exclusive_ns for r in f.named))})."),
        details={"late_ranks": list(f.late_ranks), "summed_start_spread_ns": f.spread_ns,
                 "collectives": f.collectives, "partial": bool(f.partial)})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("ranks.yaml:late",), fix_keys=(FIX, GRAPHS),
    about=About(side="communication"))
