"""sync-memcpy: copies issued by a synchronous memcpy API (`cudaMemcpy`, not `…Async`): the nsys
expert rule `cuda_memcpy_sync`. The host blocks until the copy (and the work before it on the
legacy stream) completes. Device-to-device copies are left out: the CUDA runtime performs no
host-side synchronization for them ("API synchronization behavior").
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.common import evidence, fix_where, ms, pct
from crossview.detectors.declare import Declaration
from crossview.detectors.sync_copy import measure
from crossview.knowledge import api_roles
from crossview.knowledge.fixes import fix_for
from crossview.store.host_calls import CopyLaunches
from crossview.views.views import Views

PATTERN = "sync-memcpy"


def detect(v: Views) -> list[Finding]:
    sc = measure(v, CopyLaunches("memcpy", tuple(api_roles.names_with_role("sync_memcpy")),
                                 except_copy_kind="DtoD"))
    if sc is None or sc.span_ns <= 0:
        return []
    share = sc.host_ns / sc.span_ns
    kinds = "; ".join(f"`{a}` {ck} ({mk}) ×{n:,}, {b / 1e6:,.1f} MB, {ms(t)} on the GPU"
                      for a, ck, mk, n, t, b in sc.rows[:4])
    busy = (f"; the GPU stayed busy {sc.gpu_busy_inside_pct:.1f}% of that time"
            if v.metrics.kernel_span_ns else "")
    return [Finding(
        pattern=PATTERN,
        severity="yellow" if share >= v.limits.nsys_rule_yellow_share else "info",
        title=f"{sc.calls:,} synchronous memcpy calls block the host ({ms(sc.host_ns)}, "
              f"{pct(share)} of the span)",
        observation=f"Synchronous copies: {kinds}. The host waited {ms(sc.host_ns)} inside "
                    f"these calls{busy}.",
        fix=fix_for(PATTERN, v.engine, fix_where(v)), share=share,
        evidence=evidence(v, "memcpy GPU ops and the synchronous memcpy API calls that "
                             "launched them"),
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(), summarizes=("blocking_copy",),
    thresholds=("nsys_rule_yellow_share",),
    fix_keys=(PATTERN,))
