"""sync-bound: host synchronizations that drain the GPU (judged by GPU idle they open).

With a time account the share is its `sync_drained` + `blocking_copy` slice: idle while the
launching thread was blocked in a sync with the GPU drained, plus the refill of a gap that
opened in one (knowledge/account.yaml). The verdict and the account therefore never disagree.

The longest blocking calls say what they waited for (views/device/blocking_waits.py): when
their stream's queued work was held by another stream, the fix is to break that dependency
(or, held by a collective, to read its result later), not to remove a copy that takes µs."""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Pct, Phrasing, Share
from crossview.detectors.account_share import AccountSlice, facts, slice_of
from crossview.detectors.common import cites, crossed, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.units import duration
from crossview.views.views import Views

PATTERN = "sync-bound"
# conventions: "CPU dominated by cudaMemcpy* / aten::* synchronization → sync-bound on device
# transfers" — blocking copies are sync-bound too (pageable-memcpy is the "how" for the copy
# part and yields the slice when this claim is larger)
CAUSES = ("sync_drained", "blocking_copy")
HELD = PATTERN + "-held"
NONE = PATTERN + "-none"


class SyncApi(Struct, frozen=True):
    name: str
    count: Count
    ns: Ns


class Release(Struct, frozen=True, kw_only=True):
    stream: int
    name: str
    lag_ns: Ns
    comm: bool  # a collective: the other ranks held it


class Held(Struct, frozen=True, kw_only=True):
    """The longest blocking call and what it waited for (views/device/blocking_waits.py)."""

    call: str
    scope: str
    host_ns: Ns
    op_ns: Ns
    op_name: str
    stream: int
    held_ns: Ns
    release: Release | None = None  # another stream held it (None: its own queued work)
    alike: Count = 0  # of the longest calls, held by the same stream
    longest: Count = 0


class Syncs(Facts, frozen=True, kw_only=True):
    apis: tuple[SyncApi, ...]
    host_ns: Ns  # blocked inside the kernel span
    gpu_busy_pct: Pct  # GPU busy meanwhile
    gaps_ns: Ns  # idle gaps that opened while blocked (no account)
    slice: AccountSlice | None = None
    hidden_ns: Ns = 0  # idle inside CUDA-graph replays (graph-unrecorded) per step
    held: Held | None = None
    yellow_share: Share = 0.0  # the mention cut (the note says it)
    busy_mostly_pct: Pct = 0.0


def _held(v: Views) -> Held | None:
    """What the longest blocking call waited for (None: no blocking call with a launch)."""
    from crossview.views.device import blocking_waits  # lazy: only when it fires (decision 0760)

    lim = v.limits
    waits = blocking_waits.longest(v, v.sync_calls().names, lim.blocking_wait_calls,
                                   lim.blocking_wait_release_ns)
    if not waits:
        return None
    w = waits[0]
    r = w.release
    base = dict(call=w.call, scope=w.scope, host_ns=w.host_ns, op_ns=w.op_ns,
                op_name=w.op_name, stream=w.stream, held_ns=w.held_ns, longest=len(waits))
    if r is None or w.held_ns < lim.blocking_wait_held_share * w.host_ns:
        return Held(**base)  # type: ignore[arg-type]
    alike = sum(1 for x in waits if x.release and x.release.stream == r.stream
                and x.held_ns >= lim.blocking_wait_held_share * x.host_ns)
    return Held(**base, alike=alike,  # type: ignore[arg-type]
                release=Release(stream=r.stream, name=r.name, lag_ns=r.lag_ns,
                                comm=r.family == "comm"))


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0 or not m.sync_apis:
        return []
    eff = v.gpu_inside(v.sync_calls())
    if eff.count == 0:
        return []
    sl = slice_of(v, *CAUSES)
    share = sl.share if sl is not None else eff.gaps_opened_inside_ns / m.kernel_span_ns
    cut = crossed(share, lim.sync_red_share, lim.sync_yellow_share,
                  ("sync_red_share", "sync_yellow_share"))
    # idle inside CUDA-graph replays: the trace misses GPU work (detectors/graph_unrecorded.py),
    # so a blocked host may be waiting on that work rather than draining the GPU
    hidden = slice_of(v, "graph_unrecorded")
    unsure = hidden is not None and hidden.share >= lim.graph_unrecorded_yellow_share
    apis = tuple(SyncApi(a.name, a.count, a.time_ns) for a in m.sync_apis[:4])
    f = Syncs(apis=apis, host_ns=eff.host_ns, gpu_busy_pct=eff.gpu_busy_inside_pct,
              gaps_ns=eff.gaps_opened_inside_ns, slice=facts(sl) if sl is not None else None,
              hidden_ns=hidden.ns if unsure and hidden is not None else 0,
              held=_held(v) if cut else None, yellow_share=lim.sync_yellow_share,
              busy_mostly_pct=lim.sync_gpu_busy_mostly_pct)
    ev = cites(v, "sync-calls")
    if cut is None:
        if eff.host_ns < lim.sync_yellow_share * m.kernel_span_ns:
            return []  # too little blocked time to mention
        # waits during which the GPU keeps working are the host waiting for real work; the
        # verdict must agree with the numbers beside it: a GPU that idled while the host was
        # blocked, yet is not charged to syncs, had its idle charged elsewhere (another cause
        # first in the precedence, or time outside the steady steps)
        return [Claim(pattern=PATTERN, form="note", share=share, tier="note",
                      fix=(FixPart(key=NONE),), cites=ev, facts=f)]
    held = f.held
    caveats = ["graph-unrecorded"] if unsure else []
    # one blocking call holding most of the slice in a capture of one step: one occurrence,
    # not (yet) the workload's pattern
    if held is not None and sl is not None and len(v.steps.steady) == 1 \
            and held.host_ns >= lim.one_off_min_share * sl.ns:
        caveats.append("one-occurrence")
    key = (FixPart(key=HELD, flags=("collective",) if held.release.comm else (),
                   located=True)
           if held is not None and held.release is not None
           else FixPart(key=PATTERN, located=True))
    return [Claim(
        pattern=PATTERN, form="account" if sl is not None else "span", share=share,
        tier=cut[0], cutoff=cut[1], caveats=tuple(caveats),
        owns=Owns(causes=CAUSES) if sl is not None else Owns(), fix=(key,), cites=ev,
        facts=f)]


