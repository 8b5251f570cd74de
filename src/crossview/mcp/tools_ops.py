"""MCP tools over the analytic per-op roofline and transfer bandwidth (sol/op_roofline.py,
views/distributed/comm_bandwidth.py): the same numbers as the recap's tables and JSON
`ops`/`transfers`."""

from __future__ import annotations

from crossview.mcp.cache import AnalysisCache
from crossview.mcp.safety import Refused

from .tools_views import Flt, Paths, Top, _out


class OpTools:
    def __init__(self, cache: AnalysisCache) -> None:
        self.cache = cache

    def op_roofline(self, paths: Paths, filter: Flt = None, top: Top = 20) -> str:
        """Per-op roofline from the trace's recorded shapes (analytic, no ncu): per (op,
        shape, dtype) group FLOPs and bytes per call, achieved FLOP/s and bytes/s,
        FLOP/byte, bound, % of the GPU's roofline, share of kernel time; the kernel time no
        model covers; analytic-vs-ncu FLOP agreement where both exist. A trace recorded
        without shapes returns the note saying how to re-capture."""
        e = self.cache.get(paths, filter)
        with e.lock:
            v = e.analysis.views
            if v is None or not v.metrics.kernel_count:
                raise Refused(", ".join(paths) + ": no GPU kernels in this input: the per-op "
                              "roofline needs a Kineto trace with kernels")
            d = v.op_roofline.to_dict()
        d["groups"] = d["groups"][:top]  # type: ignore[index]
        return _out(e, units={"time": "ns", "flops_per_s": "FLOP/s", "bytes": "B"}, **d)

    def transfers(self, paths: Paths, filter: Flt = None) -> str:
        """Collectives (type, group, message bytes, dtype, ranks: count, time, algbw, busbw
        by NCCL's formulas, % of the interconnect ceiling) and copies (kind: bytes, time,
        bytes/s, % of the PCIe/NVLink/HBM ceiling)."""
        e = self.cache.get(paths, filter)
        with e.lock:
            v = e.analysis.views
            if v is None or not v.metrics.kernel_count:
                raise Refused(", ".join(paths) + ": no GPU activity in this input")
            d = v.comm_bandwidth.to_dict()
        return _out(e, units={"time": "ns", "bandwidth": "B/s", "size": "B"}, **d)
