"""sync-memset: memsets issued by a synchronous memset API (`cudaMemset`, no stream) on pinned
host memory or a Unified Memory region: the nsys expert rule `cuda_memset_sync`. Only then is
the call fully synchronous with the host (CUDA Runtime API, "API synchronization behavior");
on device memory it returns at once, so those are not flagged.
"""

from __future__ import annotations

from crossview.core.claim import Claim, Cutoff, FixPart, Phrasing
from crossview.detectors.common import cites, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.detectors.sync_copy import SyncCopyFacts, facts, measure
from crossview.knowledge import api_roles
from crossview.store.host_calls import CopyLaunches
from crossview.views.views import Views

PATTERN = "sync-memset"


def detect(v: Views) -> list[Claim]:
    sc = measure(v, CopyLaunches("memset", tuple(api_roles.names_with_role("sync_memset")),
                                 mem_kinds=("Pinned", "Managed")))
    if sc is None or sc.span_ns <= 0:
        return []
    share = sc.host_ns / sc.span_ns
    cut = v.limits.nsys_rule_yellow_share
    return [Claim(
        pattern=PATTERN, share=share, tier="consider" if share >= cut else "note",
        cutoff=Cutoff("nsys_rule_yellow_share", cut, share) if share >= cut else None,
        fix=(FixPart(key=PATTERN, located=True),), cites=cites(v, "sync-memset"),
        facts=facts(v, sc))]


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
