"""One collective as every rank ran it, on the job's common clock (views/distributed/
crossrank.py aligns them): its starts are the ranks' arrivals, its ends their completions."""

from __future__ import annotations

from dataclasses import dataclass, field

from crossview.views.distributed.collectives import CollectiveCall


@dataclass
class AlignedCollective:
    op: str
    group: str
    index: int
    seq: int | None
    starts: dict[int, int]  # rank → start on the common clock (ns)
    ends: dict[int, int]
    calls: dict[int, CollectiveCall] = field(default_factory=dict)  # rank → its call (own clock)

    @property
    def label(self) -> str:
        n = f"seq {self.seq}" if self.seq is not None else f"#{self.index + 1}"
        return f"{self.op} {n} ({self.group})"

    @property
    def start_spread_ns(self) -> int:
        return max(self.starts.values()) - min(self.starts.values())

    @property
    def end_spread_ns(self) -> int:
        return max(self.ends.values()) - min(self.ends.values())

    @property
    def last_rank(self) -> int:
        return max(self.starts, key=lambda r: (self.starts[r], -r))
