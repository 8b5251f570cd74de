"""Late ranks by share, not by vote: how long each rank's group waited for it.

Per aligned collective (views/distributed/crossrank.py) the group waits from the first
member's arrival to the last one's: the start spread. The last rank holds the group that
long, so the summed start spreads of the collectives a rank arrived last at are the time the
others waited for it, and its share of all collectives' summed spread says how much of the
job's waiting it causes. Two ranks taking turns are both named, with their shares, where a
majority vote (decision 0056) names neither. Beside it: the part only it held the group
(its start − the second-last start) and the rank-time the others spent waiting for it
(Σ over the other members of its start − theirs).

Each rank's segments — from its previous collective's end to its arrival at the next, on
its own clock — are what it did between collectives; views/distributed/late_cause.py reads
a late rank's account over them against the other ranks'. A pure function of the aligned
collectives.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crossview.knowledge.loader import load_typed
from crossview.units import duration
from crossview.views.host.host_stalls import HostStall

if TYPE_CHECKING:
    from crossview.views.distributed.aligned import AlignedCollective
    from crossview.views.distributed.ranks import RankSummary


@dataclass
class Segment:
    """What one rank did before one collective: [start_ns, arrival_ns) on its own clock."""

    collective: int  # index into RankAnalysis.collectives
    start_ns: int
    arrival_ns: int
    late_ns: int  # its arrival − the group's median arrival (≥ 0; common clock)
    last: bool  # it arrived last at this collective

    @property
    def dur_ns(self) -> int:
        return self.arrival_ns - self.start_ns


@dataclass
class CauseExcess:
    cause: str  # account row: kernel:<family>, exposed_comm, peer_wait or an idle cause id
    label: str
    ns: int  # the late rank's time in it over its late segments
    others_ns: int  # Σ over those segments of the other members' median
    frames: list[tuple[str, int]] = field(default_factory=list)  # from its longest gaps

    @property
    def excess_ns(self) -> int:
        return self.ns - self.others_ns

    def to_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "label": self.label, "ns": self.ns,
                "others_median_ns": self.others_ns, "excess_ns": self.excess_ns,
                "top_frames": [{"frame": f, "ns": n} for f, n in self.frames]}


@dataclass
class LateCause:
    kind: str  # gpu-compute | host | data | comm | uncaptured
    text: str
    segments: int  # the segments before the collectives it arrived last at
    own_ns: int  # Σ their length
    others_ns: int  # Σ the other members' median length of the same segments
    excess: list[CauseExcess]  # every row with a positive excess, largest first
    stalls: list[HostStall] = field(default_factory=list)  # its stalled host ops there

    def short(self) -> str:
        """Its largest excess rows and stalls, in a phrase (the ranks table's line)."""
        rows = ", ".join(f"{x.label} +{duration(x.excess_ns)}" for x in self.excess[:2])
        stalls = (f"; {len(self.stalls)} stalled host op{'s' if len(self.stalls) != 1 else ''}"
                  f" (longest `{self.stalls[0].name[:40]}` {duration(self.stalls[0].self_ns)})"
                  if self.stalls else "")
        return f"{self.kind}: {rows or 'nothing recorded longer than the others'}{stalls}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "text": self.text, "segments": self.segments,
                "segments_ns": self.own_ns, "others_median_segments_ns": self.others_ns,
                "excess": [x.to_dict() for x in self.excess],
                "stalls": [{"name": s.name, "self_ns": s.self_ns, "median_ns": s.median_ns,
                            "calls": s.calls} for s in self.stalls]}


