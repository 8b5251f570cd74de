"""Cross-rank merge: align collectives across ranks, measure skew, name the late ranks.

Pure functions of per-rank summaries (views/distributed/ranks.py): no store, so summaries
computed in worker processes merge here unchanged.

Clock: views/distributed/clock.py puts every rank on the reference (lowest) rank's clock from
the collectives' ends — a collective completes on all ranks together, while its start is what
skew measures — and states each offset with its error. Then: each rank's collective time
split into waiting for a peer and transfer (rank_comm.py), the late ranks by their share of
the time the others waited (late_ranks.py), and the majority-vote straggler (decision 0056).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crossview.views.distributed import clock as clock_mod
from crossview.views.distributed import late_ranks, rank_comm
from crossview.views.distributed.aligned import AlignedCollective
from crossview.views.distributed.collectives import CollectiveCall
from crossview.views.distributed.ranks import RankSummary

if TYPE_CHECKING:
    from crossview.views.distributed.rank_path import CriticalPath


@dataclass(frozen=True)
class MissingRank:
    path: str
    rank: int | None  # from the file name when it has one
    problem: str

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "rank": self.rank, "problem": self.problem}


@dataclass
class Straggler:
    rank: int
    collective: str  # the collective where it made the others wait longest
    skew_ns: int  # that collective's start spread
    median_skew_ns: int  # over the collectives it arrived last at
    late: int  # skewed collectives it arrived last at
    skewed: int  # skewed collectives in the job
    wait_ns: int  # sum of those collectives' start spreads
    windows: list[tuple[int, int]]  # [arrival − skew, arrival) in the rank's own clock
    cause_kind: str = ""  # gpu-compute | host | uncaptured (views/distributed/straggler_cause.py)
    cause: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "collective": self.collective, "skew_ns": self.skew_ns,
                "median_skew_ns": self.median_skew_ns, "late_collectives": self.late,
                "skewed_collectives": self.skewed, "wait_ns": self.wait_ns,
                "cause_kind": self.cause_kind, "cause": self.cause}


@dataclass
class RankAnalysis:
    ranks: list[RankSummary]
    collectives: list[AlignedCollective]
    stragglers: list[Straggler]
    clock: str  # global | collective-ends | first-collective-end (views/distributed/clock.py)
    clock_note: str
    offsets_ns: dict[int, int]
    missing: list[MissingRank]
    expected: int | None  # world size the traces declare
    notes: list[str] = field(default_factory=list)
    clock_errors_ns: dict[int, int | None] = field(default_factory=dict)
    comm: dict[int, rank_comm.RankComm] = field(default_factory=dict)  # wait vs transfer
    late: late_ranks.LateRanks | None = None  # by share of the time the others waited
    # the cross-rank critical path of the job's step, from the joined replay (set by
    # replay/rank_findings.py; None: not replayed — fan-out, too large, or no step); read it
    # through `replayed()`, which runs that replay on first use
    critical_path: CriticalPath | None = None
    # why it is missing when the replay ran no critical path
    critical_path_note: str = ""
    # runs the joined replay once (analysis.py injects replay/rank_findings.replay_job: the
    # views sit below replay/); None: nothing to run (fan-out sets the note instead)
    replayer: Callable[[], object] | None = field(default=None, repr=False, compare=False)
    replay_result: object = field(default=None, repr=False, compare=False)

    def replayed(self) -> RankAnalysis:
        """This job with its joined replay run (critical_path / critical_path_note set)."""
        run, self.replayer = self.replayer, None
        if run is not None:
            self.replay_result = run()
        return self

    @property
    def partial(self) -> bool:
        return bool(self.missing) or (self.expected is not None
                                      and len(self.ranks) < self.expected)

    def partial_note(self) -> str:
        if not self.partial:
            return ""
        have = ", ".join(str(r.rank) for r in self.ranks)
        miss = "; ".join(f"rank {m.rank if m.rank is not None else '?'} ({m.path}: "
                         f"{m.problem})" for m in self.missing)
        of = f" of {self.expected}" if self.expected else ""
        return (f"partial: {len(self.ranks)}{of} ranks analyzed (ranks {have})"
                + (f"; missing {miss}" if miss else "")
                + " — a missing rank may be the real straggler")

    def to_dict(self) -> dict[str, object]:
        self.replayed()
        skewed = [c for c in self.collectives if c.start_spread_ns > 0]
        return {
            "clock": self.clock, "clock_note": self.clock_note,
            "offsets_ns": {str(r): o for r, o in sorted(self.offsets_ns.items())},
            "ranks_present": [r.rank for r in self.ranks], "expected_ranks": self.expected,
            "missing": [m.to_dict() for m in self.missing], "partial": self.partial,
            "partial_note": self.partial_note(), "collectives_aligned": len(self.collectives),
            "max_start_spread_ns": max((c.start_spread_ns for c in skewed), default=0),
            "max_end_spread_ns": max((c.end_spread_ns for c in self.collectives), default=0),
            "notes": self.notes,
            "clock_errors_ns": {str(r): e for r, e in sorted(self.clock_errors_ns.items())},
            "late_ranks": self.late.to_dict() if self.late is not None else None,
            "critical_path": (self.critical_path.to_dict() if self.critical_path is not None
                              else None),
            "critical_path_note": self.critical_path_note,
        }


def _by_key(calls: list[CollectiveCall]) -> dict[tuple[str, str], list[CollectiveCall]]:
    out: dict[tuple[str, str], list[CollectiveCall]] = defaultdict(list)
    for c in calls:
        out[c.key].append(c)
    return out


def _align(ranks: list[RankSummary], offsets: dict[int, int], notes: list[str]
           ) -> list[AlignedCollective]:
    per_rank = {r.rank: _by_key(r.collectives) for r in ranks}
    keys = sorted({k for calls in per_rank.values() for k in calls})
    out: list[AlignedCollective] = []
    for key in keys:
        lists = {rk: calls[key] for rk, calls in per_rank.items() if key in calls}
        if len(lists) < 2:
            continue
        by_seq = all(c.seq is not None for cs in lists.values() for c in cs)
        counts = {rk: len(cs) for rk, cs in lists.items()}
        if not by_seq and len(set(counts.values())) > 1:
            notes.append(f"{key[1]} ({key[0]}): ranks recorded different numbers of calls "
                         f"({', '.join(f'rank {r}: {n}' for r, n in sorted(counts.items()))})"
                         "; matched by order up to the shortest")
        ids: dict[int, dict[int, CollectiveCall]] = defaultdict(dict)
        for rk, cs in lists.items():
            for c in cs:
                ids[c.seq if by_seq and c.seq is not None else c.index][rk] = c
        for ident, members in ids.items():
            if len(members) < 2:
                continue
            one = next(iter(members.values()))
            out.append(AlignedCollective(
                key[1], key[0], one.index, ident if by_seq else None,
                {rk: c.start_ns + offsets[rk] for rk, c in members.items()},
                {rk: c.end_ns + offsets[rk] for rk, c in members.items()}, dict(members)))
    out.sort(key=lambda c: min(c.starts.values()))
    return out


def _stragglers(coll: list[AlignedCollective], offsets: dict[int, int], min_skew_ns: int,
                min_late_share: float) -> list[Straggler]:
    skewed = [c for c in coll if c.start_spread_ns >= min_skew_ns]
    late: dict[int, list[AlignedCollective]] = defaultdict(list)
    for c in skewed:
        late[c.last_rank].append(c)
    out: list[Straggler] = []
    for rk, cs in late.items():
        if len(cs) / len(skewed) <= min_late_share:
            continue
        worst = max(cs, key=lambda c: c.start_spread_ns)
        spreads = [c.start_spread_ns for c in cs]
        windows = [(c.starts[rk] - offsets[rk] - c.start_spread_ns, c.starts[rk] - offsets[rk])
                   for c in cs]
        out.append(Straggler(rk, worst.label, worst.start_spread_ns,
                             int(statistics.median(spreads)), len(cs), len(skewed),
                             sum(spreads), windows))
    return sorted(out, key=lambda s: -s.wait_ns)


def one_job(ranks: list[RankSummary], clock: str) -> bool:
    """Do these traces look like the ranks of one job? They must declare the same world
    size; on unrelated clocks (nothing else ties them together) every collective type they
    share must also have the same number of calls on every rank. Unrelated captures passed
    together (e.g. a folder of samples) are then not merged into a fake job."""
    if len({r.world_size for r in ranks if r.world_size}) > 1:
        return False
    if clock == "global":
        return True
    counts = [{k: len(v) for k, v in _by_key(r.collectives).items()} for r in ranks]
    shared = set.intersection(*(set(c) for c in counts))
    return bool(shared) and all(len({c[k] for c in counts}) == 1 for k in shared)


def merge_ranks(summaries: list[RankSummary], missing: list[MissingRank], min_skew_ns: int,
                min_late_share: float) -> RankAnalysis | None:
    """None unless the input holds (or was meant to hold) more than one rank of one job."""
    seen: dict[int, RankSummary] = {}
    notes: list[str] = []
    for s in sorted(summaries, key=lambda s: (s.rank, s.artifact_id)):
        if s.rank in seen:
            notes.append(f"{s.path} is rank {s.rank} again (first: {seen[s.rank].path}); "
                         "ignored in the cross-rank analysis")
            continue
        seen[s.rank] = s
    ranks = list(seen.values())
    if not ranks or len(ranks) + len(missing) < 2:
        return None
    worlds = [r.world_size for r in ranks if r.world_size]
    expected = max(worlds) if worlds else None
    clk = clock_mod.align(ranks)
    offsets = clk.offsets_ns
    if not one_job(ranks, clk.kind):
        return None
    coll = _align(ranks, offsets, notes) if len(ranks) > 1 else []
    return RankAnalysis(ranks, coll, _stragglers(coll, offsets, min_skew_ns, min_late_share),
                        clk.kind, clk.note, offsets, missing, expected, notes, clk.errors_ns,
                        rank_comm.split(coll, {r.rank: r.path for r in ranks}, offsets),
                        late_ranks.compute(coll, ranks, offsets) if coll else None)
