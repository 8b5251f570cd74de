"""pageable-memcpy: host↔device copies from pageable memory (staged, synchronous-ish).

The time account's `blocking_copy` row holds every copy call the GPU idled under (pageable,
pinned and device-to-device alike). This claim charges only the part under the calls that
launched a pageable copy (their share of the GPU idle inside all copy calls); the rest is named
as what it is, so 16 bytes of pageable copies never carry the 3 ms of 146 device-to-device
copy calls (tracelens_b200_vllm_eager_prefill_tp8).
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, NsF, Owns, Phrasing, Share
from crossview.detectors.account_share import slice_of
from crossview.detectors.common import cites, crossed, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.knowledge import api_roles
from crossview.views.device import timeline
from crossview.views.host import pageable_calls
from crossview.views.host.selections import RuntimeCalls
from crossview.views.views import Views

PATTERN = "pageable-memcpy"
CAUSES = ("blocking_copy",)  # GPU idle while the host blocked in a copy (account)




class Copy(Struct, frozen=True):
    copy_kind: str
    mem_kinds: str
    count: Count
    ns: Ns


class Pageable(Facts, frozen=True, kw_only=True):
    copies: tuple[Copy, ...]
    count: Count
    ns: Ns
    account: bool  # the share is the time account's (per steady step), else of the span
    row_ns: Ns = 0  # the account's blocking-copy row per steady step
    fraction: Share = 1.0  # of the GPU idle under copy calls that is under pageable ones
    mine_ns: Ns = 0
    every_ns: Ns = 0
    charged_ns: NsF = 0.0


def _pageable_part(v: Views) -> tuple[float, int, int]:
    """(fraction, GPU idle ns under the pageable copies' calls, under all copy calls)."""
    calls = pageable_calls.intervals(v)
    if calls is None:
        return 1.0, 0, 0
    hs, he, art = calls
    mine = timeline.host_window_effect(v.device_union, hs, he, art).gpu_idle_inside_ns
    copies = RuntimeCalls(tuple(n for role in ("sync_memcpy", "async_memcpy")
                                for n in api_roles.names_with_role(role)))
    every = v.gpu_inside(copies).gpu_idle_inside_ns
    return (min(1.0, mine / every) if every else 1.0), mine, every


def detect(v: Views) -> list[Claim]:
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
    cut = crossed(share, lim.pageable_red_share, lim.pageable_yellow_share,
                  ("pageable_red_share", "pageable_yellow_share"))
    return [Claim(
        pattern=PATTERN, share=share, tier=cut[0] if cut else "note",
        cutoff=cut[1] if cut else None,
        owns=Owns(causes=CAUSES) if sl is not None else Owns(),
        fix=(FixPart(key=PATTERN, located=True),), cites=cites(v, "pageable-copies"),
        facts=Pageable(copies=tuple(Copy(c.copy_kind, c.mem_kinds, c.count, c.time_ns)
                                    for c in pageable), count=n, ns=t, account=sl is not None,
                       row_ns=sl.ns if sl is not None else 0, fraction=frac, mine_ns=mine,
                       every_ns=every, charged_ns=sl.ns * frac if sl is not None else 0.0))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Pageable)
    kinds = ", ".join(f"{x.copy_kind} ({x.mem_kinds}) ×{x.count:,} {ms(x.ns)}" for x in f.copies)
    return Phrasing(
        title=f"{f.count:,} copies from pageable host memory ({ms(f.ns)}; blocking copies idle "
              f"the GPU {pct(c.share)} of the " + ("step)" if f.account else "span)"),
        observation=f"Pageable copies: {kinds}. A pageable copy is staged through a driver "
                    "buffer and cannot overlap with compute." + (
                        f" The time account charges {ms(f.row_ns)} of GPU idle per steady step "
                        "to blocking / pageable copies" + (
                            "." if f.fraction >= 1.0 else
                            f"; {pct(f.fraction)} of the GPU idle under copy calls "
                            f"({ms(f.mine_ns)} of {ms(f.every_ns)} over the capture) falls under "
                            "the pageable ones, the rest under pinned or device-to-device copy "
                            "calls (their host cost, not staging), so this finding charges "
                            f"{ms(f.charged_ns)} per step.")
                        if f.account else ""))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("pageable_red_share", "pageable_yellow_share", "pageable_whole_row_share"),
    fix_keys=(PATTERN,),
    about=About(side="host", levers=("pinned-copies",), refutable=True))
