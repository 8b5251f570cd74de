"""One replay graph over all ranks of a job: each rank's graph (replay/graph.py, built as for
`whatif` on one capture) joined at its collectives.

Per rank the graph is built through graph.build with its steps' marks, the levers meant for
it applied, its node times shifted onto the job's common clock (views/distributed/clock.py)
and its lanes named `R<rank> …`. Then each aligned collective is joined: on every member the
collective kernel node becomes its *arrival* (duration 0, still started by its own launch,
stream and event constraints), and a *transfer* node on the same stream starts when the last
member has arrived (one `collective` constraint from every member's arrival, offset 0) and
lasts that rank's measured end − the last arrival; whatever waited on the kernel's end waits
on the transfer's. Replayed unchanged, the last arrival binds and every transfer ends at its
measured end, so each rank's steps are reproduced; moved, a rank's lateness reaches every
peer through the collectives it shares with them.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from crossview.errors import CrossviewError
from crossview.knowledge.loader import load_typed
from crossview.replay import graph as graph_mod
from crossview.replay import levers as lever_mod
from crossview.replay.graph import KERNEL, Cons, Graph
from crossview.replay.lane_index import LaneIndex
from crossview.replay.levers import host_stalls
from crossview.replay.levers.common import LeverContext
from crossview.replay.steps import TAIL_LAUNCHED, TAIL_NONE, Step, marks, windows
from crossview.store.store import Store
from crossview.views import replay_rows
from crossview.views.distributed.crossrank import RankAnalysis
from crossview.views.host.host_stalls import HostStall, stalls

COLLECTIVE = "collective"  # Cons.why of a transfer on each member's arrival
ARRIVAL, TRANSFER = "arrival", "transfer"  # node tags


@dataclass
class RankPart:
    rank: int
    artifact_id: int
    path: str
    lo: int  # its nodes are [lo, hi) of the joined graph, its transfer nodes included
    hi: int
    offset_ns: int  # added to its own timestamps
    steps: list[Step]  # on the common clock, lanes prefixed
    steps_from: str
    unsteady: dict[str, str]
    prefix: str
    changes: list[str] = field(default_factory=list)  # what its levers changed
    # its own graph's step marks, keyed as in the joined graph, valued by its own node index
    # (rank_replay slices a rank without scanning every rank's marks); None: not kept
    at: LaneIndex | None = None
    end_at: LaneIndex | None = None
    # per node of its slice, its kernels' launch constraints (rank_replay._slice): the same
    # for every replay of the joins sharing this part (levers keep nodes, preds and kinds)
    launch_cons: list[list[Cons]] | None = field(default=None, repr=False, compare=False)

    def rank_of(self, node: int) -> bool:
        return self.lo <= node < self.hi


@dataclass
class Joined:
    graph: Graph
    parts: list[RankPart]
    # (collective index, rank) → its arrival / transfer node
    arrivals: dict[tuple[int, int], int]
    transfers: dict[tuple[int, int], int]
    notes: list[str] = field(default_factory=list)

    def part_of(self, node: int) -> RankPart:
        return self.parts[bisect.bisect_right([p.lo for p in self.parts], node) - 1]


def rows(store: Store, job: RankAnalysis, ids: Mapping[str, int]) -> int:
    """host + GPU rows of every rank in the store: the joined graph's size."""
    return sum(replay_rows.op_count(store, ids[r.path]) for r in job.ranks if r.path in ids)


@dataclass
class RankInput:
    """One rank's own replay graph and steps, built once (levers are applied to copies)."""

    rank: int
    artifact_id: int
    path: str
    steps_from: str
    steps: list[Step]
    unsteady: dict[str, str]
    graph: Graph
    stalls: list[HostStall] | None = None  # read when a host-stalls lever first needs them


def inputs(store: Store, job: RankAnalysis, ids: Mapping[str, int]
           ) -> tuple[list[RankInput], list[str]]:
    """Each rank's graph (the ranks whose file is in the store: `ids` path → artifact id)."""
    out: list[RankInput] = []
    notes: list[str] = []
    for r in job.ranks:
        aid = ids.get(r.path)
        if aid is None:
            notes.append(f"rank {r.rank} ({r.path}) is not in this store: left out")
            continue
        how, steps, flagged = windows(store, aid)
        out.append(RankInput(r.rank, aid, r.path, how, steps, flagged,
                             graph_mod.build(store, aid, marks(steps))))
    return out, notes


