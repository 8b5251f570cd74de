"""JSON output: the stable contract of `crossview analyze --format json`."""

from __future__ import annotations

from typing import Any

import msgspec

from crossview.analysis import Analysis
from crossview.schema import versioned
from crossview.sources.artifact_report import ArtifactReport
from crossview.views.views import Views


def as_dict(a: Analysis) -> dict[str, Any]:
    v = a.views
    return {
        "filter": v.filter.to_dict() if v else None,
        "artifacts": [_artifact(r, v) for r in a.artifacts],
        "metrics": v.metrics.to_dict() if v else None,
        "kernel_families": [f.to_dict() for f in v.families] if v else [],
        "top_kernels": [k.to_dict() for k in v.top_kernels] if v else [],
        "gpu_view": v.gpu.to_dict() if v else None,
        "cpu_view": v.cpu.to_dict(with_self=True) if v else None,
        "cpu_top_self": [
            {"frame": f.frame, "kind": f.kind, "self_ns": f.self_ns, "share": f.share,
             "user": f.user, "role": f.role,
             **({"samples": f.samples} if f.samples is not None else {})} for f in v.top_self
        ] if v else [],
        # nsys stats CSV reports: summary-only evidence (no timeline), labelled per report
        "summaries": [s.to_dict() for s in v.summaries] if v else [],
        # ncu per-kernel roofline rows (rigor L4): sol/roofline.py KernelRoofline
        "kernels": [k.to_dict() for k in v.kernels] if v else [],
        # workload metrics (rigor L3): per-device counters, serving-engine summaries
        # (gauges, counters, histogram quantiles), benchmark arms with their Context
        "gpu_metrics": v.gpu_metrics.to_dict() if v else None,
        # per-device counters as % of sol_ceilings.yaml ceilings + verdicts (sol/workload.py)
        "workload_sol": [s.to_dict() for s in v.workload_sol] if v else [],
        "engine": v.engine if v else None,
        # multi-rank jobs (views/distributed/crossrank.py): per-rank GPU/communication summary, the
        # straggler ranks with the cause, and how ranks were aligned (clock, partial, missing)
        # each rank's collective time split into waiting for a peer and transfer
        "ranks": [{**r.to_dict(), **(v.ranks.comm[r.rank].to_dict()
                                     if r.rank in v.ranks.comm else {})}
                  for r in v.ranks.ranks] if v and v.ranks else [],
        "stragglers": [s.to_dict() for s in v.ranks.stragglers] if v and v.ranks else [],
        "rank_analysis": v.ranks.to_dict() if v and v.ranks else None,
        # analyze --workers/--dask: engine, the rank the single-rank parts describe, worker RSS
        "fanout": a.fanout.to_dict() if a.fanout else None,
        # analytic per-op roofline from recorded shapes (sol/op_roofline.py): groups,
        # unmodeled kernel time, the once-said note, analytic-vs-ncu FLOP agreement
        "ops": v.op_roofline.to_dict() if v and v.metrics.kernel_count else None,
        # collective algbw/busbw and copy bytes/s (views/distributed/comm_bandwidth.py)
        "transfers": v.comm_bandwidth.to_dict() if v and v.metrics.kernel_count else None,
        "findings": [f.to_dict() for f in a.findings],
        # issue 15: steps (scope/step_detect.py) and the time account (views/device/account.py)
        "steps": v.steps.to_dict() if v else None,
        "account": (v.account.to_dict() if v.account else None) if v else None,
    }


def _artifact(r: ArtifactReport, v: Views | None) -> dict[str, Any]:
    d = r.to_dict()
    info = next((i for i in v.artifact_info if i.path == r.path), None) if v else None
    if info is not None:
        d.update(events=info.events, rank=info.rank, world_size=info.world_size,
                 backend=info.backend, devices=info.devices)
    return d


def render_bytes(a: Analysis) -> bytes:
    """The document as UTF-8 bytes, as the CLI writes them (no decode and re-encode of a
    recap that holds its call trees: B200's is 12 MB)."""
    # msgspec: an order of magnitude faster than json.dumps on large call trees
    return msgspec.json.format(msgspec.json.encode(versioned(as_dict(a))), indent=1) + b"\n"


def render(a: Analysis) -> str:
    return render_bytes(a).decode()
