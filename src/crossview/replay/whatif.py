"""`crossview whatif`: build the capture's dependency graph, self-check its unchanged replay,
apply the levers and replay again: baseline vs predicted per-step time, GPU busy and what
bounds the step."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any

from crossview.cache.read import read_inputs
from crossview.errors import InputError
from crossview.knowledge.thresholds import defaults
from crossview.replay import bounds as bounds_mod
from crossview.replay import graph as graph_mod
from crossview.replay import levers as lever_mod
from crossview.replay.gc_pause import paused
from crossview.replay.graph import Graph
from crossview.replay.levers.common import LeverContext
from crossview.replay.measure import StepResult, labels, measure, pinned
from crossview.replay.rank_graph import stalls_of
from crossview.replay.rank_whatif import run as run_ranks
from crossview.replay.replay import Timing, moved, replay
from crossview.replay.steps import Step, marks, windows
from crossview.sol.roofline import compute
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.views import captures, replay_rows
from crossview.views.counters import ncu_launches

if TYPE_CHECKING:
    from crossview.cache.settings import CacheSettings
    from crossview.replay.rank_whatif import RankWhatIf
    from crossview.views.host.host_stalls import HostStall


@dataclass
class WhatIf:
    capture: str
    steps_from: str
    baseline: list[StepResult]  # unchanged replay (self-check)
    predicted: list[StepResult]
    levers: list[str]
    changes: list[str]
    selfcheck_max_error: float
    selfcheck_limit: float
    notes: list[str] = field(default_factory=list)
    nodes: int = 0  # graph nodes
    nodes_moved: int = 0  # non-wait nodes whose unchanged replay differs from the capture
    unsteady: dict[str, str] = field(default_factory=dict)  # step → why not steady state
    # the prediction replayed at the bounds of what the levers cannot know (replay/bounds.py):
    # per bound its predicted steps; None when not computed
    bounds: dict[str, list[StepResult]] | None = None
    unknowns: list[str] = field(default_factory=list)  # what those bounds stand for
    # inputs read beside the replayed capture that were rejected (path, problems): said, as
    # analyze says them, while the timeline is still replayed (issue 43)
    rejected: list[tuple[str, list[str]]] = field(default_factory=list)

    def _steady(self, steps: list[StepResult]) -> list[StepResult]:
        """The steady-state steps (all when every step is flagged)."""
        return [s for s in steps if s.name not in self.unsteady] or steps

    @property
    def selfcheck_ok(self) -> bool:
        return self.selfcheck_max_error <= self.selfcheck_limit

    def medians(self) -> dict[str, float]:
        def med(xs: list[int]) -> float:
            return float(median(xs)) if xs else 0.0
        base, pred = self._steady(self.baseline), self._steady(self.predicted)
        return {
            "measured_step_ns": med([s.measured_ns for s in base]),
            "baseline_step_ns": med([s.predicted_ns for s in base]),
            "predicted_step_ns": med([s.predicted_ns for s in pred]),
            "baseline_gpu_busy_ns": med([s.gpu_busy_ns for s in base]),
            "predicted_gpu_busy_ns": med([s.gpu_busy_ns for s in pred]),
            "steps": float(len(base)),
        }

    def range_ns(self) -> tuple[float, float] | None:
        """(low, high) of the predicted median step over the point and its bounds."""
        if self.bounds is None:
            return None
        meds = [median([s.predicted_ns for s in self._steady(p)])
                for p in [self.predicted, *self.bounds.values()] if self._steady(p)]
        return (float(min(meds)), float(max(meds))) if meds else None

    def median_step(self) -> StepResult | None:
        """The predicted step at the median (upper middle for an even count)."""
        steady = self._steady(self.predicted)
        if not steady:
            return None
        return sorted(steady, key=lambda s: s.predicted_ns)[len(steady) // 2]

    def bound_by(self) -> list[tuple[str, float]]:
        """The median step's critical path by cause: (cause, ns), largest first."""
        mid = self.median_step()
        if mid is None:
            return []
        return sorted(((k, float(v)) for k, v in mid.path.items()), key=lambda kv: -kv[1])

    def to_dict(self) -> dict[str, Any]:
        m = self.medians()
        body: dict[str, Any] = {
            "capture": self.capture, "units": "ns", "levers": self.levers,
            "changes": self.changes, "steps_from": self.steps_from,
            "selfcheck": {"max_step_error": self.selfcheck_max_error,
                          "limit": self.selfcheck_limit, "ok": self.selfcheck_ok,
                          "nodes": self.nodes, "nodes_moved": self.nodes_moved},
            "steps": [{"name": b.name, "measured_ns": b.measured_ns,
                       "replayed_ns": b.predicted_ns,
                       "predicted_ns": p.predicted_ns if self.selfcheck_ok else None,
                       "predicted_gpu_busy_ns": p.gpu_busy_ns if self.selfcheck_ok else None,
                       "steady": b.name not in self.unsteady,
                       "not_steady_because": self.unsteady.get(b.name)}
                      for b, p in zip(self.baseline, self.predicted, strict=True)],
            "notes": self.notes,
        }
        if self.rejected:
            body["rejected"] = [{"path": p, "problems": why} for p, why in self.rejected]
        if self.selfcheck_ok:
            body["median"] = m
            rng = self.range_ns()
            body["range"] = None if rng is None else {
                "predicted_low_step_ns": rng[0], "predicted_high_step_ns": rng[1],
                "unknowns": self.unknowns}
            mid = self.median_step()
            body["critical_path"] = {"step": mid.name if mid else None,
                                     "by_cause": [{"cause": k, "ns": v}
                                                  for k, v in self.bound_by()]}
        else:
            body["median"] = {"measured_step_ns": m["measured_step_ns"], "predicted_step_ns": None}
        return body