def _held_text(h: Held) -> tuple[str, str]:
    """(the sentence on what the longest blocking call waited for, what an A/B of that fix
    compares)."""
    where = f" under `{short(h.scope, 60)}`" if h.scope else ""
    text = (f" The longest blocking call, `{h.call}`{where} ({duration(h.host_ns)}), launched "
            f"a {duration(h.op_ns)} `{short(h.op_name, 50)}` on stream {h.stream}")
    r = h.release
    if r is None:
        return text + ": it waited for the work queued ahead of it on that stream.", ""
    text += (f"; stream {h.stream} held its queued work {duration(h.held_ns)} from the call's "
             f"start and began {duration(r.lag_ns)} after {'the collective ' if r.comm else ''}"
             f"`{short(r.name, 50)}` on stream {r.stream} ended: the call waited on stream "
             f"{r.stream}'s work ({'the other ranks' if r.comm else 'a cross-stream dependency'})"
             f", not on its own {'copy' if 'memcpy' in h.call.lower() else 'work'}"
             f" ({h.alike} of the {h.longest} longest blocking calls alike).")
    check = (f" An A/B compares the step time and the host time of `{h.call}`{where} "
             f"({duration(h.host_ns)} in the longest call here) once stream {h.stream} no "
             f"longer waits on stream {r.stream}.")
    return text, check


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Syncs)
    names = ", ".join(f"{short(a.name, 40)} ×{a.count:,} ({ms(a.ns)})" for a in f.apis)
    obs = (f"Synchronizing calls: {names}. The host spent {ms(f.host_ns)} blocked inside the "
           f"kernel span; the GPU stayed busy {f.gpu_busy_pct:.1f}% of that time. ")
    sl = f.slice
    if sl is not None:
        top = "; ".join(f"`{short(t.frame, 80)}` {ms(t.ns)}" for t in sl.top)
        parts = "; ".join(f"{r.label} {ms(r.ns)}" for r in sl.rows)
        obs += (f"The time account charges {ms(sl.ns)} per steady step ({pct(c.share)}) to "
                f"host calls that blocked while the GPU sat idle ({parts})"
                + (f", in {top}" if top else ""))
    else:
        obs += (f"Idle gaps that opened while the host was blocked total "
                f"{ms(f.gaps_ns)} ({pct(c.share)} of the span)")
    if c.form == "note":
        if sl is None:
            why = ": the host waits for real work, not sync-bound."
        else:
            why = (f": {pct(c.share)} of the steady step is charged to them, under the "
                   f"{pct(f.yellow_share)} cut — not sync-bound" + (
                       "; the host mostly waits for real work."
                       if f.gpu_busy_pct >= f.busy_mostly_pct
                       else "; the rest of the GPU idle during these calls is charged to "
                       "other causes in the time account or lies outside the steady steps."))
        return Phrasing(title="Host syncs present but not draining the GPU in the steady state",
                        observation=obs + why)
    held, check = _held_text(f.held) if f.held is not None else ("", "")
    obs += (f". The trace misses GPU work inside CUDA-graph replays ({ms(f.hidden_ns)} per "
            "step: the graph-unrecorded finding): these calls may wait on that work, not drain "
            "the GPU — re-capture before acting on them." if f.hidden_ns else
            ": each sync empties the queue, then the GPU waits for the host.") + held
    return Phrasing(
        title=f"Sync-bound: the GPU idles while the host blocks in syncs / copies "
              f"({pct(c.share)} of the step)",
        observation=obs,
        effect=(f"Up to {ms(sl.ns)} per step, the GPU idle charged to these blocking calls."
                + check if sl and check else
                f"Up to {ms(sl.ns)} per step if the syncs go." if sl else
                f"Up to {ms(f.gaps_ns)} of GPU idle if the syncs go."))


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("sync_red_share", "sync_yellow_share", "sync_gpu_busy_mostly_pct",
                "blocking_wait_calls", "blocking_wait_held_share", "blocking_wait_release_ns",
                "graph_unrecorded_yellow_share", "one_off_min_share"),
    fix_keys=(PATTERN, HELD, NONE),
    about=About(side="host", levers=("remove-sync",)))
