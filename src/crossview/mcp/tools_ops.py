"""MCP tools over the analytic per-op roofline and transfer bandwidth (sol/op_roofline.py,
views/distributed/comm_bandwidth.py): the same numbers as the recap's tables and JSON
`ops`/`transfers`."""

from __future__ import annotations

from typing import Any

from crossview.mcp.cache import AnalysisCache
from crossview.mcp.compact import Detail
from crossview.mcp.safety import Refused

from .tools_views import Flt, Paths, Top, _fit, _out

# per-group lists cut at summary (detail=full keeps them)
_GROUP_LISTS = ("kernel_names", "parent_ops", "modules")


class OpTools:
    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache

    def op_roofline(self, paths: Paths, filter: Flt = None, top: Top = 20,
                    detail: Detail = "summary") -> str:
        """Per-op roofline from the trace's recorded shapes (analytic, no ncu): per (op,
        shape, dtype) group FLOPs and bytes per call, achieved FLOP/s and bytes/s,
        FLOP/byte, bound, % of the GPU's roofline, share of kernel time; the kernel time no
        model covers; analytic-vs-ncu FLOP agreement where both exist. A trace recorded
        without shapes returns the note saying how to re-capture. At summary: fewer groups
        (then 10, 5) without their kernel/parent/module lists, within the budget."""
        e = self.cache.get(paths, filter)
        with e.lock:
            v = e.analysis.views
            if v is None or not v.metrics.kernel_count:
                raise Refused(", ".join(paths) + ": no GPU kernels in this input: the per-op "
                              "roofline needs a Kineto trace with kernels")
            d = v.op_roofline.to_dict()
        units = {"time": "ns", "flops_per_s": "FLOP/s", "bytes": "B"}
        groups: list[dict[str, Any]] = d.pop("groups")  # type: ignore[assignment]
        if detail == "full":
            return _out(e, units=units, groups=groups[:top], **d)

        def level(n: int) -> dict[str, Any]:
            slim = [{k: v for k, v in g.items() if k not in _GROUP_LISTS} for g in groups[:n]]
            return {"units": units, "groups": slim, "groups_total": len(groups), **d}
        return _fit(e, [lambda n=n: level(n) for n in (top, min(top, 10), min(top, 5))])

    def transfers(self, paths: Paths, filter: Flt = None, detail: Detail = "summary") -> str:
        """Collectives (type, group, message bytes, dtype, ranks: count, time, algbw, busbw
        by NCCL's formulas, % of the interconnect ceiling) and copies (kind: bytes, time,
        bytes/s, % of the PCIe/NVLink/HBM ceiling)."""
        e = self.cache.get(paths, filter)
        with e.lock:
            v = e.analysis.views
            if v is None or not v.metrics.kernel_count:
                raise Refused(", ".join(paths) + ": no GPU activity in this input")
            d = v.comm_bandwidth.to_dict()
        units = {"time": "ns", "bandwidth": "B/s", "size": "B"}
        if detail == "full":
            return _out(e, units=units, **d)
        return _fit(e, [lambda: {"units": units, **d}])