def load(paths: list[Path], store: Store | None = None, cache: CacheSettings | None = None
         ) -> tuple[Store, int, list[ArtifactReport]]:
    """Read the capture(s) (through the capture cache when given); the artifact with a host
    side and GPU ops, and the inputs beside it that were rejected; one-line refusals."""
    store, ids, bad = timelines(paths, store, cache)
    if len(ids) > 1:
        path = captures.path_of(store, ids[1])
        raise InputError(path, f"whatif replays one timeline at a time; {len(ids)} given")
    return store, ids[0], bad


def timelines(paths: list[Path], store: Store | None = None,
              cache: CacheSettings | None = None
              ) -> tuple[Store, list[int], list[ArtifactReport]]:
    """Read the capture(s): the artifacts with a host side and GPU ops (several: the ranks
    of a job, replay/rank_whatif.py), and the inputs beside them that were rejected;
    one-line refusals."""
    store = store or Store()
    reports = (read_all(paths, store) if cache is None
               else read_inputs(paths, store, cache).reports)
    # files that are not captures (a bundle's *_cmd.txt) are skipped, as analyze skips them;
    # a rejected or partial file beside a whole timeline is reported and the timeline
    # replayed; a partial timeline alone is refused: a replay of half of one predicts nothing
    bad = [r for r in reports if r.status not in ("ok", "skipped")]
    rows = captures.holdings(store)
    found = [aid for aid, _path, _kind, host, gpu, _summ in rows if host and gpu]
    if found:
        return store, found, bad
    if bad:
        raise InputError(bad[0].path, "; ".join(bad[0].problems))
    what = ", ".join(str(p) for p in paths)
    if any(summ and not gpu for *_, gpu, summ in rows):
        raise InputError(what, "summary-only input (nsys stats CSV): no timeline to "
                         "replay; whatif needs a Kineto trace or an nsys report/SQLite with "
                         "CUDA API and GPU rows")
    if any(gpu and not host for *_, host, gpu, _s in rows):
        raise InputError(what, "no host side (no CUDA runtime/driver API calls): whatif "
                         "cannot tell when kernels were launched or what the host waited on")
    raise InputError(what, "no GPU timeline (kernels, copies) with host API calls: "
                     "nothing to replay")


