"""Levers across ranks, on the joined graph (replay/rank_graph.py).

`rank-on-time=R`: rank R's pre-collective delay is brought to its group's median. Per
collective, R's segment — from its previous collective's end to its arrival
(views/distributed/late_ranks.py) — is compared with the median segment of the collective's
members; where R's is longer by x, R's own critical path inside that segment (walked back
from its arrival through the unchanged replay's deciding constraints, staying on R) gives up
x, its longest pieces first (a 20 ms stall inside `aten::mm` before a launch of µs): a
node's time, the offset of the constraint that started it, or a lane's measured first start.
Segments are measured from each rank's previous collective's end, so the shortening is
incremental: a host that falls further behind at every collective gives up only what it
lost in each segment. What R does off that path, and every other rank, is unchanged.

`all-ranks-on-time`: the same for every rank at once (each against its group's median).

The single-rank levers (replay/levers/) apply to every rank, or to one with `NAME@R`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from statistics import median

from crossview.errors import UsageError
from crossview.replay import levers as lever_mod
from crossview.replay.graph import Graph
from crossview.replay.rank_graph import Joined, RankPart
from crossview.replay.replay import Timing
from crossview.views.distributed.crossrank import RankAnalysis

RANK_ON_TIME, ALL_ON_TIME = "rank-on-time", "all-ranks-on-time"
NAMES = (RANK_ON_TIME, ALL_ON_TIME)
SUMMARY = {RANK_ON_TIME: "rank R's pre-collective delay brought to its group's median",
           ALL_ON_TIME: "every rank's pre-collective delay brought to its group's median"}


@dataclass(frozen=True)
class RankLevers:
    """Parsed `--lever` specs of a multi-rank whatif."""

    per_rank: dict[int | None, list[lever_mod.LeverSpec]]  # None: every rank
    on_time: list[int | None]  # ranks brought on time (None: all of them)
    text: list[str]  # the specs as given

    def for_rank(self, rank: int) -> list[lever_mod.LeverSpec]:
        return self.per_rank.get(None, []) + self.per_rank.get(rank, [])


def parse(specs: Iterable[str], ranks: set[int]) -> RankLevers:
    per: dict[int | None, list[lever_mod.LeverSpec]] = {}
    on: list[int | None] = []
    given = []
    for text in specs:
        given.append(text)
        body, at, where = text.partition("@")
        name, _, param = body.partition("=")
        name = name.strip()
        if name in NAMES:
            if at:
                raise UsageError(f"--lever {text!r}: {name} names its rank itself "
                                 f"({RANK_ON_TIME}=R)")
            if name == ALL_ON_TIME:
                on.append(None)
                continue
            on.append(_rank(text, param, ranks))
            continue
        spec = lever_mod.parse(body)
        per.setdefault(_rank(text, where, ranks) if at else None, []).append(spec)
    return RankLevers(per, on, given)


def _rank(text: str, value: str, ranks: set[int]) -> int:
    try:
        r = int(value.strip())
    except ValueError:
        raise UsageError(f"--lever {text!r}: expected a rank number "
                         f"(ranks: {', '.join(map(str, sorted(ranks)))})") from None
    if r not in ranks:
        raise UsageError(f"--lever {text!r}: no rank {r} in this job "
                         f"(ranks: {', '.join(map(str, sorted(ranks)))})")
    return r


def on_time(j: Joined, base: Timing, job: RankAnalysis, which: list[int | None]) -> str:
    """Bring the ranks in `which` (None: all) on time, in place on j.graph; one line."""
    if job.late is None:
        return "no aligned collective: nothing to bring on time"
    targets = {p.rank for p in j.parts} if None in which else {r for r in which if r is not None}
    seg_len = {(r, s.collective): s.dur_ns for r, xs in job.late.segments.items() for s in xs}
    total = segs = 0
    for p in j.parts:
        if p.rank not in targets:
            continue
        for seg in job.late.segments.get(p.rank, []):
            arr = j.arrivals.get((seg.collective, p.rank))
            if arr is None:
                continue
            members = list(job.collectives[seg.collective].starts)
            med = median([seg_len.get((m, seg.collective), 0) for m in members])
            x = int(seg.dur_ns - med)
            if x <= 0:
                continue
            got = _shorten(j.graph, base, p, arr, seg.start_ns + p.offset_ns, x)
            total += got
            segs += 1 if got else 0
    who = "every rank" if None in which else "rank " + ", ".join(map(str, sorted(targets)))
    return (f"{who}: {segs:,} pre-collective segments longer than their group's median "
            f"shortened by {total / 1e6:.2f} ms in all (each rank's own path in them, longest "
            "pieces first)")


def _shorten(g: Graph, t: Timing, p: RankPart, arrival: int, floor: int, x: int) -> int:
    """Take up to x ns off rank p's own critical path from `arrival` back to `floor`."""
    pieces: list[tuple[int, str, int, int]] = []  # (ns, what, node, constraint index)
    i: int | None = arrival
    top = t.start[arrival]
    while i is not None and top > floor and p.rank_of(i):
        own = top - max(t.start[i], floor)
        if own > 0 and i != arrival:
            pieces.append((own, "own", i, -1))
        k = t.binding[i]
        if t.start[i] <= floor:
            break
        if k < 0:  # the lane's first node: its measured start
            pieces.append((min(t.start[i], top) - floor, "start", i, -1))
            break
        c = g.cons[i][k]
        anchor = t.end[c.pred] if c.at_end else t.start[c.pred]
        gap = min(t.start[i], top) - max(anchor, floor)
        if gap > 0 and c.offset > 0:
            pieces.append((min(gap, c.offset), "offset", i, k))
        top = min(anchor, t.start[i], top)
        i = c.pred
    left = x
    for ns, what, n, k in sorted(pieces, key=lambda q: -q[0]):
        if left <= 0:
            break
        cut = min(ns, left)
        if what == "own":
            cut = min(cut, g.dur[n])
            g.dur[n] -= cut
        elif what == "offset":
            c = g.cons[n][k]
            cut = min(cut, c.offset)
            cs = list(g.cons[n])  # replaced whole: a graph copy shares the lists (graph.py)
            cs[k] = c.__class__(c.pred, c.at_end, c.offset - cut, c.why)
            g.cons[n] = cs
        else:
            g.mstart[n] -= cut
        left -= cut
    return x - left
