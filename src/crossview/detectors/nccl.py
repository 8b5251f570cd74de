"""nccl-collective-bound: communication kernels not overlapped with compute."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity, short
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.views import Views

PATTERN = "nccl-collective-bound"
# exposed communication is a busy row of the account; a host blocked on a collective's peers
# an idle cause: both go away with overlap / fewer collectives
CAUSES = ("exposed_comm", "collective_wait")


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or not v.comm:
        return []
    comm = sum(c.comm_ns for c in v.comm)
    exposed = sum(c.exposed_ns for c in v.comm)
    busy = sum(c.busy_ns for c in v.comm) or 1
    share_busy = exposed / busy
    sl = slice_of(v, *CAUSES)
    # with a time account: the share of the steady step its own rows hold
    sev = severity(sl.share if sl is not None else share_busy, lim.nccl_red_share,
                   lim.nccl_yellow_share)
    if sev is None:
        return []
    top = sorted((t for c in v.comm for t in c.top_collectives), key=lambda t: -t[2])[:3]
    names = "; ".join(f"{short(n, 70)} ×{k:,} ({ms(t)})" for n, k, t in top)
    comm_family = next((f for f in v.families if f.family == "comm"), None)
    obs = (
        # comm is a union over streams while the per-kernel totals are sums: say which is
        # which, or a top collective reads longer than all communication together
        f"Communication kernels occupied the GPU {ms(comm)} (union over streams; summed "
        f"per kernel they are {pct(comm_family.share) if comm_family else '?'} of kernel "
        f"time); {ms(exposed)} of it ({pct(exposed / comm if comm else 0)}) ran with no "
        f"compute kernel alongside — exposed, {pct(share_busy)} of GPU busy time. Top "
        f"(summed kernel time): {names}."
    )
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=(f"NCCL-bound: exposed communication is {pct(share_busy)} of GPU busy time"
               if sl is None else f"NCCL-bound: exposed communication and waits on peers are "
               f"{pct(sl.share)} of the step ({pct(share_busy)} of GPU busy time)"),
        observation=obs + (f" Per steady step: {ms(sl.ns)} ({pct(sl.share)}) exposed or "
                           "waiting on peers (time account)." if sl is not None else ""),
        fix=fix_for(PATTERN, v.engine, fix_where(v)),
        share=sl.share if sl is not None else (
            exposed / m.kernel_span_ns if m.kernel_span_ns else 0.0),
        evidence=evidence(v, "comm-family kernels vs the union of compute kernels per device"),
        expected_effect=(f"Overlapping communication with compute hides up to {ms(exposed)}."
                         if sl is None else "Overlapping communication with compute hides up "
                         f"to {ms(sl.ns)} per step ({ms(exposed)} over the capture)."),
        details={"comm_ns": comm, "exposed_ns": exposed, "share_of_busy": share_busy,
                 **(claims(*CAUSES) if sl is not None else {})},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("nccl_red_share", "nccl_yellow_share"), fix_keys=(PATTERN,))
