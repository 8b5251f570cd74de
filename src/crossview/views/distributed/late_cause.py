"""Why a late rank was late: its own time account between collectives, against the others'.

Every rank's segments (views/distributed/late_ranks.py: from its previous collective's end to
its arrival at the next one, own clock) go through the time account (views/device/account.py)
as if each were a step: busy time by kernel family, idle time by what the launching host
thread was doing. Collectives end together, so a late rank's segment is longer than the
others' by about its lateness; per account row, its time over the segments before the
collectives it arrived last at minus the median of the other members over the same segments
is the excess that made it late. The rows holding most of the excess name the kind of cause
(knowledge/ranks.yaml `late.kinds`: its GPU computing longer, its host, data loading, another
collective, or time nothing recorded), and so the fix (fixes.yaml `late-rank`).

Host ops inside those segments whose own time is ≥ `late.stall_min_ns` and ≥ `late.stall_ratio`
× the median of the same op on that rank are stalls: a µs-class op (aten::empty) taking tens
of ms is a thread descheduled or blocked, not computing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median
from typing import TYPE_CHECKING

from crossview.knowledge import causes
from crossview.knowledge.loader import load_typed
from crossview.scope.step_detect import Step, StepSet
from crossview.store.store import Store
from crossview.units import duration
from crossview.views.device import account
from crossview.views.distributed.late_ranks import CauseExcess, LateCause, LateRanks, Segment
from crossview.views.distributed.peer_wait import PeerWait
from crossview.views.host.host_stalls import HostStall, stalls

if TYPE_CHECKING:
    from crossview.views.device.shared_reads import SharedReads
    from crossview.views.distributed.aligned import AlignedCollective
    from crossview.views.distributed.ranks import RankSummary

GPU_COMPUTE, HOST = "gpu-compute", "host"


def _rows(s: account.StepAccount) -> dict[str, int]:
    out = {account.BUSY_PREFIX + f: v for f, v in s.busy_by_family.items()}
    out[account.EXPOSED_COMM] = s.exposed_comm_ns
    out[account.PEER_WAIT] = s.peer_wait_ns
    out.update(s.idle_by_cause)
    return {k: v for k, v in out.items() if v}


def _label(key: str) -> str:
    if key.startswith(account.BUSY_PREFIX):
        return f"GPU busy: {key[len(account.BUSY_PREFIX):]} kernels"
    labels = {c.id: c.label for c in causes.rules().causes}
    return labels.get(key) or account.BUSY_LABELS.get(key, key)


def _kind(key: str) -> str:
    if key.startswith(account.BUSY_PREFIX):
        return GPU_COMPUTE
    kinds = load_typed("ranks.yaml").late.kinds
    return next((k for k, ids in kinds.items() if key in ids), HOST)


@dataclass
class RankSegments:
    """One rank's time account over its segments (collective index → rows; the frames its
    longest gaps name, by cause) and its stalled host ops in the segments before the
    collectives it arrived last at: the small record a worker ships back (rank_task.py)."""

    rank: int
    rows: dict[int, dict[str, int]] = field(default_factory=dict)
    frames: dict[int, dict[str, dict[str, int]]] = field(default_factory=dict)
    stalls: list[HostStall] = field(default_factory=list)


def rank_segments(store: Store, artifact_id: int, rank: int, path: str,
                  segments: list[Segment], waits: list[PeerWait], with_stalls: bool,
                  scoped: bool = True, reads: SharedReads | None = None) -> RankSegments:
    """The account of one rank's segments, read from its own store (`scoped`: the filter's
    tables, else all rows: a worker's store; reads: shared with the views' account, scoped
    only)."""
    out = RankSegments(rank)
    steps = [Step(artifact_id, path, k + 1, seg.collective, f"segment {seg.collective}",
                  seg.start_ns, seg.arrival_ns)
             for k, seg in enumerate(segments) if seg.dur_ns > 0]
    # a segment's longest gaps name frames only where a named late rank arrived last
    # (combine reads no other rank's frames): the rest skip them (Megatron: 620 → 8 segments)
    gaps_for = {seg.collective for seg in segments if seg.last} if with_stalls else set()
    acc = account.compute(store, StepSet("segments", steps), None, None, waits, gaps_for,
                          reads=reads if scoped else None) if steps else None
    # a cause whose time has no host frame (unexplained, capture boundary) names none
    named_frames = {x.id for x in causes.rules().causes if x.frames != "none"}
    for dev in acc.per_device if acc is not None else []:
        if dev.artifact != path:
            continue
        for s in dev.steps:
            rows = out.rows.setdefault(s.step, {})
            for c, v in _rows(s).items():
                rows[c] = rows.get(c, 0) + v
            fr = out.frames.setdefault(s.step, {})
            for g in s.top_gaps:
                if g.cause in named_frames:
                    for call in g.calls:
                        by = fr.setdefault(g.cause, {})
                        by[call.frame] = by.get(call.frame, 0) + call.ns
    if with_stalls:
        p = load_typed("ranks.yaml").late
        out.stalls = _stalls(store, artifact_id, [x for x in segments if x.last],
                             p.stall_min_ns, p.stall_ratio, scoped)
    return out


def explain(store: Store, late: LateRanks, collectives: list[AlignedCollective],
            ranks: list[RankSummary], artifact_ids: dict[str, int], waits: list[PeerWait],
            scoped: bool = True, reads: SharedReads | None = None) -> dict[int, LateCause]:
    """Per named late rank: why it was late (every rank whose file is in this store read);
    reads: what the segment accounts share with the views' own (shared_reads.py)."""
    if not late.named:
        return {}
    named = {r.rank for r in late.named}
    per: dict[int, RankSegments] = {}
    for r in ranks:
        aid = artifact_ids.get(r.path)
        if aid is not None:
            per[r.rank] = rank_segments(store, aid, r.rank, r.path, late.segments.get(r.rank, []),
                                        [w for w in waits if w.artifact_id == aid],
                                        r.rank in named, scoped, reads)
    return combine(late, collectives, per)


