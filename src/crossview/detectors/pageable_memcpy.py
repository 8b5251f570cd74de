"""pageable-memcpy: host↔device copies from pageable memory (staged, synchronous-ish).

The time account's `blocking_copy` row holds every copy call the GPU idled under (pageable,
pinned and device-to-device alike). This finding charges only the part under the calls that
launched a pageable copy (their share of the GPU idle inside all copy calls); the rest is named
as what it is, so 16 bytes of pageable copies never carry the 3 ms of 146 device-to-device
copy calls (tracelens_b200_vllm_eager_prefill_tp8).
"""

from __future__ import annotations

import numpy as np

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge import api_roles
from crossview.knowledge.fixes import fix_for
from crossview.store.host_calls import RuntimeCalls
from crossview.views.device import timeline
from crossview.views.views import Views

PATTERN = "pageable-memcpy"
CAUSES = ("blocking_copy",)  # GPU idle while the host blocked in a copy (account)


_PAGEABLE_CALLS = """
SELECT h.start_ns, h.start_ns + h.dur_ns, h.artifact_id FROM f_gpu g JOIN f_host h
  ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id
WHERE g.kind = 'memcpy' AND lower(g.mem_kinds) LIKE '%pageable%'
"""


def _pageable_part(v: Views) -> tuple[float, int, int]:
    """(fraction, GPU idle ns under the pageable copies' calls, under all copy calls)."""
    r = v.store.sql(_PAGEABLE_CALLS).fetchall()
    if not r:
        return 1.0, 0, 0
    hs, he, art = (np.array([x[i] for x in r], dtype=np.int64) for i in range(3))
    mine = timeline.host_window_effect(v.device_union, hs, he, art).gpu_idle_inside_ns
    copies = RuntimeCalls(tuple(n for role in ("sync_memcpy", "async_memcpy")
                                for n in api_roles.names_with_role(role)))
    every = v.gpu_inside(copies).gpu_idle_inside_ns
    return (min(1.0, mine / every) if every else 1.0), mine, every


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    pageable = [c for c in m.copies if c.kind == "memcpy" and "pageable" in c.mem_kinds.lower()]
    if not pageable or m.kernel_span_ns == 0:
        return []
    t = sum(c.time_ns for c in pageable)
    n = sum(c.count for c in pageable)
    sl = slice_of(v, *CAUSES)
    frac, mine, every = _pageable_part(v) if sl is not None else (1.0, 0, 0)
    if frac >= lim.pageable_whole_row_share:
        frac = 1.0
    share = sl.share * frac if sl is not None else t / m.kernel_span_ns
    sev = severity(share, lim.pageable_red_share, lim.pageable_yellow_share) or "info"
    kinds = ", ".join(f"{c.copy_kind} ({c.mem_kinds}) ×{c.count:,} {ms(c.time_ns)}"
                      for c in pageable)
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"{n:,} copies from pageable host memory ({ms(t)}; blocking copies idle the "
              f"GPU {pct(share)} of the " + ("step)" if sl is not None else "span)"),
        observation=f"Pageable copies: {kinds}. A pageable copy is staged through a driver "
                    "buffer and cannot overlap with compute." + (
                        f" The time account charges {ms(sl.ns)} of GPU idle per steady step "
                        "to blocking / pageable copies" + (
                            "." if frac >= 1.0 else
                            f"; {pct(frac)} of the GPU idle under copy calls "
                            f"({ms(mine)} of {ms(every)} over the capture) falls under the "
                            "pageable ones, the rest under pinned or device-to-device copy "
                            "calls (their host cost, not staging), so this finding charges "
                            f"{ms(sl.ns * frac)} per step.")
                        if sl is not None else ""),
        fix=fix_for(PATTERN, v.engine, fix_where(v)), share=share,
        evidence=evidence(v, "gpu_memcpy events whose memory kinds name Pageable"),
        details=claims(*CAUSES) if sl is not None else {},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("pageable_red_share", "pageable_yellow_share", "pageable_whole_row_share"),
    fix_keys=(PATTERN,))
