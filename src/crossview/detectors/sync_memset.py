"""sync-memset: memsets issued by a synchronous memset API (`cudaMemset`, no stream) on pinned
host memory or a Unified Memory region: the nsys expert rule `cuda_memset_sync`. Only then is
the call fully synchronous with the host (CUDA Runtime API, "API synchronization behavior");
on device memory it returns at once, so those are not flagged.
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

PATTERN = "sync-memset"


def detect(v: Views) -> list[Finding]:
    sc = measure(v, CopyLaunches("memset", tuple(api_roles.names_with_role("sync_memset")),
                                 mem_kinds=("Pinned", "Managed")))
    if sc is None or sc.span_ns <= 0:
        return []
    share = sc.host_ns / sc.span_ns
    kinds = "; ".join(f"`{a}` on {mk} memory ×{n:,}, {b / 1e6:,.1f} MB, {ms(t)} on the GPU"
                      for a, _ck, mk, n, t, b in sc.rows[:4])
    return [Finding(
        pattern=PATTERN,
        severity="yellow" if share >= v.limits.nsys_rule_yellow_share else "info",
        title=f"{sc.calls:,} synchronous memsets on host-visible memory ({ms(sc.host_ns)} "
              f"host time, {pct(share)} of the span)",
        observation=f"Synchronous memsets: {kinds}. The host waited {ms(sc.host_ns)} inside "
                    "these calls.",
        fix=fix_for(PATTERN, v.engine, fix_where(v)), share=share,
        evidence=evidence(v, "memset GPU ops (memory kind Pinned/Managed) and the synchronous "
                             "memset API calls that launched them"),
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=(), summarizes=("blocking_copy",),
    thresholds=("nsys_rule_yellow_share",),
    fix_keys=(PATTERN,))
