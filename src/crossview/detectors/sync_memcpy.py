"""sync-memcpy: copies issued by a synchronous memcpy API (`cudaMemcpy`, not `…Async`): the nsys
expert rule `cuda_memcpy_sync`. The host blocks until the copy (and the work before it on the
legacy stream) completes. Device-to-device copies are left out: the CUDA runtime performs no
host-side synchronization for them ("API synchronization behavior").
"""

from __future__ import annotations

from crossview.core.claim import Claim, Phrasing
from crossview.detectors.common import ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.detectors.sync_copy import SyncCopyFacts, claims
from crossview.views.views import Views

PATTERN = "sync-memcpy"


def detect(v: Views) -> list[Claim]:
    return claims(v, PATTERN, "sync_memcpy", "memcpy", except_copy_kind="DtoD")


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, SyncCopyFacts)
    kinds = "; ".join(f"`{r.api}` {r.copy_kind} ({r.mem_kinds}) ×{r.count:,}, "
                      f"{r.bytes / 1e6:,.1f} MB, {ms(r.gpu_ns)} on the GPU" for r in f.rows)
    busy = (f"; the GPU stayed busy {f.gpu_busy_pct:.1f}% of that time"
            if f.gpu_busy_pct is not None else "")
    return Phrasing(
        title=f"{f.calls:,} synchronous memcpy calls block the host ({ms(f.host_ns)}, "
              f"{pct(c.share)} of the span)",
        observation=f"Synchronous copies: {kinds}. The host waited {ms(f.host_ns)} inside "
                    f"these calls{busy}.")


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(), summarizes=("blocking_copy",),
    thresholds=("nsys_rule_yellow_share",), fix_keys=(PATTERN,),
    about=About(side="host", levers=("remove-sync",)))