def build(store: Store, job: RankAnalysis, ids: Mapping[str, int],
          specs: Mapping[int, list[lever_mod.LeverSpec]] | None = None,
          ctx: LeverContext | None = None,
          made: tuple[list[RankInput], list[str]] | None = None) -> Joined:
    """The joined graph of the ranks whose file is in the store (`ids`: path → artifact id);
    `specs`: levers per rank (applied to a copy of that rank's graph before the join);
    `made`: the ranks' graphs when already built (`inputs`)."""
    g = Graph()
    parts: list[RankPart] = []
    arrivals: dict[tuple[int, int], int] = {}
    transfers: dict[tuple[int, int], int] = {}
    ranks, notes = made or inputs(store, job, ids)
    notes = list(notes)
    present = {x.rank for x in ranks}
    for r in ranks:
        own, steps, how, flagged, aid = r.graph, r.steps, r.steps_from, r.unsteady, r.artifact_id
        changed, changes = _levered(store, r, (specs or {}).get(r.rank, []), ctx)
        off = job.offsets_ns.get(r.rank, 0)
        prefix = f"R{r.rank} "
        lo, at, end_at = _append(g, changed, prefix, off)
        ops = {changed.op_ref[i]: i for i in range(len(changed))
               if changed.kind[i] == KERNEL and changed.op_ref[i] is not None}
        for ci, c in enumerate(job.collectives):
            call = c.calls.get(r.rank)
            i = ops.get(call.gpu_op_id) if call is not None else None
            if i is None or len(present & set(c.calls)) < 2:
                continue  # a collective no other rank here takes part in keeps its duration
            last = max(c.starts.values())
            scale = changed.dur[i] / own.dur[i] if own.dur[i] else 1.0  # a lever's change
            t = g.add(KERNEL, g.lane[lo + i], g.name[lo + i],
                      int(max(0, c.ends[r.rank] - last) * scale), last, g.family[lo + i],
                      None, g.nbytes[lo + i])
            g.tags[t] = {TRANSFER}
            arrivals[(ci, r.rank)] = lo + i
            transfers[(ci, r.rank)] = t
        # a step ends with its range unless its kernels run past it (decision 0806); across
        # ranks a rank's host may outrun its GPU once a peer moves, so every ranged step
        # follows the kernels launched inside it (the same end where they finished before)
        shifted = [Step(s.name, prefix + s.lane if s.lane else "", s.start_ns + off,
                        s.end_ns + off,
                        None if s.range_end_ns is None else s.range_end_ns + off,
                        TAIL_LAUNCHED if s.tail == TAIL_NONE and s.lane else s.tail)
                   for s in steps]
        parts.append(RankPart(r.rank, aid, r.path, lo, len(g), off, shifted, how, flagged,
                              prefix, changes, at, end_at))
    if not transfers:
        raise CrossviewError("the ranks share no collective the replay graphs hold: nothing "
                             "joins them")
    _redirect(g, arrivals, transfers)
    for (ci, _rk), t in transfers.items():
        c = job.collectives[ci]
        here = {m: arrivals[(ci, m)] for m in c.calls if (ci, m) in arrivals}
        # a member missing from the store: its lateness past the present ones stays fixed
        extra = max(c.starts.values()) - max(c.starts[m] for m in here)
        g.cons[t] = [Cons(a, True, extra, COLLECTIVE) for a in here.values()]
    for n in arrivals.values():
        g.dur[n] = 0
        g.tags[n] = g.tags[n] | {ARRIVAL}  # replaced: the set is the rank graph's
    return Joined(g, parts, arrivals, transfers, notes)