def run(paths: list[Path], specs: list[str], store: Store | None = None,
        cache: CacheSettings | None = None, ranges: bool = False) -> WhatIf | RankWhatIf:
    """One timeline: its replay; several: the ranks of one job replayed together
    (replay/rank_whatif.py), else a refusal. ranges: also replay the levers at the bounds of
    what they cannot know (WhatIf.bounds)."""
    store, ids, bad = timelines(paths, store, cache)
    if len(ids) > 1:
        job = run_ranks(store, ids, specs, ", ".join(str(p) for p in paths))
        job.rejected = [(r.path, list(r.problems)) for r in bad]
        return job
    aid = ids[0]
    path = captures.path_of(store, aid)
    n, cap = replay_rows.op_count(store, aid), graph_mod.params()["graph"]["max_rows"]
    if n > cap:
        raise InputError(path, f"{n:,} host and GPU rows: over the replay's limit of {cap:,} "
                         "(knowledge/replay.yaml graph.max_rows); capture fewer steps")
    cap = CaptureReplay(store, aid)
    with paused():
        parsed = [lever_mod.parse(s) for s in specs]
        roof = _roofline(store)
        stalls = (_stalls(store, aid) if any(s.name == "host-stalls" for s in parsed)
                  else None)
        w = cap.predict(parsed, str(path), roof, stalls=stalls)
        if ranges and parsed and w.selfcheck_ok:
            w.bounds, w.unknowns = bounds_mod.replay_bounds(cap.graph, cap.steps, parsed, roof,
                                                            stalls)
        pin = cap.pinned()
    w.rejected = [(r.path, list(r.problems)) for r in bad]
    if pin is not None and pin.binds and w.selfcheck_ok:
        w.notes.append(pin.text())
    return w


@dataclass
class Baseline:
    """The unchanged replay of a graph over its steps: what every lever is compared with
    (one per graph: the recap replays several levers on the same graph)."""
    steps: list[StepResult]
    moved: int  # non-wait nodes whose unchanged replay differs from the capture
    max_error: float  # the self-check: largest step error of the unchanged replay
    timing: Timing | None = None  # the unchanged replay itself


def baseline(g: Graph, steps: list[Step], paths: bool = True) -> Baseline:
    """paths: as measure's (the critical paths of the unchanged steps)."""
    timing = replay(g)
    base = measure(g, timing, steps, paths)
    err = max((abs(s.predicted_ns - s.measured_ns) / s.measured_ns for s in base
               if s.measured_ns), default=0.0)
    return Baseline(base, moved(g, timing), err, timing)


@dataclass(frozen=True)
class Pinned:
    """The median steady step of the unchanged replay and the time of its critical path held
    at unexplained launch → start delays (measure.pinned)."""
    step: str
    pinned_ns: int
    step_ns: int

    @property
    def share(self) -> float:
        return self.pinned_ns / self.step_ns if self.step_ns else 0.0

    @property
    def binds(self) -> bool:
        """The delays bound the replay: levers move only the rest of the step."""
        return self.share >= graph_mod.params()["graph"]["pinned_share_min"]

    def text(self) -> str:
        return (f"The replay holds {self.pinned_ns / 1e6:.2f} ms of {self.step} "
                f"({self.share:.1%} of the step) at measured launch → GPU start delays it "
                "cannot attribute (GPU work queued behind a dependency the replay graph does "
                "not hold: another stream's work it could not match, another device or "
                "process, a peer rank, the host staging a copy); no lever moves them, so a "
                "replayed gain is a lower bound.")

    def again(self) -> str:
        return (f"The same {self.pinned_ns / 1e6:.2f} ms of unattributed launch → GPU "
                "start delays hold this replay too: a lower bound.")


