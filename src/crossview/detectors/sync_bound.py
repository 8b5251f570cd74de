"""sync-bound: host synchronizations that drain the GPU (judged by GPU idle they open).

With a time account the share is its `sync_drained` slice: idle while the launching thread was
blocked in a sync with the GPU drained, plus the refill of a gap that opened in one
(knowledge/account.yaml). The verdict and the account therefore never disagree.

The longest blocking calls say what they waited for (views/device/blocking_waits.py): when
their stream's queued work was held by another stream, the fix is to break that dependency
(or, held by a collective, to read its result later), not to remove a copy that takes µs."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity, short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.units import duration
from crossview.views.views import Views

PATTERN = "sync-bound"
# conventions: "CPU dominated by cudaMemcpy* / aten::* synchronization → sync-bound on device
# transfers" — blocking copies are sync-bound too (pageable-memcpy is the "how" for the copy
# part and yields the slice when this finding is larger)
CAUSES = ("sync_drained", "blocking_copy")
HELD = PATTERN + "-held"


def _held(v: Views) -> tuple[str, str | None, str]:
    """A sentence on what the longest blocking call waited for, the fix variant of
    sync-bound-held when another stream held it (None: the call waited for its own work), and
    what an A/B of that fix compares."""
    from crossview.views.device import blocking_waits  # only when it fires (decision 0760)

    lim = v.limits
    waits = blocking_waits.longest(v.store, v.sync_calls().names, lim.blocking_wait_calls,
                                   lim.blocking_wait_release_ns)
    if not waits:
        return "", None, ""
    w = waits[0]
    where = f" under `{short(w.scope, 60)}`" if w.scope else ""
    text = (f" The longest blocking call, `{w.call}`{where} ({duration(w.host_ns)}), launched "
            f"a {duration(w.op_ns)} `{short(w.op_name, 50)}` on stream {w.stream}")
    r = w.release
    if r is None or w.held_ns < lim.blocking_wait_held_share * w.host_ns:
        return text + ": it waited for the work queued ahead of it on that stream.", None, ""
    comm = r.family == "comm"
    alike = sum(1 for x in waits if x.release and x.release.stream == r.stream
                and x.held_ns >= lim.blocking_wait_held_share * x.host_ns)
    text += (f"; stream {w.stream} held its queued work {duration(w.held_ns)} from the call's "
             f"start and began {duration(r.lag_ns)} after {'the collective ' if comm else ''}"
             f"`{short(r.name, 50)}` on stream {r.stream} ended: the call waited on stream "
             f"{r.stream}'s work ({'the other ranks' if comm else 'a cross-stream dependency'})"
             f", not on its own {'copy' if 'memcpy' in w.call.lower() else 'work'}"
             f" ({alike} of the {len(waits)} longest blocking calls alike).")
    check = (f" An A/B compares the step time and the host time of `{w.call}`{where} "
             f"({duration(w.host_ns)} in the longest call here) once stream {w.stream} no "
             f"longer waits on stream {r.stream}.")
    return text, "collective" if comm else "default", check


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0 or not m.sync_apis:
        return []
    eff = v.gpu_inside(v.sync_calls())
    if eff.count == 0:
        return []
    sl = slice_of(v, *CAUSES)
    share = sl.share if sl is not None else eff.gaps_opened_inside_ns / m.kernel_span_ns
    names = ", ".join(f"{short(a.name, 40)} ×{a.count:,} ({ms(a.time_ns)})"
                      for a in m.sync_apis[:4])
    obs = (
        f"Synchronizing calls: {names}. The host spent {ms(eff.host_ns)} blocked inside the "
        f"kernel span; the GPU stayed busy {eff.gpu_busy_inside_pct:.1f}% of that time. "
    )
    if sl is not None:
        top = "; ".join(f"`{short(f.frame, 80)}` {ms(f.ns)}" for f in sl.top_frames)
        parts = "; ".join(f"{c.label} {ms(c.ns)}" for c in sl.rows)
        obs += (f"The time account charges {ms(sl.ns)} per steady step ({pct(share)}) to "
                f"host calls that blocked while the GPU sat idle ({parts})"
                + (f", in {top}" if top else ""))
    else:
        obs += (f"Idle gaps that opened while the host was blocked total "
                f"{ms(eff.gaps_opened_inside_ns)} ({pct(share)} of the span)")
    sev = severity(share, lim.sync_red_share, lim.sync_yellow_share)
    # idle inside CUDA-graph replays: the trace misses GPU work (detectors/graph_unrecorded.py),
    # so a blocked host may be waiting on that work rather than draining the GPU
    hidden = slice_of(v, "graph_unrecorded")
    unsure = hidden is not None and hidden.share >= lim.graph_unrecorded_yellow_share
    if unsure and sev == "red":
        sev = "yellow"
    held, variant, check = _held(v) if sev else ("", None, "")
    ev = evidence(v, "sync API intervals against device idle gaps (time account: "
                     "sync_drained)")
    if sev is None:
        if eff.host_ns < lim.sync_yellow_share * m.kernel_span_ns:
            return []  # too little blocked time to mention
        # waits during which the GPU keeps working are the host waiting for real work
        # the verdict must agree with the numbers beside it: a GPU that idled while the host
        # was blocked, yet is not charged to syncs, had its idle charged elsewhere (another
        # cause first in the precedence, or time outside the steady steps)
        if sl is None:
            why = ": the host waits for real work, not sync-bound."
        else:
            why = (f": {pct(share)} of the steady step is charged to them, under the "
                   f"{pct(lim.sync_yellow_share)} cut — not sync-bound" + (
                       "; the host mostly waits for real work."
                       if eff.gpu_busy_inside_pct >= lim.sync_gpu_busy_mostly_pct
                       else "; the rest of the GPU idle during these calls is charged to "
                       "other causes in the time account or lies outside the steady steps."))
        return [Finding(
            pattern=PATTERN, severity="info",
            title="Host syncs present but not draining the GPU in the steady state",
            observation=obs + why,
            fix="None needed for throughput; keep syncs out of the inner loop.", share=share,
            evidence=ev,
        )]
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"Sync-bound: the GPU idles while the host blocks in syncs / copies "
              f"({pct(share)} of the step)",
        observation=obs + (
            f". The trace misses GPU work inside CUDA-graph replays ({ms(hidden.ns)} per step: "
            "the graph-unrecorded finding): these calls may wait on that work, not drain the "
            "GPU — re-capture before acting on them." if unsure and hidden is not None else
            ": each sync empties the queue, then the GPU waits for the host.") + held,
        fix=(fix_for(HELD, variant, fix_where(v)) if variant
             else fix_for(PATTERN, v.engine, fix_where(v))), share=share, evidence=ev,
        expected_effect=(
            f"Up to {ms(sl.ns)} per step, the GPU idle charged to these blocking calls."
            + check if sl and check else
            f"Up to {ms(sl.ns)} per step if the syncs go." if sl else
            f"Up to {ms(eff.gaps_opened_inside_ns)} of GPU idle if the syncs go."),
        details=claims(*CAUSES) if sl is not None else {},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("sync_red_share", "sync_yellow_share", "sync_gpu_busy_mostly_pct",
                "blocking_wait_calls", "blocking_wait_held_share", "blocking_wait_release_ns",
                "graph_unrecorded_yellow_share"),
    fix_keys=(PATTERN, HELD))
