"""`crossview whatif` on the ranks of one job (a folder of rank traces): the joined graph of
all ranks (replay/rank_graph.py) replayed unchanged — the self-check, every rank's steps
against its measured ones — then under the levers (replay/rank_levers.py): rank R on time,
all ranks on time, a single-rank lever on one rank or all. Per job step: measured, replayed
and predicted time (the earliest rank's start to the latest rank's end), per rank its steps,
wait and transfer, and the cross-rank critical path of the predicted step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from statistics import median
from typing import Any

from crossview.errors import InputError
from crossview.knowledge.loader import load_typed
from crossview.knowledge.thresholds import defaults
from crossview.replay import graph as graph_mod
from crossview.replay import rank_graph, rank_levers, rank_replay
from crossview.replay.gc_pause import paused
from crossview.replay.levers.common import LeverContext
from crossview.replay.rank_replay import JobStep, RankStep
from crossview.replay.replay import Timing, moved, replay
from crossview.store.store import Store
from crossview.views import captures, replay_rows
from crossview.views.distributed import rank_job
from crossview.views.distributed import ranks as rank_views
from crossview.views.distributed.crossrank import RankAnalysis, merge_ranks
from crossview.views.distributed.rank_path import CriticalPath


@dataclass
class RankWhatIf:
    capture: str
    levers: list[str]
    changes: list[str]
    ranks: list[int]
    clock_note: str
    measured: list[tuple[str, int]]  # per job step: (name, measured ns)
    baseline: list[JobStep]  # the unchanged replay
    predicted: list[JobStep]
    selfcheck_limit: float
    # the critical path of the median predicted job step, or how to walk it: walked when
    # first read (the recap reads two of its three levers' paths; measure.StepResult's way)
    walked: CriticalPath | None | Callable[[], CriticalPath | None]
    base_path: CriticalPath | None  # of the median unchanged job step
    nodes: int = 0
    nodes_moved: int = 0  # non-wait nodes the unchanged replay moves off their measured start
    notes: list[str] = field(default_factory=list)
    # inputs read beside the ranks that were rejected (path, problems), as WhatIf's
    rejected: list[tuple[str, list[str]]] = field(default_factory=list)

    @property
    def path(self) -> CriticalPath | None:
        if callable(self.walked):
            self.walked = self.walked()
        return self.walked

    @property
    def rank_errors(self) -> dict[int, float]:
        """Per rank, the largest error of its replayed steps against its measured ones."""
        out: dict[int, float] = {}
        for js in self.baseline:
            for s in js.ranks:
                out[s.rank] = max(out.get(s.rank, 0.0), s.error)
        return out

    @property
    def selfcheck_max_error(self) -> float:
        return max(self.rank_errors.values(), default=0.0)

    @property
    def selfcheck_ok(self) -> bool:
        return bool(self.baseline) and self.selfcheck_max_error <= self.selfcheck_limit

    def medians(self) -> dict[str, float]:
        def med(xs: list[int]) -> float:
            return float(median(xs)) if xs else 0.0
        return {"measured_step_ns": med([ns for _, ns in self.measured]),
                "baseline_step_ns": med([s.ns for s in self.baseline]),
                "predicted_step_ns": med([s.ns for s in self.predicted]),
                "steps": float(len(self.baseline))}

    def per_rank(self, steps: list[JobStep]) -> dict[int, list[RankStep]]:
        out: dict[int, list[RankStep]] = {}
        for js in steps:
            for s in js.ranks:
                out.setdefault(s.rank, []).append(s)
        return out

    def to_dict(self) -> dict[str, Any]:
        ok = self.selfcheck_ok
        m = self.medians()
        base, pred = self.per_rank(self.baseline), self.per_rank(self.predicted)
        return {
            "capture": self.capture, "units": "ns", "levers": self.levers,
            "changes": self.changes, "ranks": self.ranks, "clock": self.clock_note,
            "selfcheck": {"max_step_error": self.selfcheck_max_error,
                          "limit": self.selfcheck_limit, "ok": ok,
                          "per_rank": {str(r): e for r, e in sorted(self.rank_errors.items())},
                          "nodes": self.nodes, "nodes_moved": self.nodes_moved},
            "job_steps": [{"name": n, "measured_ns": meas, "replayed_ns": b.ns,
                           "predicted_ns": p.ns if ok else None,
                           "slowest_rank": b.ends_on,
                           "predicted_slowest_rank": p.ends_on if ok else None}
                          for (n, meas), b, p in zip(self.measured, self.baseline,
                                                      self.predicted, strict=False)],
            "per_rank": [{"rank": r, "steps": [
                {**b.to_dict(), "predicted_ns": p.predicted_ns if ok else None,
                 "predicted_wait_ns": p.wait_ns if ok else None,
                 "predicted_transfer_ns": p.transfer_ns if ok else None}
                for b, p in zip(base[r], pred.get(r, []), strict=False)]}
                for r in sorted(base)],
            "median": m if ok else {"measured_step_ns": m["measured_step_ns"],
                                    "predicted_step_ns": None},
            "critical_path": self.path.to_dict() if ok and self.path else None,
            "baseline_critical_path": self.base_path.to_dict() if self.base_path else None,
            "notes": self.notes,
        } | ({"rejected": [{"path": p, "problems": why} for p, why in self.rejected]}
             if self.rejected else {})


def job_of(store: Store, ids: list[int]) -> RankAnalysis | None:
    """The ranks of one job among these artifacts (as analyze finds them), or None."""
    lim = defaults()
    summaries = [s for a in ids if (s := rank_views.summarize(store, a, scoped=False))]
    if len(summaries) < 2:
        return None
    return merge_ranks(summaries, [], lim.straggler_min_skew_ns, lim.straggler_min_late_share)


@dataclass
class Replayed:
    """The joined graph replayed unchanged (what every lever is compared with), and the
    ranks' own graphs it was built from (levers are applied to copies of them)."""

    joined: rank_graph.Joined
    timing: Timing
    steps: list[JobStep]
    moved: int
    made: tuple[list[rank_graph.RankInput], list[str]]
    _paths: dict[int, CriticalPath | None] = field(default_factory=dict, repr=False)

    def median_path(self, top_ops: int) -> CriticalPath | None:
        """The critical path of the median job step (walked once: the recap and every
        lever's prediction read the same one)."""
        if top_ops not in self._paths:
            mid = _median_step(self.steps)
            self._paths[top_ops] = (rank_replay.critical_path(self.joined, self.timing, mid,
                                                              top_ops) if mid else None)
        return self._paths[top_ops]