def pinned_of(g: Graph, base: Baseline, steps: list[Step], unsteady_steps: dict[str, str]
              ) -> Pinned | None:
    """Pinned time of the unchanged replay's median steady step (upper middle)."""
    steady = [s for s in base.steps if s.name not in unsteady_steps] or base.steps
    if not steady or base.timing is None:
        return None
    mid = sorted(steady, key=lambda s: s.predicted_ns)[len(steady) // 2]
    k = next((i for i, s in enumerate(steps) if s.name == mid.name), None)
    if k is None:
        return None
    ns = pinned(g, base.timing, steps, k, graph_mod.params()["graph"]["pinned_lag_min_ns"])
    return Pinned(mid.name, ns, mid.predicted_ns)


def predict(g: Graph, steps: list[Step], steps_from: str, specs: list[lever_mod.LeverSpec],
            capture: str = "", roofline: dict[str, tuple[float, str]] | None = None,
            base: Baseline | None = None, paths: bool = True,
            stalls: list[HostStall] | None = None) -> WhatIf:
    """base: the graph's unchanged replay over these steps, when already computed; paths:
    walk the critical paths (False: the WhatIf's `bound_by` is empty); stalls: the capture's
    host stalls (the host-stalls lever)."""
    base = base or baseline(g, steps, paths)
    limit = graph_mod.params()["selfcheck"]["max_step_error"]
    changed = g.copy()
    ctx = LeverContext(roofline or {}, stalls=stalls)
    changes = [f"{s}: " + lever_mod.MODULES[s.name].apply(changed, s.param, ctx)
               for s in specs]
    pred = measure(changed, replay(changed), steps, paths) if specs else base.steps
    notes = list(g.notes)
    if not base.steps:
        notes.append("no step could be placed on the graph")
    return WhatIf(capture, steps_from, base.steps, pred, [str(s) for s in specs], changes,
                  base.max_error, limit, notes, len(g), base.moved)


def _stalls(store: Store, aid: int) -> list[HostStall]:
    return stalls_of(store, aid)


def _roofline(store: Store) -> dict[str, tuple[float, str]]:
    """Achieved fraction of the roofline ceiling (the nearer of the FLOP/s and DRAM-bandwidth
    ceilings) per ncu-profiled kernel name, when the store holds ncu rows."""
    if not captures.holds_ncu(store):
        return {}


    paths = captures.readable_paths(store)
    out: dict[str, tuple[float, str]] = {}
    for k in compute(ncu_launches.read(store, paths), defaults()):
        pcts = [(x, kind) for x, kind in ((k.pct_of_peak_flops, "compute"),
                                          (k.pct_of_peak_dram_bw, "memory")) if x is not None]
        if pcts:
            pct, kind = max(pcts)
            out[k.name] = (pct / 100, kind)
    return out


class CaptureReplay:
    """One capture's replay, shared by every lever set predicted on it: its steps and
    dependency graph are built once, its unchanged replay (the self-check every prediction is
    compared with) and the delays that pin it computed once (the recap's findings and
    `crossview whatif` both predict through it; issue 38). Graph, steps and baseline are
    read-only to callers: a prediction replays a copy."""

    def __init__(self, store: Store, artifact_id: int) -> None:
        self.store = store
        self.artifact_id = artifact_id
        self._base: Baseline | None = None
        self._base_paths = False
        self._pinned: tuple[Pinned | None] | None = None

    @cached_property
    def _windows(self) -> tuple[str, list[Step], dict[str, str]]:
        return windows(self.store, self.artifact_id)

    @property
    def steps_from(self) -> str:
        """How the steps were found (the recap's steps table's phrase)."""
        return self._windows[0]

    @property
    def steps(self) -> list[Step]:
        return self._windows[1]

    @property
    def unsteady(self) -> dict[str, str]:
        """Step name → why it is not steady state (warm-up, outlier, …)."""
        return self._windows[2]

    @cached_property
    def graph(self) -> Graph:
        g = graph_mod.build(self.store, self.artifact_id, marks(self.steps))
        labels(g)  # before any lever copies it: every copy shares them (one pass, not one each)
        return g

    def baseline(self, paths: bool = True) -> Baseline:
        """The unchanged replay; `paths`: with each step's critical path (walked on the kept
        replay when a first call did without)."""
        if self._base is None:
            self._base, self._base_paths = baseline(self.graph, self.steps, paths), paths
        elif paths and not self._base_paths and self._base.timing is not None:
            walked = measure(self.graph, self._base.timing, self.steps, True)
            self._base = Baseline(walked, self._base.moved, self._base.max_error,
                                  self._base.timing)
            self._base_paths = True
        return self._base

    def pinned(self) -> Pinned | None:
        """The unchanged replay's median steady step's unexplained launch → start delays."""
        if self._pinned is None:
            self._pinned = (pinned_of(self.graph, self.baseline(self._base_paths), self.steps,
                                      self.unsteady),)
        return self._pinned[0]

    def predict(self, specs: list[lever_mod.LeverSpec], capture: str = "",
                roofline: dict[str, tuple[float, str]] | None = None,
                paths: bool = True, base_paths: bool = True,
                stalls: list[HostStall] | None = None) -> WhatIf:
        """The levers applied to a copy of the graph, replayed against the baseline (walked
        with critical paths when `base_paths`); `unsteady` set from the steps."""
        w = predict(self.graph, self.steps, self.steps_from, specs, capture, roofline,
                    base=self.baseline(base_paths), paths=paths, stalls=stalls)
        w.unsteady = self.unsteady
        return w
