"""Captures as A/B trials (issue 39 item 5, decision 0855): `crossview ab --baseline A*.json.gz
--variant B*.json.gz` with ≥ 3 profiler captures per arm judges them as it judges benchmark
trials. Each capture is one trial; its values are medians over its steady steps (the time
account's steps, scope/step_detect.py): `median_step_ms` (the step wall; the `step` target of
knowledge/ab_gates.yaml), `kernel_time_per_step_ms` and `gpu_busy_per_step_ms`. Its Context:
the bundle.yaml Context above it (`crossview capture` records the model, hostname and GPU
UUIDs there) with the GPU model and the driver's CUDA version the capture records; a bare
trace records no hostname or UUIDs (the node gate then needs `--node` / `--gpu-uuid`)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crossview.analysis import analyze
from crossview.errors import InputError
from crossview.experiments.bundle_context import near_bundle
from crossview.experiments.comparable import drivers, gpu_names
from crossview.sources.registry import pick_reader

if TYPE_CHECKING:
    from crossview.analysis import Analysis

CAPTURE_KINDS = ("kineto", "nsys", "nsys-rep")
METRICS = ("median_step_ms", "kernel_time_per_step_ms", "gpu_busy_per_step_ms")


def is_capture(path: Path) -> bool:
    """A profiler timeline (Kineto trace, nsys report / SQLite), by its content."""
    if path.is_dir():
        return False
    try:
        return pick_reader(path).kind in CAPTURE_KINDS
    except InputError:
        return False


@dataclass
class Trials:
    """One arm's captures as trials: per capture its (path, index), metrics and Context."""

    trial_ids: list[tuple[str, int]] = field(default_factory=list)
    trials: list[dict[str, float]] = field(default_factory=list)
    contexts: list[dict[str, object]] = field(default_factory=list)


def load(name: str, paths: list[Path]) -> Trials:
    """One arm of captures: each analyzed on its own (a rejected or stepless one refuses)."""
    arm = Trials()
    for i, p in enumerate(paths):
        r = analyze([p])
        bad = [x for x in r.artifacts if x.status not in ("ok", "skipped")]
        if bad or r.views is None:
            raise InputError(p, "; ".join(bad[0].problems) if bad else "nothing read")
        steps = r.views.steps.steady
        if not steps or not r.views.metrics.kernel_count:
            raise InputError(p, f"{name} arm: no GPU steps in this capture: a capture trial "
                             "needs a Kineto or nsys timeline with kernels")
        values = {
            "median_step_ms": statistics.median(s.wall_ns for s in steps) / 1e6,
            "kernel_time_per_step_ms": statistics.median(
                sum(s.kernel_ns_by_family.values()) for s in steps) / 1e6,
            "gpu_busy_per_step_ms": statistics.median(s.gpu_busy_ns for s in steps) / 1e6,
        }
        arm.trial_ids.append((str(p), i))
        arm.trials.append({m: float(v) for m, v in values.items()})
        arm.contexts.append(_context(r, p))
    return arm


def _context(r: Analysis, path: Path) -> dict[str, object]:
    """The Context of the bundle.yaml above the capture (`crossview capture` records model,
    hostname, GPU UUIDs there), with the GPU model and driver the capture itself records."""
    gpus, drv = sorted(gpu_names(r)), sorted(drivers(r))
    ctx: dict[str, object] = dict(near_bundle(str(path)))
    if gpus:
        ctx["gpu"] = "/".join(gpus)
    if drv:
        ctx["driver_cuda"] = "/".join(drv)
    return ctx