def combine(late: LateRanks, collectives: list[AlignedCollective],
            per: dict[int, RankSegments]) -> dict[int, LateCause]:
    """Why each named late rank was late, from every rank's segment accounts (pure)."""
    return {lr.rank: _cause(lr.rank, [s for s in late.segments.get(lr.rank, []) if s.last],
                            late, collectives, per)
            for lr in late.named if lr.rank in per}


def _cause(rank: int, segs: list[Segment], late_ranks: LateRanks,
           collectives: list[AlignedCollective], per: dict[int, RankSegments]) -> LateCause:
    p = load_typed("ranks.yaml").late
    mine: dict[str, int] = defaultdict(int)
    theirs: dict[str, float] = defaultdict(float)
    own = others = 0
    frames: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    seg_len = {(m, x.collective): x.dur_ns for m, xs in late_ranks.segments.items() for x in xs}
    me = per[rank]
    for seg in segs:
        c = seg.collective
        own += seg.dur_ns
        for k, v in me.rows.get(c, {}).items():
            mine[k] += v
        peers = [m for m in collectives[c].starts if m != rank and m in per]
        lens = [seg_len.get((m, c), 0) for m in peers]
        others += int(median(lens)) if lens else 0
        peer_rows = [per[m].rows.get(c, {}) for m in peers]
        for k in {k for r in peer_rows for k in r}:
            theirs[k] += median([r.get(k, 0) for r in peer_rows])
        for cause_id, by in me.frames.get(c, {}).items():
            for frame, ns in by.items():
                frames[cause_id][frame] += ns
    keys = set(mine) | set(theirs)
    excess = [CauseExcess(k, _label(k), mine.get(k, 0), int(theirs.get(k, 0.0)),
                          sorted(frames.get(k, {}).items(), key=lambda kv: -kv[1])[:3])
              for k in keys]
    excess = sorted((x for x in excess if x.excess_ns > 0), key=lambda x: -x.excess_ns)
    by_kind: dict[str, int] = defaultdict(int)
    for x in excess:
        by_kind[_kind(x.cause)] += x.excess_ns
    kind = max(by_kind, key=lambda k: by_kind[k]) if by_kind else "uncaptured"
    return LateCause(kind, _text(kind, segs, own, others, excess, me.stalls, p.cause_min_share,
                                 p.causes), len(segs), own, others, excess, me.stalls)


def _stalls(store: Store, aid: int, segs: list[Segment], min_ns: int, ratio: float,
            scoped: bool) -> list[HostStall]:
    if not segs:
        return []
    return stalls(store, aid, min_ns, ratio, ([x.start_ns for x in segs],
                                              [x.arrival_ns for x in segs]),
                  "f_host" if scoped else "host_ops", limit=5)


def _text(kind: str, segs: list[Segment], own: int, others: int, excess: list[CauseExcess],
          stalled: list[HostStall], min_share: float, top: int) -> str:
    n = len(segs)
    late = own - others
    head = (f"before the {n:,} collective{'s' if n != 1 else ''} it arrived last at, its "
            f"segments (from its previous collective's end to its arrival) took "
            f"{duration(own)} against a median {duration(others)} on the other ranks "
            f"(+{duration(max(late, 0))})")
    named = [x for x in excess if late > 0 and x.excess_ns >= min_share * late][:top] \
        or excess[:1]
    if not named:
        return head + "; its own account shows no row longer than the others': the lateness " \
            "lies before the capture or in work it did not record"
    parts = []
    for x in named:
        fr = ", ".join(f"`{f[:60]}` {duration(t)}" for f, t in x.frames)
        parts.append(f"{x.label} +{duration(x.excess_ns)}" + (f" ({fr})" if fr else ""))
    gpu = sum(x.excess_ns for x in excess if _kind(x.cause) == GPU_COMPUTE)
    said = {
        GPU_COMPUTE: "its GPU computed longer",
        HOST: "its GPU waited for its host",
        "data": "its host was loading data",
        "comm": "it was held in another collective",
        "uncaptured": "its GPU idled with nothing recorded on its host",
    }.get(kind, kind)
    out = f"{head}: {said} — " + "; ".join(parts)
    if kind != GPU_COMPUTE:
        out += (f"; its GPU kernels ran {'+' if gpu >= 0 else '−'}{duration(abs(gpu))} "
                "against the others (the same work)" if gpu < 0.1 * max(late, 1)
                else f"; its GPU kernels ran +{duration(gpu)} longer too")
    if stalled:
        out += ("; host ops that stalled there: " + ", ".join(
            f"`{s.name[:50]}` {duration(s.self_ns)} (median {duration(s.median_ns)} over "
            f"{s.calls:,} calls on this rank)" for s in stalled[:3])
            + " — a µs-class op taking ms is the thread descheduled or blocked, not working")
    return out
