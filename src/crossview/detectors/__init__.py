"""Detectors: one module per pattern; `run_all` applies them and ranks the findings."""

from __future__ import annotations

import sys
from collections.abc import Callable

from crossview.core.finding import Finding
from crossview.detectors import (
    account_rules,
    below_roofline,
    capture_window,
    carry_in,
    compute_bound,
    dataloader,
    ddp_host,
    first_calls,
    fix_fit,
    gpu_gap,
    gpu_idle,
    graph_unrecorded,
    host_cpu,
    host_op_cost,
    host_python,
    kernel_inefficiency,
    kv_cache_pressure,
    late_ranks,
    launch_bound,
    launch_lag,
    layout_conversions,
    low_gpu_util,
    memory_bound,
    metrics_capture,
    nccl,
    nccl_straggler,
    op_fp32_math,
    op_memory_bound,
    optimizer_per_param,
    pageable_memcpy,
    peer_wait,
    prefill_decode,
    prefix_cache_miss,
    queue_saturation,
    sync_bound,
    sync_memcpy,
    sync_memset,
    tensor_cores,
    unfused_elementwise,
    utilization_regime,
)
from crossview.detectors.declare import Declaration
from crossview.knowledge import thresholds
from crossview.knowledge.thresholds import Thresholds
from crossview.views.views import Views

# One line per detector; a new pattern is one new module plus one line here.
DETECTORS: tuple[Callable[[Views], list[Finding]], ...] = (
    gpu_idle.detect,
    graph_unrecorded.detect,
    launch_bound.detect,
    sync_bound.detect,
    dataloader.detect,
    ddp_host.detect,
    nccl.detect,
    nccl_straggler.detect,
    late_ranks.detect,
    peer_wait.detect,
    pageable_memcpy.detect,
    host_python.detect,
    host_op_cost.detect,
    optimizer_per_param.detect,
    first_calls.detect,
    capture_window.detect,
    carry_in.detect,
    launch_lag.detect,
    memory_bound.detect,
    compute_bound.detect,
    below_roofline.detect,
    tensor_cores.detect,
    queue_saturation.detect,
    kv_cache_pressure.detect,
    prefix_cache_miss.detect,
    prefill_decode.detect,
    utilization_regime.detect,
    metrics_capture.detect,
    sync_memcpy.detect,
    sync_memset.detect,
    gpu_gap.detect,
    low_gpu_util.detect,
    host_cpu.detect,
    kernel_inefficiency.detect,
    op_memory_bound.detect,
    op_fp32_math.detect,
    unfused_elementwise.detect,
    layout_conversions.detect,
)

_ORDER = {"red": 0, "yellow": 1, "info": 2}


def predicted_saving(f: Finding) -> float:
    """Conventions §3's ranking key: the share of the steady step the fix is predicted to
    save. The what-if replay's saving where its lever models the whole fix and nothing pins
    the step (replay/findings.py `predicts_fix`); else the finding's share of the time
    account, the bound a partial or pinned replay cannot tighten, which for a kernel-side
    finding is capped by the GPU kernels' share of the step's critical path."""
    rep = f.details.get("replay") if isinstance(f.details, dict) else None
    if isinstance(rep, dict) and rep.get("predicts_fix"):
        meas, pred = float(rep["measured_step_ns"]), float(rep["predicted_step_ns"])
        if meas > 0:
            return max(meas - pred, 0.0) / meas
    # a kernel-side finding saves at most the GPU kernel time on the step's critical path
    # (replay/findings.py _on_path)
    on = f.details.get("kernel_path_share") if isinstance(f.details, dict) else None
    return min(f.share, float(on)) if isinstance(on, (int, float)) else f.share


def _key(f: Finding) -> tuple[int, float]:
    return _ORDER[f.severity], -predicted_saving(f)


def _cap(findings: list[Finding], severity: str, limit: int, demote_to: str) -> None:
    """Keep the `limit` largest findings of a severity; demote the rest one level."""
    kept = 0
    for f in findings:
        if f.severity == severity:
            kept += 1
            if kept > limit:
                f.severity = demote_to  # type: ignore[assignment]
    findings.sort(key=_key)


def rank(findings: list[Finding], lim: Thresholds | None = None) -> list[Finding]:
    """Conventions §3: at most max_red red and max_yellow yellow (thresholds.yaml);
    non-actionable never red; within a severity, the largest predicted saving first."""
    for f in findings:
        if f.severity == "red" and not f.actionable:
            f.severity = "yellow"
    findings.sort(key=_key)
    lim = lim or thresholds.defaults()
    _cap(findings, "red", lim.max_red, "yellow")
    _cap(findings, "yellow", lim.max_yellow, "info")
    return findings


def declarations() -> list[Declaration]:
    """Each detector's declaration (detectors/declare.py), in DETECTORS order. A detector
    module without one (added on another branch) still runs, declared by its PATTERN only;
    tests/test_findings_account.py asks for the real declaration."""
    out = []
    for d in DETECTORS:
        mod = sys.modules[d.__module__]
        out.append(getattr(mod, "DECLARATION", None) or Declaration(
            patterns=(str(getattr(mod, "PATTERN", mod.__name__)),), detect=d))
    return out


def run_all(views: Views) -> list[Finding]:
    found: list[Finding] = []
    decl_of: dict[int, Declaration] = {}
    for decl in declarations():
        got = decl.detect(views)
        for f in got:
            decl_of[id(f)] = decl
        found.extend(got)
    host_cpu.corroborate(views, found)  # host CPU samples as L3 evidence on host-side findings
    if views.account is not None:
        account_rules.apply(views.account, found, decl_of)
    fix_fit.apply(views, found)  # fixes that fit the capture: graphs present, engine version
    return rank(found, views.limits)
