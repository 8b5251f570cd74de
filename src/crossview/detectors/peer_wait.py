"""peer-wait: a step's collective kernels spun waiting for a peer rank (one rank's trace).

Reads views/distributed/peer_wait.py: the steps issuing the same collectives are compared,
and a step whose collectives ran ≥ `peer_wait_step_min_share` of its wall time beyond their
shortest runs is named. The wait is the peer's lateness seen from this rank — its own row of
the time account, not communication this rank's fixes remove — so the claim is a note that
says which trace to read next. Where several ranks are analyzed together, the cross-rank
straggler claim (detectors/nccl_straggler.py) names the late rank instead.
"""

from __future__ import annotations

import statistics

from msgspec import Struct

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Phrasing, Share
from crossview.detectors.common import cites, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.device.account import PEER_WAIT
from crossview.views.distributed.peer_wait import PeerWait
from crossview.views.views import Views

PATTERN = "peer-wait"


class StepWait(Struct, frozen=True, kw_only=True):
    number: int
    wait_ns: Ns
    comm_ns: Ns
    median_call_ns: Ns
    wall_ns: Ns


class PeerWaits(Facts, frozen=True, kw_only=True):
    artifact: str
    device: int
    calls: Count
    steps: Count  # steps issuing the same collectives
    worst: StepWait
    named: tuple[StepWait, ...]  # the waiting steps (the worst among them)
    others: tuple[StepWait, ...]
    baseline_median_ns: Ns
    peer: int | None  # the one other rank, when the job has two and this one's is known
    world: Count | None
    row_ns: Ns | None  # the account's peer-wait row per steady step
    row_share: Share | None


def _peer(v: Views, w: PeerWait) -> tuple[int | None, int | None]:
    """(the peer's rank, the world size) when the job has one other rank and this one's is
    known, else (None, None)."""
    info = next((a for a in v.artifact_info if a.path == w.artifact), None)
    ranks = set(range(info.world_size or 0)) if info is not None else set()
    if info is None or info.rank not in ranks or len(ranks - {info.rank}) != 1:
        return None, None
    (peer,) = ranks - {info.rank}
    return peer, len(ranks)


def detect(v: Views) -> list[Claim]:
    # late ranks named by their share of the waiting (detectors/late_ranks.py) own that time
    if v.metrics.cpu_only or (v.ranks is not None and (
            v.ranks.stragglers or (v.ranks.late is not None and v.ranks.late.named))):
        return []
    lim = v.limits
    hits = [(w, x) for w in v.peer_wait for x in w.steps
            if x.wait_ns >= lim.peer_wait_step_min_share * x.wall_ns]
    if not hits:
        return []
    w, worst = max(hits, key=lambda h: h[1].wait_ns)
    named = [x for pw, x in hits if pw is w]
    others = [x for x in w.steps if x not in named]
    row = v.account.slice(PEER_WAIT) if v.account is not None else None
    peer, world = _peer(v, w)

    def sw(x) -> StepWait:  # noqa: ANN001
        return StepWait(number=x.number, wait_ns=x.wait_ns, comm_ns=x.comm_ns,
                        median_call_ns=x.median_call_ns, wall_ns=x.wall_ns)

    return [Claim(
        pattern=PATTERN, share=0.0, tier="note", fix=(FixPart(key=PATTERN),),
        cites=cites(v, "peer-wait"),
        facts=PeerWaits(artifact=w.artifact, device=w.device, calls=w.calls, steps=len(w.steps),
                        worst=sw(worst), named=tuple(sw(x) for x in named),
                        others=tuple(sw(x) for x in others),
                        baseline_median_ns=w.baseline_median_ns, peer=peer, world=world,
                        row_ns=row.ns if row is not None else None,
                        row_share=row.share_of_step if row is not None else None))]


def _median(xs: list[int]) -> int:
    return int(statistics.median(xs))


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, PeerWaits)
    worst = f.worst
    more = [x for x in f.named if x != worst]
    peer = (f"its peer (rank {f.peer} of {f.world})" if f.peer is not None else "a peer rank")
    typical = (f"the other {len(f.others)} ran a median "
               f"{ms(_median([x.comm_ns for x in f.others]))} (median call "
               f"{ms(_median([x.median_call_ns for x in f.others]))})" if f.others else
               f"the shortest runs have a median of {ms(f.baseline_median_ns)}")
    also = ("; steps " + ", ".join(f"{x.number} ({ms(x.wait_ns)})" for x in more)
            + " wait too") if more else ""
    return Phrasing(
        title=(f"Step {worst.number} waited {ms(worst.wait_ns)} in collectives for {peer}"
               + (f" ({len(f.named)} steps wait)" if len(f.named) > 1 else "")),
        observation=(
            f"{f.steps} steps issue the same {f.calls:,} collective kernels "
            f"(device {f.device}); in step {worst.number} they ran {ms(worst.comm_ns)} "
            f"(median call {ms(worst.median_call_ns)}), {ms(worst.wait_ns)} beyond each "
            "one's shortest run, where " + typical + also
            + ". The run beyond each collective's shortest run over the steps is this rank "
            "spinning until the peer arrived (a lower bound: a wait every step shares "
            f"stays in the shortest run). This rank's step {worst.number} took "
            f"{ms(worst.wall_ns)}"
            + (f" against a median {ms(_median([x.wall_ns for x in f.others]))}" if f.others
               else "")
            + "; the job's step lasts as long as its slowest rank's, whose own trace says what "
            "held it."
            + (f" The time account keeps the waits no other kernel ran beside as their own row "
               f"({ms(f.row_ns)} per steady step, {pct(f.row_share or 0.0)}), apart from the "
               "communication this rank's fixes remove." if f.row_ns is not None else "")),
        details={"artifact": f.artifact, "device": f.device, "calls": f.calls,
                 "steps": [{"step": x.number, "wait_ns": x.wait_ns, "comm_ns": x.comm_ns}
                           for x in f.named]})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(),
    thresholds=("peer_wait_min_steps", "peer_wait_min_excess_ns", "peer_wait_step_min_share"),
    fix_keys=(PATTERN,), about=About(side="communication"))
