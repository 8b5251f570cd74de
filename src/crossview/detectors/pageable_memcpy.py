"""pageable-memcpy: host↔device copies from pageable memory (staged, synchronous-ish)."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "pageable-memcpy"
CAUSES = ("blocking_copy",)  # GPU idle while the host blocked in a copy (account)


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    pageable = [c for c in m.copies if c.kind == "memcpy" and "pageable" in c.mem_kinds.lower()]
    if not pageable or m.kernel_span_ns == 0:
        return []
    t = sum(c.time_ns for c in pageable)
    n = sum(c.count for c in pageable)
    sl = slice_of(v, *CAUSES)
    share = sl.share if sl is not None else t / m.kernel_span_ns
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
                        "to blocking / pageable copies." if sl is not None else ""),
        fix=fix_for(PATTERN, v.engine, fix_where(v)), share=share,
        evidence=evidence(v, "gpu_memcpy events whose memory kinds name Pageable"),
        details=claims(*CAUSES) if sl is not None else {},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("pageable_red_share", "pageable_yellow_share"), fix_keys=(PATTERN,))
