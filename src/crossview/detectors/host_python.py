"""host-python-overhead: while the GPU waits on the host, the host runs Python/framework code.

With a time account: the `cpu_dispatch` slice (GPU idle while the launching thread ran an
operator, Python or dispatcher frame between launches) when the launch queue is deep — a few
long host stalls of CPU work. When the queue is empty at most launches the same slice is
kernel-launch-bound's (the fix is the same family: graphs / compile), so this yields.
Without an account: the host-wait idle × the share of Python/operator self time on the
launching threads (a proportional attribution, stated as such).
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Phrasing, Share
from crossview.detectors.account_share import AccountSlice, facts, per_step, slice_of
from crossview.detectors.common import cites, crossed, is_compiled, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.knowledge import api_roles
from crossview.knowledge.frames import zero_grad_ops
from crossview.views.host import launch_threads, optimizer_windows
from crossview.views.views import Views

PATTERN = "host-python-overhead"
CAUSES = ("cpu_dispatch",)
ZERO_GRAD = PATTERN + "-zero-grad"


class ZeroFill(Struct, frozen=True, kw_only=True):
    call: str  # the optimizer reset's op-name prefix
    fill: str  # the fill op under it
    fills: Count
    resets: Count


class SelfTime(Struct, frozen=True):
    frame: str
    ns: Ns
    share: Share  # of the launching threads' own time


class HostWork(Facts, frozen=True, kw_only=True):
    slice: AccountSlice | None = None
    empty_queue: Share = 0.0
    zero: ZeroFill | None = None
    # without an account: the proportional attribution
    host_wait_ns: Ns = 0
    python_ns: Ns = 0
    thread_ns: Ns = 0
    charged_ns: Ns = 0
    span_ns: Ns = 0
    top: tuple[SelfTime, ...] = ()


def _zero_grad(v: Views, frames: list[str]) -> ZeroFill | None:
    """The optimizer's zero_grad zero-filling gradients, when it is among the top frames."""
    call, fill = zero_grad_ops()
    if not any(f.startswith(call) or f == fill for f in frames):
        return None
    fills, resets = optimizer_windows.zero_fills(v, fill, call)
    if not fills:
        return None
    return ZeroFill(call=call, fill=fill, fills=fills, resets=resets)


def _flags(v: Views) -> tuple[str, ...]:
    """What picks the fix's variant (fixes.yaml host-python-overhead): a tensor-parallel job
    graphs its step with its framework's flag; a step torch.compile already runs needs
    graphs and fewer breaks, not compiling again. (An engine's own variants come first.)"""
    out = ("tensor-parallel",) if v.parallelism.kind == "tensor-parallel" else ()
    return out + (("compiled",) if is_compiled(v) else ())


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or m.kernel_span_ns == 0 or not v.filter.window_ns:
        return []
    keys = ("python_overhead_red_share", "python_overhead_yellow_share")
    acc = v.account
    if acc is not None:
        if acc.launch_bound:
            return []  # kernel-launch-bound owns cpu_dispatch in this regime
        sl = slice_of(v, *CAUSES)
        if sl is None or sl.ns == 0:
            return []
        cut = crossed(sl.share, lim.python_overhead_red_share,
                      lim.python_overhead_yellow_share, keys)
        if cut is None:
            return []
        zero = _zero_grad(v, [f.frame for f in sl.top_frames])
        fix = (FixPart(key=ZERO_GRAD),) if zero else ()
        return [Claim(
            pattern=PATTERN, form="account", share=sl.share, tier=cut[0], cutoff=cut[1],
            owns=Owns(causes=CAUSES),
            fix=(*fix, FixPart(key=PATTERN, flags=_flags(v), located=True)),
            cites=cites(v, "cpu-dispatch"),
            facts=HostWork(slice=facts(sl), empty_queue=acc.empty_queue_share, zero=zero))]
    if m.idle.host_wait_ns == 0:
        return []
    lo, hi = v.filter.window_ns
    rows = launch_threads.self_time(v, lo, hi)
    total = sum(int(s) for _, _, s in rows)
    if total == 0:
        return []
    waits = set(api_roles.names_with_role("sync_ops"))
    py = [(n, k, int(s)) for n, k, s in rows if k in ("python", "op") and n not in waits]
    py_ns = sum(s for _, _, s in py)
    charged = int(m.idle.host_wait_ns * (py_ns / total))
    share = charged / m.kernel_span_ns
    cut = crossed(share, lim.python_overhead_red_share, lim.python_overhead_yellow_share, keys)
    if cut is None:
        return []
    return [Claim(
        pattern=PATTERN, form="span", share=share, tier=cut[0], cutoff=cut[1],
        fix=(FixPart(key=PATTERN, flags=_flags(v), located=True),),
        cites=cites(v, "python-self"),
        facts=HostWork(host_wait_ns=m.idle.host_wait_ns, python_ns=py_ns, thread_ns=total,
                       charged_ns=charged, span_ns=m.kernel_span_ns,
                       top=tuple(SelfTime(n, s, s / total) for n, _, s in py[:3])))]


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, HostWork)
    sl = f.slice
    if sl is not None:
        top = "; ".join(f"`{short(t.frame, 80)}` {ms(t.ns)}" for t in sl.top)
        z = f.zero
        zero = (f" `{z.call}` zero-fills the gradients: {z.fills:,} `{z.fill}` ops under "
                f"{z.resets:,} calls ({z.fills / z.resets:,.0f} per call, one fill kernel "
                "each).") if z is not None and z.resets else ""
        return Phrasing(
            title=f"Host Python/framework work between launches: the GPU waits on it "
                  f"{pct(c.share)} of the step",
            observation=(
                f"{per_step(sl)} the GPU idled {ms(sl.ns)} ({pct(c.share)} of the "
                f"{ms(sl.wall_ns)} step) while the launching thread ran operator, Python or "
                f"dispatcher code between launches (innermost frames: {top}); the launch "
                f"queue was empty at {pct(f.empty_queue)} of launches, so these are "
                "stalls of CPU work between deep queues, not per-launch cost." + zero))
    frac = f.python_ns / f.thread_ns if f.thread_ns else 0.0
    top = "; ".join(f"`{short(t.frame, 80)}` {ms(t.ns)} ({pct(t.share)})" for t in f.top)
    return Phrasing(
        title=f"Host Python/framework overhead: ~{pct(c.share)} of the kernel span the GPU "
              f"waits on it",
        observation=(
            f"The GPU waited {ms(f.host_wait_ns)} for launches (host wait). On the "
            f"launching threads {pct(frac)} of own time ({ms(f.python_ns)} of "
            f"{ms(f.thread_ns)}) is Python and operator dispatch rather than CUDA calls, so "
            f"~{ms(f.charged_ns)} of that wait ({pct(c.share)} of the {ms(f.span_ns)} kernel "
            f"span) is charged to it; top self frames: {top}."),
        details={"python_self_ns": f.python_ns, "thread_self_ns": f.thread_ns,
                 "charged_ns": f.charged_ns})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("python_overhead_red_share", "python_overhead_yellow_share"),
    fix_keys=(PATTERN, ZERO_GRAD),
    shared={"cpu_dispatch": "kernel-launch-bound owns it when the launch queue is empty"},
    about=About(side="host", corroborated_by=("host-cpu",)))
