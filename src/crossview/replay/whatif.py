"""`crossview whatif`: build the capture's dependency graph, self-check its unchanged replay,
apply the levers and replay again: baseline vs predicted per-step time, GPU busy and what
bounds the step."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING, Any

from crossview.errors import InputError
from crossview.replay import graph as graph_mod
from crossview.replay import levers as lever_mod
from crossview.replay.gc_pause import paused
from crossview.replay.graph import WAIT, Graph
from crossview.replay.levers.common import LeverContext
from crossview.replay.measure import StepResult, measure, pinned
from crossview.replay.replay import Timing, replay
from crossview.replay.steps import Step, marks, windows
from crossview.sources.registry import read_all
from crossview.store.store import Store

if TYPE_CHECKING:
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
        if self.selfcheck_ok:
            body["median"] = m
            mid = self.median_step()
            body["critical_path"] = {"step": mid.name if mid else None,
                                     "by_cause": [{"cause": k, "ns": v}
                                                  for k, v in self.bound_by()]}
        else:
            body["median"] = {"measured_step_ns": m["measured_step_ns"], "predicted_step_ns": None}
        return body


def load(paths: list[Path], store: Store | None = None) -> tuple[Store, int]:
    """Read the capture(s); the artifact with a host side and GPU ops; one-line refusals."""
    store, ids = timelines(paths, store)
    if len(ids) > 1:
        path = store.sql("SELECT path FROM artifacts WHERE artifact_id = ?", [ids[1]]
                         ).fetchall()[0][0]
        raise InputError(path, f"whatif replays one timeline at a time; {len(ids)} given")
    return store, ids[0]


def timelines(paths: list[Path], store: Store | None = None) -> tuple[Store, list[int]]:
    """Read the capture(s): the artifacts with a host side and GPU ops (several: the ranks
    of a job, replay/rank_whatif.py); one-line refusals."""
    store = store or Store()
    reports = read_all(paths, store)
    # files that are not captures (a bundle's *_cmd.txt) are skipped, as analyze skips them;
    # a rejected or partial capture is refused: a replay of half a timeline predicts nothing
    bad = [r for r in reports if r.status not in ("ok", "skipped")]
    if bad:
        raise InputError(bad[0].path, "; ".join(bad[0].problems))
    rows = store.sql(
        "SELECT a.artifact_id, a.path, a.kind, "
        "(SELECT count(*) FROM host_ops h WHERE h.artifact_id = a.artifact_id "
        " AND h.kind = 'runtime'), "
        "(SELECT count(*) FROM gpu_ops g WHERE g.artifact_id = a.artifact_id), "
        "(SELECT count(*) FROM summary_stats s WHERE s.artifact_id = a.artifact_id) "
        "FROM artifacts a WHERE a.status = 'ok' ORDER BY a.artifact_id").fetchall()
    found = [aid for aid, _path, _kind, host, gpu, _summ in rows if host and gpu]
    if found:
        return store, found
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


def run(paths: list[Path], specs: list[str], store: Store | None = None
        ) -> WhatIf | RankWhatIf:
    """One timeline: its replay; several: the ranks of one job replayed together
    (replay/rank_whatif.py), else a refusal."""
    store, ids = timelines(paths, store)
    if len(ids) > 1:
        from crossview.replay.rank_whatif import run as run_ranks

        return run_ranks(store, ids, specs, ", ".join(str(p) for p in paths))
    aid = ids[0]
    path = store.sql("SELECT path FROM artifacts WHERE artifact_id = ?", [aid]).fetchall()[0][0]
    n, cap = graph_mod.rows(store, aid), graph_mod.params()["graph"]["max_rows"]
    if n > cap:
        raise InputError(path, f"{n:,} host and GPU rows: over the replay's limit of {cap:,} "
                         "(knowledge/replay.yaml graph.max_rows); capture fewer steps")
    with paused():
        steps_from, steps, flagged = windows(store, aid)
        g = graph_mod.build(store, aid, marks(steps))
        base = baseline(g, steps)
        parsed = [lever_mod.parse(s) for s in specs]
        w = predict(g, steps, steps_from, parsed, str(path), _roofline(store), base=base,
                    stalls=_stalls(store, aid) if any(s.name == "host-stalls" for s in parsed)
                    else None)
    w.unsteady = flagged
    pin = pinned_of(g, base, steps, w.unsteady)
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
    moved = sum(1 for i in range(len(g))
                if g.kind[i] != WAIT and timing.start[i] != g.mstart[i])
    err = max((abs(s.predicted_ns - s.measured_ns) / s.measured_ns for s in base
               if s.measured_ns), default=0.0)
    return Baseline(base, moved, err, timing)


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
    ctx = LeverContext(roofline or {}, stalls)
    changes = [f"{s}: " + lever_mod.MODULES[s.name].apply(changed, s.param, ctx)
               for s in specs]
    pred = measure(changed, replay(changed), steps, paths) if specs else base.steps
    notes = list(g.notes)
    if not base.steps:
        notes.append("no step could be placed on the graph")
    return WhatIf(capture, steps_from, base.steps, pred, [str(s) for s in specs], changes,
                  base.max_error, limit, notes, len(g), base.moved)


def _stalls(store: Store, aid: int) -> list[HostStall]:
    from crossview.replay.rank_graph import stalls_of

    return stalls_of(store, aid)


def _roofline(store: Store) -> dict[str, tuple[float, str]]:
    """Achieved fraction of the roofline ceiling (the nearer of the FLOP/s and DRAM-bandwidth
    ceilings) per ncu-profiled kernel name, when the store holds ncu rows."""
    if not store.sql("SELECT count(*) FROM profiled_kernels").fetchall()[0][0]:
        return {}
    from types import SimpleNamespace

    from crossview.knowledge.thresholds import defaults
    from crossview.sol.roofline import compute

    paths = [r[0] for r in store.sql("SELECT path FROM artifacts WHERE status = 'ok'").fetchall()]
    out: dict[str, tuple[float, str]] = {}
    for k in compute(store, SimpleNamespace(artifacts=paths), defaults()):  # type: ignore[arg-type]
        pcts = [(x, kind) for x, kind in ((k.pct_of_peak_flops, "compute"),
                                          (k.pct_of_peak_dram_bw, "memory")) if x is not None]
        if pcts:
            pct, kind = max(pcts)
            out[k.name] = (pct / 100, kind)
    return out
