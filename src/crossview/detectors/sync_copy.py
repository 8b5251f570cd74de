"""Shared measurement for sync-memcpy / sync-memset: GPU copies issued by a synchronous API.

The host blocks inside those calls; the share is their host time over the span, and the GPU's
busy share inside them is reported too (conventions §1: judge a wait by what the GPU does).
"""

from __future__ import annotations

from dataclasses import dataclass

from msgspec import Struct

from crossview.core.claim import Bytes, Count, Facts, Ns, Pct
from crossview.store import host_calls
from crossview.store.host_calls import CopyLaunches
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
    rows = host_calls.launched(v.store, sel)
    if not rows:
        return None
    calls, host_ns = host_calls.count_and_ns(v.store, sel)
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
