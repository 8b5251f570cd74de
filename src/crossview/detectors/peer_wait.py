"""peer-wait: a step's collective kernels spun waiting for a peer rank (one rank's trace).

Reads views/distributed/peer_wait.py: the steps issuing the same collectives are compared,
and a step whose collectives ran ≥ `peer_wait_step_min_share` of its wall time beyond their
shortest runs is named. The wait is the peer's lateness seen from this rank — its own row of
the time account, not communication this rank's fixes remove — so the finding is a note that
says which trace to read next. Where several ranks are analyzed together, the cross-rank
straggler finding (detectors/nccl_straggler.py) names the late rank instead.
"""

from __future__ import annotations

import statistics

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, ms, pct
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.device.account import PEER_WAIT
from crossview.views.distributed.peer_wait import PeerWait, StepWait
from crossview.views.views import Views

PATTERN = "peer-wait"


def detect(v: Views) -> list[Finding]:
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
    more = [x for x in named if x is not worst]
    also = ("; steps " + ", ".join(f"{x.number} ({ms(x.wait_ns)})" for x in more)
            + " wait too") if more else ""
    return [Finding(
        pattern=PATTERN, severity="info",
        title=(f"Step {worst.number} waited {ms(worst.wait_ns)} in collectives for "
               f"{_peer(v, w)}" + (f" ({len(named)} steps wait)" if len(named) > 1 else "")),
        observation=(
            f"{len(w.steps)} steps issue the same {w.calls:,} collective kernels "
            f"(device {w.device}); in step {worst.number} they ran {ms(worst.comm_ns)} "
            f"(median call {ms(worst.median_call_ns)}), {ms(worst.wait_ns)} beyond each "
            "one's shortest run, where " + _typical(others, w) + also
            + f". The run beyond each collective's shortest run over the steps is this rank "
            "spinning until the peer arrived (a lower bound: a wait every step shares "
            f"stays in the shortest run). This rank's step {worst.number} took "
            f"{ms(worst.wall_ns)}"
            + (f" against a median {ms(_median([x.wall_ns for x in others]))}" if others
               else "")
            + "; the job's step lasts as long as its slowest rank's, whose own trace says what "
            "held it."
            + (f" The time account keeps the waits no other kernel ran beside as their own row "
               f"({ms(row.ns)} per steady step, {pct(row.share_of_step)}), apart from the "
               "communication this rank's fixes remove." if row is not None else "")),
        fix=fix_for(PATTERN, None), share=0.0,
        evidence=evidence(v, "collective kernels per step in start order, each against the "
                             "same collective's shortest run over the steps"),
        details={"artifact": w.artifact, "device": w.device, "calls": w.calls,
                 "steps": [{"step": x.number, "wait_ns": x.wait_ns, "comm_ns": x.comm_ns}
                           for x in named]},
    )]


def _peer(v: Views, w: PeerWait) -> str:
    """'its peer (rank N of 2)' when the job has one other rank and this one's is known, else
    'a peer rank'."""
    info = next((a for a in v.artifact_info if a.path == w.artifact), None)
    ranks = set(range(info.world_size or 0)) if info is not None else set()
    if info is None or info.rank not in ranks or len(ranks - {info.rank}) != 1:
        return "a peer rank"
    (peer,) = ranks - {info.rank}
    return f"its peer (rank {peer} of {len(ranks)})"


def _typical(others: list[StepWait], w: PeerWait) -> str:
    if not others:
        return f"the shortest runs have a median of {ms(w.baseline_median_ns)}"
    return (f"the other {len(others)} ran a median {ms(_median([x.comm_ns for x in others]))} "
            f"(median call {ms(_median([x.median_call_ns for x in others]))})")


def _median(xs: list[int]) -> int:
    return int(statistics.median(xs))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(),
    thresholds=("peer_wait_min_steps", "peer_wait_min_excess_ns", "peer_wait_step_min_share"),
    fix_keys=(PATTERN,))
