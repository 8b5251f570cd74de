"""The replay behind a finding's predicted saving (issue 16, decision 0766): each claim whose
pattern declares a lever (About.levers, or the claim's own `lever`) gets the replayed median
step with that lever applied; the late-ranks claim of a job's ranks analyzed together gets
the joined replay across ranks (`run_ranks`: every rank on time, its late ranks on time, the
ranks' host stalls removed — the best of them is its saving); a kernel-side claim with no
lever gets the unchanged replay's critical path (how much of the step GPU kernels hold
today). Typed results only: the verdict
judges and phrases them. Nothing here when the capture cannot be replayed (more than one
timeline, no host side, too large for a recap, self-check failed, lever unavailable): the
claim's own bound stands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossview.errors import CrossviewError
from crossview.store.store import Store
from crossview.verdict.cases import Case, OnPath, Replayed
from crossview.views import replay_rows
from crossview.views.views import Views

if TYPE_CHECKING:
    from crossview.replay.whatif import Baseline, Pinned, WhatIf

LATE_RANKS = "late-ranks"  # detectors/late_ranks.py


def _levers(c: Case) -> tuple[str, ...]:
    return (c.claim.lever,) if c.claim.lever else c.about.levers


def run(store: Store, cases: list[Case]) -> None:
    """Set `replay`, `same_as` or `path` on the cases a lever or the critical path speaks to
    (in place); the others keep none."""
    todo = [c for c in cases if _levers(c) or (c.about.kernel_side and c.claim.tier != "note")]
    if not todo:
        return
    # lazy: the replay's modules load only for a capture with something to replay (the
    # shipped example and a full-graph decode have nothing: ~25-35 ms of imports, issue 38)
    from crossview.replay import graph as graph_mod
    from crossview.replay.gc_pause import paused

    aid = replay_rows.replayable(store)
    cap = graph_mod.params()["graph"]["recap_max_rows"]
    if aid is None or replay_rows.op_count(store, aid) > cap:
        return  # no single timeline, or too large to replay within a recap
    with paused():
        try:
            _run(store, todo, aid)
        except CrossviewError:
            return


def run_ranks(v: Views, cases: list[Case]) -> None:
    """The late-ranks claim's replay across the job's ranks (in place)."""
    c = next((x for x in cases if x.pattern == LATE_RANKS), None)
    if c is None:
        return
    # lazy: the joined replay's modules load only for a job with late ranks (issue 38)
    from crossview.replay import rank_findings

    r = rank_findings.levers(v)
    if r is None or not r.measured_ns:
        return
    lever, predicted = r.best
    c.replay = Replayed(lever=lever, measured_ns=r.measured_ns, predicted_ns=predicted,
                        selfcheck=r.selfcheck, bound_after=(), pinned=None, pinned_first=False,
                        caveat=None, ranks=r)


def _run(store: Store, todo: list[Case], aid: int) -> None:
    # lazy: loaded by run() once there is something to replay (issue 38)
    from crossview.replay import graph as graph_mod
    from crossview.replay.levers import parse
    from crossview.replay.whatif import CaptureReplay

    # one graph, steps and baseline for every lever (replay/whatif.py CaptureReplay); its
    # warm-up / outlier steps stay out of the medians
    cap = CaptureReplay(store, aid)
    caveats = graph_mod.params()["lever_caveats"]
    side = [c for c in todo if not _levers(c)]  # read against the unchanged path
    done: dict[str, str] = {}  # lever → the pattern whose replay already says it
    base: Baseline | None = None  # the unchanged replay, shared by every lever
    pin: Pinned | None = None  # its median step's unexplained launch → start delays
    said = False  # the pinned delays explained once; later effects refer to it
    for c in todo:
        options = _levers(c)
        if not options:
            continue
        same = next((x for x in options if x in done), None)
        if same is not None:
            c.same_as = (done[same], same)
            continue
        w: WhatIf | None = None
        lever = ""
        for lever in options:
            try:
                spec = parse(lever)
                if base is None:  # step times only, unless a kernel-side claim reads the path
                    base = cap.baseline(paths=bool(side))
                    pin = cap.pinned()
                w = cap.predict([spec], base_paths=bool(side))  # with the predicted paths
                break
            except CrossviewError:
                continue  # the lever needs what this capture lacks: the next, or the bound
        if w is None:
            continue
        if not w.selfcheck_ok or not w.baseline:
            continue
        m = w.medians()
        if not m["measured_step_ns"]:
            continue
        held = pin is not None and pin.binds
        c.replay = Replayed(
            lever=lever, measured_ns=m["measured_step_ns"], predicted_ns=m["predicted_step_ns"],
            selfcheck=w.selfcheck_max_error, bound_after=tuple(w.bound_by()),
            pinned=pin if held else None, pinned_first=held and not said,
            caveat=caveats.get(lever))
        said = said or held
        done[lever] = c.pattern
    if side:
        base = base or cap.baseline()
        pin = pin or cap.pinned()
        if pin is None or not pin.binds:  # a pinned step's path says little of its kernels
            w = cap.predict([])
            path = w.bound_by()
            total = sum(ns for _, ns in path)
            if w.selfcheck_ok and path and total > 0:
                on = sum(ns for cause, ns in path if cause.startswith("GPU kernel")) / total
                for c in side:
                    c.path = OnPath(on, (path[0][0], path[0][1] / total))
