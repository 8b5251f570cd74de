"""sync-memset: memsets issued by a synchronous memset API (`cudaMemset`, no stream) on pinned
host memory or a Unified Memory region: the nsys expert rule `cuda_memset_sync`. Only then is
the call fully synchronous with the host (CUDA Runtime API, "API synchronization behavior");
on device memory it returns at once, so those are not flagged.
"""

from __future__ import annotations

from crossview.core.claim import Claim, Phrasing
from crossview.detectors.common import ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.detectors.sync_copy import SyncCopyFacts, claims
from crossview.views.views import Views

PATTERN = "sync-memset"


def detect(v: Views) -> list[Claim]:
    return claims(v, PATTERN, "sync_memset", "memset", mem_kinds=("Pinned", "Managed"))


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, SyncCopyFacts)
    kinds = "; ".join(f"`{r.api}` on {r.mem_kinds} memory ×{r.count:,}, "
                      f"{r.bytes / 1e6:,.1f} MB, {ms(r.gpu_ns)} on the GPU" for r in f.rows)
    return Phrasing(
        title=f"{f.calls:,} synchronous memsets on host-visible memory ({ms(f.host_ns)} "
              f"host time, {pct(c.share)} of the span)",
        observation=f"Synchronous memsets: {kinds}. The host waited {ms(f.host_ns)} inside "
                    "these calls.")


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=(), summarizes=("blocking_copy",),
    thresholds=("nsys_rule_yellow_share",), fix_keys=(PATTERN,), about=About(side="host"))
