"""Shared measurement for sync-memcpy / sync-memset: GPU copies issued by a synchronous API.

The host blocks inside those calls; the share is their host time over the span, and the GPU's
busy share inside them is reported too (conventions §1: judge a wait by what the GPU does).
"""

from __future__ import annotations

from dataclasses import dataclass

from msgspec import Struct

from crossview.core.claim import Bytes, Claim, Count, Cutoff, Facts, FixPart, Ns, Pct
from crossview.detectors.common import cites
from crossview.knowledge import api_roles
from crossview.views.host import selections
from crossview.views.host.selections import CopyLaunches
from crossview.views.views import Views


@dataclass
class SyncCopies:
    rows: list[tuple[str, str, str, int, int, int]]  # api, copy kind, mem kinds, n, gpu ns, B
    calls: int
    host_ns: int
    gpu_busy_inside_pct: float
    span_ns: int


class CopyRow(Struct, frozen=True, kw_only=True):
    api: str
    copy_kind: str
    mem_kinds: str
    count: Count
    gpu_ns: Ns
    bytes: Bytes


class SyncCopyFacts(Facts, frozen=True, kw_only=True):
    rows: tuple[CopyRow, ...]
    calls: Count
    host_ns: Ns
    gpu_busy_pct: Pct | None  # None without a kernel span


def measure(v: Views, sel: CopyLaunches) -> SyncCopies | None:
    """The copies the selected synchronous calls launched, and what the host and GPU did."""
    rows = selections.launched(v, sel)
    if not rows:
        return None
    calls, host_ns = selections.count_and_ns(v, sel)
    m = v.metrics
    span = m.kernel_span_ns or m.host_span_ns
    eff = v.gpu_inside(sel) if m.kernel_span_ns else None
    return SyncCopies(rows, calls, host_ns, eff.gpu_busy_inside_pct if eff else 0.0, int(span))


def facts(v: Views, sc: SyncCopies) -> SyncCopyFacts:
    return SyncCopyFacts(
        rows=tuple(CopyRow(api=a, copy_kind=ck, mem_kinds=mk, count=n, gpu_ns=t, bytes=b)
                   for a, ck, mk, n, t, b in sc.rows[:4]),
        calls=sc.calls, host_ns=sc.host_ns,
        gpu_busy_pct=sc.gpu_busy_inside_pct if v.metrics.kernel_span_ns else None)


def claims(v: Views, pattern: str, role: str, gpu_kind: str, except_copy_kind: str | None = None,
           mem_kinds: tuple[str, ...] = ()) -> list[Claim]:
    """The pattern's claim over the calls of API role `role` (api_roles.yaml) that launched a
    GPU op of `gpu_kind`: a mention at nsys_rule_yellow_share of the span, else a note."""
    sc = measure(v, CopyLaunches(gpu_kind, tuple(api_roles.names_with_role(role)),
                                 except_copy_kind=except_copy_kind, mem_kinds=mem_kinds))
    if sc is None or sc.span_ns <= 0:
        return []
    share = sc.host_ns / sc.span_ns
    cut = v.limits.nsys_rule_yellow_share
    return [Claim(
        pattern=pattern, share=share, tier="consider" if share >= cut else "note",
        cutoff=Cutoff("nsys_rule_yellow_share", cut, share) if share >= cut else None,
        fix=(FixPart(key=pattern, located=True),), cites=cites(v, pattern),
        facts=facts(v, sc))]
