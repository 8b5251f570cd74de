"""The cross-rank critical path of a job's step, as data: the chain of (rank, op) that sets the
step's time, walked back through the joined replay graph of all ranks
(replay/rank_graph.py, replay/rank_replay.py), with its shares by rank and by cause.

Plain records (no store, no graph), so the recap, JSON and HTML render them and the replay
fills them; times are on the job's common clock (views/distributed/clock.py).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

# the time of a collective's transfer on the path (its own cause, beside the replay's)
TRANSFER = "collective transfer (after the last rank arrived)"


@dataclass(frozen=True)
class PathPiece:
    rank: int
    start_ns: int  # common clock
    end_ns: int
    cause: str  # replay/measure.py cause labels, TRANSFER, or an offset's cause
    op: str  # the op or kernel whose time it is ("" for a gap between two)

    @property
    def ns(self) -> int:
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class PathRun:
    """Consecutive pieces on one rank: where the path stays on that rank."""

    rank: int
    start_ns: int
    end_ns: int
    top: list[tuple[str, int]]  # its longest ops (name, ns)
    causes: list[tuple[str, int]]  # its time by cause, largest first

    def to_dict(self) -> dict[str, object]:
        return {"rank": self.rank, "start_ns": self.start_ns, "end_ns": self.end_ns,
                "ns": self.end_ns - self.start_ns,
                "top_ops": [{"op": o, "ns": n} for o, n in self.top],
                "by_cause": [{"cause": c, "ns": n} for c, n in self.causes]}


@dataclass
class CriticalPath:
    step: str  # the job step: its name on the ranks (ProfilerStep#3)
    start_ns: int  # the slowest rank's step start (common clock)
    end_ns: int  # its end
    ends_on: int  # the slowest rank: where the walk starts
    pieces: list[PathPiece] = field(default_factory=list)  # time order
    top_ops: int = 3  # per run (knowledge/ranks.yaml replay.top_ops)

    @property
    def ns(self) -> int:
        return sum(p.ns for p in self.pieces)

    def by_rank(self) -> list[tuple[int, int]]:
        out: dict[int, int] = defaultdict(int)
        for p in self.pieces:
            out[p.rank] += p.ns
        return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))

    def by_cause(self, rank: int | None = None) -> list[tuple[str, int]]:
        out: dict[str, int] = defaultdict(int)
        for p in self.pieces:
            if rank is None or p.rank == rank:
                out[p.cause] += p.ns
        return sorted(out.items(), key=lambda kv: (-kv[1], kv[0]))

    def runs(self) -> list[PathRun]:
        out: list[PathRun] = []
        cur: list[PathPiece] = []
        for p in self.pieces + [PathPiece(-1, 0, 0, "", "")]:
            if cur and p.rank != cur[0].rank:
                ops: dict[str, int] = defaultdict(int)
                causes: dict[str, int] = defaultdict(int)
                for x in cur:
                    if x.op:
                        ops[x.op] += x.ns
                    causes[x.cause] += x.ns
                out.append(PathRun(cur[0].rank, cur[0].start_ns, cur[-1].end_ns,
                                   sorted(ops.items(), key=lambda kv: -kv[1])[:self.top_ops],
                                   sorted(causes.items(), key=lambda kv: -kv[1])))
                cur = []
            cur.append(p)
        return out

    def to_dict(self) -> dict[str, object]:
        total = self.ns or 1
        return {
            "step": self.step, "start_ns": self.start_ns, "end_ns": self.end_ns,
            "step_ns": self.end_ns - self.start_ns, "path_ns": self.ns,
            "slowest_rank": self.ends_on,
            "by_rank": [{"rank": r, "ns": n, "share": n / total} for r, n in self.by_rank()],
            "by_rank_cause": [{"rank": r, "by_cause": [{"cause": c, "ns": n}
                                                       for c, n in self.by_cause(r)]}
                              for r, _ in self.by_rank()],
            "chain": [r.to_dict() for r in self.runs()],
        }
