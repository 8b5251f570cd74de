"""Each rank's collective time split into waiting for a peer and transfer.

A collective kernel runs from its launch on this rank until every member of its group has
sent its part: on the common clock (views/distributed/clock.py) its transfer starts when the
last member arrives, L = max start, and before that this rank spins waiting. Per rank and
aligned collective: wait = min(L − start, duration), transfer = duration − wait. Summed per
rank, and the wait intervals on the rank's own clock feed the time account's peer-wait row
(views/device/account.py: the spin no other kernel runs beside), so exposed communication
is the transfer only. Busbw from the transfer part (views/distributed/comm_bandwidth.py)
measures the links, not the late peers. A pure function of the aligned collectives.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from statistics import median
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from crossview.views.distributed.peer_wait import PeerWait

if TYPE_CHECKING:
    from crossview.views.distributed.aligned import AlignedCollective

I64 = npt.NDArray[np.int64]


@dataclass
class CallSplit:
    """One collective call of one rank: its own-clock start, end and wait."""

    device: int
    start_ns: int  # own clock
    end_ns: int
    wait_ns: int

    @property
    def transfer_ns(self) -> int:
        return self.end_ns - self.start_ns - self.wait_ns


@dataclass
class RankComm:
    rank: int
    path: str
    calls: list[CallSplit] = field(default_factory=list)  # in start order

    @property
    def comm_ns(self) -> int:
        return sum(c.end_ns - c.start_ns for c in self.calls)

    @property
    def wait_ns(self) -> int:
        return sum(c.wait_ns for c in self.calls)

    @property
    def transfer_ns(self) -> int:
        return self.comm_ns - self.wait_ns

    def to_dict(self) -> dict[str, object]:
        return {"collectives_aligned": len(self.calls), "collective_ns": self.comm_ns,
                "wait_ns": self.wait_ns, "transfer_ns": self.transfer_ns,
                "wait_share": self.wait_ns / self.comm_ns if self.comm_ns else 0.0}


def split(collectives: list[AlignedCollective], paths: dict[int, str],
          offsets: dict[int, int]) -> dict[int, RankComm]:
    """Per rank, its aligned collectives' wait and transfer (ns)."""
    out = {r: RankComm(r, p) for r, p in paths.items()}
    for c in collectives:
        last = max(c.starts.values())
        for r, s in c.starts.items():
            dur = c.ends[r] - s
            wait = max(0, min(last - s, dur))
            call = c.calls.get(r)
            out[r].calls.append(CallSplit(call.device if call is not None else -1,
                                          s - offsets[r], c.ends[r] - offsets[r], wait))
    for rc in out.values():
        rc.calls.sort(key=lambda x: x.start_ns)
    return out


def peer_waits(comm: dict[int, RankComm], artifact_ids: dict[str, int]) -> list[PeerWait]:
    """The wait intervals as views/distributed/peer_wait.PeerWait records (one per rank
    artifact and device, no per-step rows), for the time account; `artifact_ids`: path →
    artifact id in the store the account reads (ranks whose file is not in it are left out)."""
    return [w for rc in comm.values() if (aid := artifact_ids.get(rc.path)) is not None
            for w in rank_peer_waits(rc, aid)]


def rank_peer_waits(rc: RankComm, artifact_id: int) -> list[PeerWait]:
    """One rank's wait intervals per device, as the artifact `artifact_id` of a store."""
    out: list[PeerWait] = []
    by_dev: dict[int, list[CallSplit]] = defaultdict(list)
    for c in rc.calls:
        by_dev[c.device].append(c)
    for dev, calls in sorted(by_dev.items()):
        hit = [c for c in calls if c.wait_ns > 0]
        ws = np.array([c.start_ns for c in hit], dtype=np.int64)
        we = np.array([c.start_ns + c.wait_ns for c in hit], dtype=np.int64)
        base = int(median([c.transfer_ns for c in calls])) if calls else 0
        out.append(PeerWait(artifact_id, rc.path, dev, len(calls), base, [], ws, we))
    return out


def transfers(comm: dict[int, RankComm], artifact_ids: dict[str, int]
              ) -> tuple[list[int], list[int], list[int]]:
    """(artifact ids, own-clock starts, transfer ns) of every aligned collective call whose
    rank file is in the store: what comm_bandwidth's busbw-from-transfer joins on."""
    a: list[int] = []
    s: list[int] = []
    t: list[int] = []
    for rc in comm.values():
        aid = artifact_ids.get(rc.path)
        if aid is None:
            continue
        for c in rc.calls:
            a.append(aid)
            s.append(c.start_ns)
            t.append(c.transfer_ns)
    return a, s, t