@dataclass
class LateRank:
    rank: int
    path: str
    last: int  # collectives it arrived last at
    collectives: int  # aligned collectives it takes part in
    group_wait_ns: int  # Σ start spread of those: the time its group waited for it
    share: float  # of the job's summed start spread
    exclusive_ns: int  # Σ its start − the second-last start: only it held the group
    rank_wait_ns: int  # Σ over the other members of its start − theirs (rank·ns)
    worst: str  # the collective it held longest
    worst_ns: int
    named: bool  # share ≥ late.min_share and last ≥ late.min_last (knowledge/ranks.yaml)
    cause: LateCause | None = None  # why: views/distributed/late_cause.py (needs its store)

    def to_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "path": self.path, "last_at": self.last,
                "collectives": self.collectives, "group_wait_ns": self.group_wait_ns,
                "share": self.share, "exclusive_wait_ns": self.exclusive_ns,
                "rank_wait_ns": self.rank_wait_ns, "worst_collective": self.worst,
                "worst_wait_ns": self.worst_ns, "named": self.named,
                "cause": self.cause.to_dict() if self.cause is not None else None}


@dataclass
class LateRanks:
    collectives: int  # aligned collectives
    spread_ns: int  # Σ start spread over them: the time groups waited in all
    ranks: list[LateRank]  # every rank last at least once, largest share first
    segments: dict[int, list[Segment]] = field(default_factory=dict)  # rank → its segments

    @property
    def named(self) -> list[LateRank]:
        return [r for r in self.ranks if r.named]

    def to_dict(self) -> dict[str, object]:
        return {"collectives": self.collectives, "summed_start_spread_ns": self.spread_ns,
                "ranks": [r.to_dict() for r in self.ranks]}


def _median(xs: list[int]) -> float:
    s = sorted(xs)
    n = len(s)
    return float(s[n // 2]) if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def compute(collectives: list[AlignedCollective], ranks: list[RankSummary],
            offsets: dict[int, int]) -> LateRanks:
    p = load_typed("ranks.yaml").late
    paths = {r.rank: r.path for r in ranks}
    last: dict[int, int] = defaultdict(int)
    wait: dict[int, int] = defaultdict(int)
    excl: dict[int, int] = defaultdict(int)
    rank_wait: dict[int, int] = defaultdict(int)
    worst: dict[int, tuple[int, str]] = {}
    member: dict[int, int] = defaultdict(int)
    total = 0
    for c in collectives:
        for r in c.starts:
            member[r] += 1
        spread = c.start_spread_ns
        total += spread
        if spread <= 0:
            continue
        lr = c.last_rank
        order = sorted(c.starts.values())
        last[lr] += 1
        wait[lr] += spread
        excl[lr] += order[-1] - order[-2]
        rank_wait[lr] += sum(c.starts[lr] - s for r, s in c.starts.items() if r != lr)
        if spread > worst.get(lr, (-1, ""))[0]:
            worst[lr] = (spread, c.label)
    out = [LateRank(r, paths.get(r, ""), last[r], member[r], wait[r],
                    wait[r] / total if total else 0.0, excl[r], rank_wait[r], worst[r][1],
                    worst[r][0], wait[r] / total >= p.min_share and last[r] >= p.min_last
                    if total else False)
           for r in last]
    out.sort(key=lambda x: (-x.group_wait_ns, x.rank))
    return LateRanks(len(collectives), total, out,
                     _segments(collectives, ranks, offsets))


def _segments(collectives: list[AlignedCollective], ranks: list[RankSummary],
              offsets: dict[int, int]) -> dict[int, list[Segment]]:
    """Per rank, per aligned collective it takes part in: from the end of its latest
    collective that ended before this one started (else its first kernel) to its arrival."""
    first = {r.rank: r.first_ns for r in ranks}
    out: dict[int, list[Segment]] = defaultdict(list)
    ends: dict[int, list[int]] = defaultdict(list)  # own-clock ends seen so far, per rank
    order = sorted(range(len(collectives)), key=lambda i: min(collectives[i].starts.values()))
    for i in order:
        c = collectives[i]
        med = _median(list(c.starts.values()))
        lr = c.last_rank if c.start_spread_ns > 0 else None
        for r, s in c.starts.items():
            own = s - offsets[r]
            prev = max((e for e in ends[r] if e <= own), default=first.get(r, own))
            out[r].append(Segment(i, min(prev, own), own, max(0, int(s - med)), r == lr))
        for r, e in c.ends.items():
            ends[r].append(e - offsets[r])
    return dict(out)
