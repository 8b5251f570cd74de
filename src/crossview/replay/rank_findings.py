"""The recap of a multi-rank job from the replay across ranks (replay/rank_whatif.py): the
cross-rank critical path of the job's step (set on the rank analysis, for the recap, JSON and
HTML), and the late-ranks finding's expected effect — every rank on time, the named late ranks
on time, and where their cause is host stalls, every rank's stalls removed (the fix is
node-wide: CPU binding) — with the self-check. Skipped (and said so) past
`replay.recap_max_rows` of knowledge/ranks.yaml, or when the self-check fails."""

from __future__ import annotations

import os

from crossview.core.finding import Finding
from crossview.errors import CrossviewError
from crossview.knowledge.loader import load_typed
from crossview.replay import graph as graph_mod
from crossview.replay import rank_graph, rank_levers, rank_replay, rank_whatif
from crossview.replay.gc_pause import paused
from crossview.replay.rank_whatif import RankWhatIf, Replayed
from crossview.units import duration
from crossview.views.distributed import rank_job
from crossview.views.distributed.crossrank import RankAnalysis
from crossview.views.distributed.late_ranks import LateRank
from crossview.views.distributed.rank_path import CriticalPath
from crossview.views.views import Views

PATTERN = "late-ranks"  # detectors/late_ranks.py


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
        mid = sorted(base.steps, key=lambda s: s.ns)[len(base.steps) // 2]
        job.critical_path = rank_replay.critical_path(
            base.joined, base.timing, mid, load_typed("ranks.yaml").replay.top_ops)
    return base


def annotate(v: Views, findings: list[Finding]) -> list[Finding]:
    """The late-ranks finding's expected effect from the job's joined replay."""
    job = v.ranks
    if job is None or job.late is None or len(job.ranks) < 2:
        return findings
    base = job.replayed().replay_result
    f = next((x for x in findings if x.pattern == PATTERN), None)
    if isinstance(base, Replayed) and f is not None:
        with paused():
            _effect(v, job, base, f, max((s.error for js in base.steps for s in js.ranks),
                                         default=0.0))
    return findings


def _folder(v: Views) -> str:
    paths = list(v.filter.artifacts)
    return os.path.commonpath(paths) if len(paths) > 1 else paths[0]


def _run(v: Views, job: RankAnalysis, base: Replayed, specs: list[str]) -> RankWhatIf:
    return rank_whatif.predict(v.store, job, rank_levers.parse(specs, {
        r.rank for r in job.ranks}), _folder(v), base)


def _who(ranks: list[LateRank]) -> str:
    return ("rank " if len(ranks) == 1 else "ranks ") + " and ".join(str(r.rank) for r in ranks)


def _bound(p: CriticalPath | None) -> str:
    if p is None or not p.pieces:
        return ""
    rank, ns = p.by_rank()[0]
    cause, cns = p.by_cause(rank)[0]
    share = ns / (p.ns or 1)
    return (f"; the step is then bound by rank {rank} ({share:.0%} of its critical path, "
            f"{cause} {cns / (ns or 1):.0%} of that)")


def _effect(v: Views, job: RankAnalysis, base: Replayed, f: Finding, err: float) -> None:
    assert job.late is not None
    named = job.late.named
    folder = _folder(v)
    try:
        everyone = _run(v, job, base, [rank_levers.ALL_ON_TIME])
        alone = _run(v, job, base, [f"{rank_levers.RANK_ON_TIME}={r.rank}" for r in named])
        stalls = (_run(v, job, base, ["host-stalls"]) if any(
            r.cause is not None and r.cause.stalls for r in named) else None)
    except CrossviewError:
        return  # a lever the capture cannot take: the detector's own bound stays
    meas = everyone.medians()["measured_step_ns"]

    def step(w: RankWhatIf) -> str:
        p = w.medians()["predicted_step_ns"]
        d = p - meas
        sign = "+" if d >= 0 else "−"
        return (f"{duration(meas)} → {duration(p)} ({sign}{duration(abs(d))}, "
                f"{sign}{abs(d) / meas:.1%})" if meas else duration(p))

    text = (f"Replay across the {len(job.ranks)} ranks (`crossview whatif {folder} --lever "
            f"{rank_levers.ALL_ON_TIME}`; self-check {err:.2%}, the worst rank): the job step "
            f"{step(everyone)} with every rank on time{_bound(everyone.path)}; with "
            f"{_who(named)} alone on time {step(alone)}.")
    best = everyone
    if stalls is not None:
        text += (f" Every rank's stalled host ops at their median (`--lever host-stalls`, what "
                 f"giving each rank its cores removes): {step(stalls)}{_bound(stalls.path)}.")
        if stalls.medians()["predicted_step_ns"] < best.medians()["predicted_step_ns"]:
            best = stalls
    if everyone.medians()["predicted_step_ns"] > 0.98 * meas:
        text += (" Lateness alone barely moves the step: the other ranks' own work (their "
                 "hosts, here) holds it next, so the fix must shorten that on every rank.")
    f.expected_effect = text
    f.details["replay"] = {
        "lever": "host-stalls" if best is stalls else rank_levers.ALL_ON_TIME,
        "measured_step_ns": meas,
        "predicted_step_ns": best.medians()["predicted_step_ns"],
        "selfcheck_max_step_error": err, "predicts_fix": False,
        "all_ranks_on_time_ns": everyone.medians()["predicted_step_ns"],
        "late_ranks_on_time_ns": alone.medians()["predicted_step_ns"],
        "host_stalls_ns": stalls.medians()["predicted_step_ns"] if stalls else None,
    }
