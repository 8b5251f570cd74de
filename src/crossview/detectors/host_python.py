"""host-python-overhead: while the GPU waits on the host, the host runs Python/framework code.

With a time account: the `cpu_dispatch` slice (GPU idle while the launching thread ran an
operator, Python or dispatcher frame between launches) when the launch queue is deep — a few
long host stalls of CPU work. When the queue is empty at most launches the same slice is
kernel-launch-bound's (the fix is the same family: graphs / compile), so this yields.
Without an account: the host-wait idle × the share of Python/operator self time on the
launching threads (a proportional attribution, stated as such).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, per_step, slice_of
from crossview.detectors.common import evidence, fix_where, ms, pct, severity, short
from crossview.detectors.declare import Declaration
from crossview.knowledge import api_roles
from crossview.knowledge.fixes import fix_for
from crossview.knowledge.frames import zero_grad_ops
from crossview.views.views import Views

PATTERN = "host-python-overhead"
CAUSES = ("cpu_dispatch",)
ZERO_GRAD = PATTERN + "-zero-grad"
# zero-fill ops directly under the optimizer's reset, and how many resets
_ZERO_FILLS = """
SELECT count(*), count(DISTINCT p.op_id) FROM f_host z JOIN host_ops p ON p.op_id = z.parent
WHERE z.name = $fill AND starts_with(p.name, $call)
"""


def _zero_grad(v: Views, frames: list[str]) -> str:
    """A sentence when the optimizer's zero_grad zero-fills gradients among the top frames."""
    call, fill = zero_grad_ops()
    if not any(f.startswith(call) or f == fill for f in frames):
        return ""
    fills, resets = v.store.sql(_ZERO_FILLS, {"fill": fill, "call": call}).fetchall()[0]
    if not fills:
        return ""
    return (f" `{call}` zero-fills the gradients: {fills:,} `{fill}` ops under {resets:,} "
            f"calls ({fills / resets:,.0f} per call, one fill kernel each).")

_SELF_ON_LAUNCH_THREADS = """
WITH t AS (SELECT DISTINCT h.artifact_id, h.pid, h.tid FROM f_gpu g
           JOIN host_ops h ON h.op_id = g.launch_op_id)
SELECT f.name, f.kind, sum(f.self_ns) AS s
FROM f_host f JOIN t USING (artifact_id, pid, tid)
WHERE f.start_ns >= $lo AND f.start_ns < $hi
GROUP BY ALL ORDER BY s DESC
"""


def detect(v: Views) -> list[Finding]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0 or not v.filter.window_ns:
        return []
    acc = v.account
    if acc is not None:
        if acc.launch_bound:
            return []  # kernel-launch-bound owns cpu_dispatch in this regime
        sl = slice_of(v, *CAUSES)
        if sl is None or sl.ns == 0:
            return []
        sev = severity(sl.share, lim.python_overhead_red_share,
                       lim.python_overhead_yellow_share)
        if sev is None:
            return []
        top = "; ".join(f"`{short(f.frame, 80)}` {ms(f.ns)}" for f in sl.top_frames)
        zero = _zero_grad(v, [f.frame for f in sl.top_frames])
        fix = fix_for(PATTERN, v.engine, fix_where(v))
        if zero:
            fix = fix_for(ZERO_GRAD, None) + " " + fix
        return [Finding(
            pattern=PATTERN, severity=sev,
            title=f"Host Python/framework work between launches: the GPU waits on it "
                  f"{pct(sl.share)} of the step",
            observation=(
                f"{per_step(v)} the GPU idled {ms(sl.ns)} ({pct(sl.share)} of the "
                f"{ms(sl.wall_ns)} step) while the launching thread ran operator, Python or "
                f"dispatcher code between launches (innermost frames: {top}); the launch "
                f"queue was empty at {pct(acc.empty_queue_share)} of launches, so these are "
                "stalls of CPU work between deep queues, not per-launch cost." + zero),
            fix=fix, share=sl.share,
            evidence=evidence(v, "innermost host frame of the launching thread during GPU "
                                 "idle (time account: cpu_dispatch)"),
            details=claims(*CAUSES),
        )]
    if m.idle.host_wait_ns == 0:
        return []
    lo, hi = v.filter.window_ns
    rows = v.store.sql(_SELF_ON_LAUNCH_THREADS, {"lo": lo, "hi": hi}).fetchall()
    total = sum(int(s) for _, _, s in rows)
    if total == 0:
        return []
    waits = set(api_roles.names_with_role("sync_ops"))
    py = [(n, k, int(s)) for n, k, s in rows if k in ("python", "op") and n not in waits]
    py_ns = sum(s for _, _, s in py)
    frac = py_ns / total
    charged = int(m.idle.host_wait_ns * frac)
    share = charged / m.kernel_span_ns
    sev = severity(share, lim.python_overhead_red_share, lim.python_overhead_yellow_share)
    if sev is None:
        return []
    top = "; ".join(f"`{short(n, 80)}` {ms(s)} ({pct(s / total)})" for n, _, s in py[:3])
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"Host Python/framework overhead: ~{pct(share)} of the kernel span the GPU "
              f"waits on it",
        observation=(
            f"The GPU waited {ms(m.idle.host_wait_ns)} for launches (host wait). On the "
            f"launching threads {pct(frac)} of own time ({ms(py_ns)} of {ms(total)}) is Python "
            f"and operator dispatch rather than CUDA calls, so ~{ms(charged)} of that wait "
            f"({pct(share)} of the {ms(m.kernel_span_ns)} kernel span) is charged to it; top "
            f"self frames: {top}."
        ),
        fix=fix_for(PATTERN, v.engine, fix_where(v)), share=share,
        evidence=evidence(v, "self time of host frames on the kernel-launching threads"),
        details={"python_self_ns": py_ns, "thread_self_ns": total, "charged_ns": charged},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("python_overhead_red_share", "python_overhead_yellow_share"),
    fix_keys=(PATTERN, ZERO_GRAD),
    shared={"cpu_dispatch": "kernel-launch-bound owns it when the launch queue is empty"})