def _replayed(j: rank_graph.Joined, made: tuple[list[rank_graph.RankInput], list[str]]
              ) -> Replayed:
    t = replay(j.graph)
    return Replayed(j, t, rank_replay.job_steps(j, rank_replay.rank_steps(j, t)),
                    moved(j.graph, t), made)


def baseline(store: Store, job: RankAnalysis) -> Replayed:
    ids = rank_job.artifact_ids(store)
    made = rank_graph.inputs(store, job, ids)
    return _replayed(rank_graph.build(store, job, ids, made=made), made)


def predict(store: Store, job: RankAnalysis, specs: rank_levers.RankLevers, capture: str,
            base: Replayed | None = None) -> RankWhatIf:
    """Baseline and predicted job steps under the levers. `base`: the unchanged replay when
    already computed (the recap replays several levers on one graph)."""
    top = _top_ops()
    base = base or baseline(store, job)
    changes: list[str] = []
    with_levers = base
    if any(specs.per_rank.values()):  # single-rank levers: on copies of the ranks' graphs
        per = {r.rank: specs.for_rank(r.rank) for r in base.made[0]}
        changed = rank_graph.relevered(base.joined, base.made[0], store, per) \
            or rank_graph.build(store, job, rank_job.artifact_ids(store), per,
                                LeverContext(), base.made)
        # the same nodes and constraints less the dropped ones: the unchanged join's order
        # holds (replay.py checks it as it goes)
        changed.graph.order = base.joined.graph.order
        with_levers = _replayed(changed, base.made)
        changes += [c for p in with_levers.joined.parts for c in p.changes]
    joined = with_levers.joined
    t = with_levers.timing
    pred = with_levers.steps
    if specs.on_time:
        joined = rank_graph.Joined(joined.graph.copy(), joined.parts, joined.arrivals,
                                   joined.transfers, joined.notes)
        changes.append(rank_levers.on_time(joined, with_levers.timing, job, specs.on_time))
        t = replay(joined.graph)
        pred = rank_replay.job_steps(joined, rank_replay.rank_steps(joined, t))
    limit = graph_mod.params()["selfcheck"]["max_step_error"]
    mid = _median_step(pred)
    w = RankWhatIf(capture, specs.text, changes, [p.rank for p in base.joined.parts],
                   job.clock_note, rank_replay.measured_job_steps(base.joined), base.steps,
                   pred, limit,
                   partial(rank_replay.critical_path, joined, t, mid, top) if mid else None,
                   base.median_path(top),
                   len(base.joined.graph), base.moved, list(base.joined.notes))
    if not base.steps:
        w.notes.append("no job step could be placed on the graph (a rank's steps are missing)")
    return w


def _median_step(steps: list[JobStep]) -> JobStep | None:
    return sorted(steps, key=lambda s: s.ns)[len(steps) // 2] if steps else None


def _top_ops() -> int:
    return int(load_typed("ranks.yaml").replay.top_ops)


def run(store: Store, ids: list[int], texts: list[str], capture: str) -> RankWhatIf:
    """whatif over several timelines: they must be the ranks of one job."""
    job = job_of(store, ids)
    if job is None:
        paths = captures.paths_of(store, ids)
        raise InputError(paths[1] if len(paths) > 1 else capture,
                         f"whatif replays one timeline at a time; {len(paths)} given "
                         f"({', '.join(paths)}), and they are not the ranks of one job")
    n = sum(replay_rows.op_count(store, a) for a in ids)
    cap = graph_mod.params()["graph"]["max_rows"]
    if n > cap:
        raise InputError(capture, f"{n:,} host and GPU rows over {len(ids)} ranks: over the "
                         f"replay's limit of {cap:,} (knowledge/replay.yaml graph.max_rows)")
    specs = rank_levers.parse(texts, {r.rank for r in job.ranks})
    with paused():
        return predict(store, job, specs, capture)
