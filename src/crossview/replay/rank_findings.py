"""The recap of a multi-rank job from the replay across ranks (replay/rank_whatif.py): the
cross-rank critical path of the job's step (set on the rank analysis, for the recap, JSON and
HTML), and the late-ranks claim's levers as typed results for the verdict
(verdict/replayed.py) — every rank on time, the named late ranks on time, and where their
cause is host stalls, every rank's stalls removed (the fix is node-wide: CPU binding) — with
the self-check. Skipped (and said so) past `replay.recap_max_rows` of knowledge/ranks.yaml,
or when the self-check fails."""

from __future__ import annotations

import os
from dataclasses import dataclass

from crossview.errors import CrossviewError
from crossview.knowledge.loader import load_typed
from crossview.replay import graph as graph_mod
from crossview.replay import rank_graph, rank_levers, rank_whatif
from crossview.replay.gc_pause import paused
from crossview.replay.rank_whatif import RankWhatIf, Replayed
from crossview.views.distributed import rank_job
from crossview.views.distributed.crossrank import RankAnalysis
from crossview.views.distributed.rank_path import CriticalPath
from crossview.views.views import Views


def replay_job(v: Views, job: RankAnalysis) -> Replayed | None:
    """The job's joined replay (RankAnalysis.replayed runs this once): sets its cross-rank
    critical path, or the note saying why there is none; the unchanged replay, or None."""
    store = v.store
    ids = rank_job.artifact_ids(store)
    cap = load_typed("ranks.yaml").replay.recap_max_rows
    n = rank_graph.rows(store, job, ids)
    if n > cap:
        job.critical_path_note = (f"not replayed: {n:,} host and GPU rows over the ranks, past "
                                  f"the recap's {cap:,} (knowledge/ranks.yaml "
                                  "replay.recap_max_rows); `crossview whatif` on the folder "
                                  "replays up to graph.max_rows")
        return None
    with paused():
        try:
            base = rank_whatif.baseline(store, job)
        except CrossviewError as e:
            job.critical_path_note = f"not replayed: {e}"
            return None
        limit = graph_mod.params()["selfcheck"]["max_step_error"]
        errs = [s.error for js in base.steps for s in js.ranks]
        if not base.steps or max(errs, default=1.0) > limit:
            job.critical_path_note = (
                "not replayed: " + ("no job step placed on the joined graph" if not base.steps
                                    else f"the self-check failed ({max(errs):.2%} > "
                                    f"{limit:.0%} on a rank)"))
            return None
        job.critical_path = base.median_path(load_typed("ranks.yaml").replay.top_ops)
    return base


def _folder(v: Views) -> str:
    paths = list(v.filter.artifacts)
    return os.path.commonpath(paths) if len(paths) > 1 else paths[0]


def _run(v: Views, job: RankAnalysis, base: Replayed, specs: list[str]) -> RankWhatIf:
    return rank_whatif.predict(v.store, job, rank_levers.parse(specs, {
        r.rank for r in job.ranks}), _folder(v), base)


@dataclass(frozen=True)
class Bound:
    """What holds a predicted job step: the rank with the most of its critical path, and
    that rank's largest cause."""

    rank: int
    share: float  # of the critical path
    cause: str
    cause_share: float  # of that rank's part


@dataclass(frozen=True)
class RankLevers:
    """The late-ranks claim's replays across the job's ranks (typed; the verdict phrases
    them): every rank on time, the named late ranks alone on time, every rank's stalled host
    ops at their median (when a named rank's cause shows stalls)."""

    ranks: int
    folder: str
    named: tuple[int, ...]
    selfcheck: float  # the worst rank's step error of the unchanged joined replay
    measured_ns: float
    everyone_ns: float
    alone_ns: float
    stalls_ns: float | None
    everyone_bound: Bound | None
    stalls_bound: Bound | None

    @property
    def best(self) -> tuple[str, float]:
        """The lever with the shortest predicted step and that step."""
        if self.stalls_ns is not None and self.stalls_ns < self.everyone_ns:
            return "host-stalls", self.stalls_ns
        return rank_levers.ALL_ON_TIME, self.everyone_ns


def levers(v: Views) -> RankLevers | None:
    """The job's rank levers replayed, or None (one rank, no late rank named, no joined
    replay, or a lever the capture cannot take)."""
    job = v.ranks
    if job is None or job.late is None or not job.late.named or len(job.ranks) < 2:
        return None
    base = job.replayed().replay_result
    if not isinstance(base, Replayed):
        return None
    named = job.late.named
    err = max((s.error for js in base.steps for s in js.ranks), default=0.0)
    with paused():
        try:
            everyone = _run(v, job, base, [rank_levers.ALL_ON_TIME])
            alone = _run(v, job, base, [f"{rank_levers.RANK_ON_TIME}={r.rank}" for r in named])
            stalls = (_run(v, job, base, ["host-stalls"]) if any(
                r.cause is not None and r.cause.stalls for r in named) else None)
        except CrossviewError:
            return None  # a lever the capture cannot take: the claim's own bound stays
    return RankLevers(
        ranks=len(job.ranks), folder=_folder(v), named=tuple(r.rank for r in named),
        selfcheck=err, measured_ns=everyone.medians()["measured_step_ns"],
        everyone_ns=everyone.medians()["predicted_step_ns"],
        alone_ns=alone.medians()["predicted_step_ns"],
        stalls_ns=stalls.medians()["predicted_step_ns"] if stalls is not None else None,
        everyone_bound=_bound(everyone.path),
        stalls_bound=_bound(stalls.path) if stalls is not None else None)


def _bound(p: CriticalPath | None) -> Bound | None:
    if p is None or not p.pieces:
        return None
    rank, ns = p.by_rank()[0]
    cause, cns = p.by_cause(rank)[0]
    return Bound(rank, ns / (p.ns or 1), cause, cns / (ns or 1))
