"""Assemble the cross-rank analysis of one job: per-rank summaries → merge → straggler causes.

The three steps are separate so a scale-out runner can do the per-artifact ones
(`ranks.summarize`, `straggler_cause.explain`) in workers and only `merge_ranks` centrally.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from crossview.knowledge.thresholds import Thresholds
from crossview.store.store import Store
from crossview.views.distributed import ranks as rank_views

# the merge and the straggler causes are imported where used: a single-rank capture never
# reaches them (start-up time, docs/decisions/0760)
if TYPE_CHECKING:
    from crossview.views.device.shared_reads import SharedReads
    from crossview.views.distributed.crossrank import MissingRank, RankAnalysis
    from crossview.views.distributed.peer_wait import PeerWait

# readers whose files carry one rank's timeline; a rejected one of these is a missing rank
_TRACE_KINDS = ("kineto", "nsys")


@dataclass(frozen=True)
class Rejected:
    path: str
    kind: str
    problem: str


def missing_ranks(rejected: list[Rejected]) -> list[MissingRank]:
    if not rejected:  # the usual run: the cross-rank module stays unimported
        return []
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.views.distributed.crossrank import MissingRank

    out = []
    for r in rejected:
        rank = rank_views.rank_from_name(r.path)
        if rank is not None or r.kind in _TRACE_KINDS:
            out.append(MissingRank(r.path, rank, r.problem))
    return out


def analyze_ranks(store: Store, artifacts: list[str], rejected: list[Rejected],
                  limits: Thresholds, reads: SharedReads | None = None) -> RankAnalysis | None:
    """The cross-rank analysis of the ranks among `artifacts`, or None (fewer than two).
    reads: what the late ranks' segment accounts share with the views' own account."""
    ids = store.sql(
        "SELECT artifact_id FROM artifacts WHERE status = 'ok' AND kind IN (SELECT unnest($k))"
        " AND path IN (SELECT unnest($p)) ORDER BY 1",
        {"k": list(_TRACE_KINDS), "p": artifacts}).fetchall()
    missing = missing_ranks(rejected)
    # cheap gate first: a single-rank capture pays nothing for the cross-rank machinery
    ranked = {r for (a,) in ids if (r := rank_views.identify(store, int(a))[1]) is not None}
    if not ranked or len(ranked) + len(missing) < 2:
        return None
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.views.distributed import straggler_cause
    from crossview.views.distributed.crossrank import merge_ranks

    summaries = [s for (a,) in ids if (s := rank_views.summarize(store, int(a))) is not None]
    if not summaries:
        return None
    job = merge_ranks(summaries, missing, limits.straggler_min_skew_ns,
                      limits.straggler_min_late_share)
    if job is None:
        return None
    by_rank = {r.rank: r for r in job.ranks}
    for st in job.stragglers:
        c = straggler_cause.explain(store, by_rank[st.rank].artifact_id, st.windows,
                                    limits.straggler_gpu_busy_share)
        st.cause_kind, st.cause = c.kind, c.text
    explain_late(store, job, reads=reads)
    return job


def artifact_ids(store: Store) -> dict[str, int]:
    """path → artifact id of the store's readable artifacts (a rank's file in this store)."""
    return {str(p): int(a) for p, a in store.sql(
        "SELECT path, artifact_id FROM artifacts WHERE status = 'ok'").fetchall()}


def peer_waits(store: Store, job: RankAnalysis) -> list[PeerWait]:
    """The job's collective waits for peers, for the ranks whose file is in this store."""
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.views.distributed import rank_comm

    return rank_comm.peer_waits(job.comm, artifact_ids(store))


def transfers(store: Store, job: RankAnalysis) -> tuple[list[int], list[int], list[int]]:
    """(artifact ids, own-clock starts, transfer ns) of the job's collective calls in this
    store: comm_bandwidth's busbw from the transfer part."""
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.views.distributed import rank_comm

    return rank_comm.transfers(job.comm, artifact_ids(store))


def explain_late(store: Store, job: RankAnalysis, scoped: bool = True,
                 reads: SharedReads | None = None) -> None:
    """Why each named late rank in this store was late (views/distributed/late_cause.py);
    reads: as `analyze_ranks`."""
    if job.late is None or not job.late.named:
        return
    # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
    from crossview.views.distributed import late_cause

    got = late_cause.explain(store, job.late, job.collectives, job.ranks, artifact_ids(store),
                             peer_waits(store, job), scoped, reads)
    for lr in job.late.ranks:
        lr.cause = got.get(lr.rank, lr.cause)