def relevered(base: Joined, made: list[RankInput], store: Store,
              specs: Mapping[int, list[lever_mod.LeverSpec]]) -> Joined | None:
    """`build` with per-rank levers that change only node durations (a lever module's
    `DURATIONS_ONLY`), from a copy of the unchanged join: each rank's levers run on a copy of
    its own graph, as `build` runs them, and the durations they changed are written at its
    nodes in the join — no rebuild of every rank's nodes, constraints and transfers (Megatron,
    host-stalls on 8 ranks: ~0.09 s). None where a rebuild is needed: a lever that may change
    more, or a changed kernel (its transfer node scales with it)."""
    if not all(getattr(lever_mod.MODULES[s.name], "DURATIONS_ONLY", False)
               for mine in specs.values() for s in mine):
        return None
    g = base.graph.copy()
    by_rank = {r.rank: r for r in made}
    parts: list[RankPart] = []
    for p in base.parts:
        mine = specs.get(p.rank, [])
        r = by_rank.get(p.rank)
        if not mine or r is None:
            parts.append(p)
            continue
        own = r.graph
        sub, changes = _levered(store, r, mine, None)
        for i, (was, now) in enumerate(zip(own.dur, sub.dur, strict=True)):
            if was != now:
                if sub.kind[i] == KERNEL:
                    return None
                g.dur[p.lo + i] = now
        parts.append(replace(p, changes=changes))
    return Joined(g, parts, base.arrivals, base.transfers, base.notes)


def _levered(store: Store, r: RankInput, mine: list[lever_mod.LeverSpec],
             ctx: LeverContext | None) -> tuple[Graph, list[str]]:
    """Rank r's graph under its levers (a copy; its own graph when it has none) and what
    each changed; its host stalls read once, when a host-stalls lever first needs them."""
    if not mine:
        return r.graph, []
    changed = r.graph.copy()
    if any(s.name == host_stalls.NAME for s in mine) and r.stalls is None:
        r.stalls = stalls_of(store, r.artifact_id)
    base = ctx or LeverContext()
    rctx = LeverContext(base.roofline, base.bound, stalls=r.stalls)
    return changed, [f"rank {r.rank}: {s}: "
                     + lever_mod.MODULES[s.name].apply(changed, s.param, rctx) for s in mine]


def stalls_of(store: Store, aid: int) -> list[HostStall]:
    """The artifact's host stalls (views/host/host_stalls.py), for the host-stalls lever."""
    p = load_typed("ranks.yaml").late
    return stalls(store, aid, p.stall_min_ns, p.stall_ratio)


def _append(g: Graph, sub: Graph, prefix: str, off: int
            ) -> tuple[int, LaneIndex, LaneIndex]:
    """Copy `sub`'s nodes into `g`, lanes prefixed and times shifted; returns the first index
    and sub's step marks keyed as in `g` (valued by sub's own node index). (The parallel lists
    are extended whole: a rank's graph holds ~10⁴–10⁵ nodes.)"""
    lo = len(g)
    g.kind.extend(sub.kind)
    g.lane.extend(prefix + x for x in sub.lane)
    g.name.extend(sub.name)
    g.dur.extend(sub.dur)
    g.mstart.extend(x + off for x in sub.mstart)
    new = tuple.__new__  # Cons without its Python-level __new__ (10⁵ constraints a rank)
    g.cons.extend([new(Cons, (c[0] + lo, c[1], c[2], c[3])) for c in cs] for cs in sub.cons)
    g.family.extend(sub.family)
    g.tags.extend(sub.tags)  # shared with the rank's graph: a tag is added by replacing the set
    g.nbytes.extend(sub.nbytes)
    g.op_ref.extend(sub.op_ref)
    at, end_at = sub.at.shifted(prefix, off), sub.end_at.shifted(prefix, off)
    g.at.merge(at.shifted("", 0, lo))
    g.end_at.merge(end_at.shifted("", 0, lo))
    g.notes.extend(sub.notes)
    return lo, at, end_at


def _redirect(g: Graph, arrivals: dict[tuple[int, int], int],
              transfers: dict[tuple[int, int], int]) -> None:
    """What waited on a collective kernel's end (its stream's next op, an event wait, a sync)
    waits on its transfer's end."""
    to = {arrivals[k]: t for k, t in transfers.items()}
    for cs in g.cons:
        for k, c in enumerate(cs):
            if c.at_end and c.pred in to:
                cs[k] = Cons(to[c.pred], True, c.offset, c.why)
