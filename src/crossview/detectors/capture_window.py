"""capture-window: what the capture itself holds (start-up work, or no GPU activity at all).

With a time account, start-up (JIT compile / autotune, time outside the capture's kernels)
is reported apart from the steady state and never drives a steady-state top issue — unless
the capture holds nothing else (every step is warm-up / JIT / start-up): then it is the claim,
and the fix says how to capture the steady state."""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import Claim, Count, Facts, FixPart, Ns, Owns, Phrasing, Share
from crossview.detectors.account_share import AccountSlice, facts, slice_of
from crossview.detectors.common import cites, crossed, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.knowledge import frames
from crossview.views.host.sampled_runtime import RuntimeShare, SampledRuntime
from crossview.views.views import Views

PATTERN = "capture-window"
CAUSES = ("jit_compile", "capture_boundary")


class HostOnly(Facts, frozen=True, kw_only=True):
    cpu_samples: Count
    sampled_ns: Ns
    host_ns: Ns


class StartupFrames(Facts, frozen=True, kw_only=True):
    ns: Ns  # wall time in start-up frames (union over threads)
    span_share: Share  # of the host time span
    frames: Count  # distinct start-up frames
    top: tuple[tuple[str, Ns], ...]


class Flagged(Struct, frozen=True):
    step: str
    reasons: tuple[str, ...]  # scope/step_detect.py flag sentences, as recorded


class StartupOnly(Facts, frozen=True, kw_only=True):
    slice: AccountSlice
    steps: tuple[Flagged, ...]
    compiled: tuple[str, ...] = ()  # the torch.compile frames among the longest (compiling)


class RuntimeKind(Struct, frozen=True, kw_only=True):
    kind: str
    what: str  # sampled_runtime.KINDS words
    ns: Ns
    samples: Count
    top: tuple[tuple[str, Ns], ...]


class Sampled(Facts, frozen=True, kw_only=True):
    samples: Count
    total_ns: Ns
    broken: Count
    runtime: str | None
    shares: tuple[RuntimeKind, ...]
    startup_ns: Ns
    error_frame: str | None = None  # the runtime reporting an uncaught error


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, v.limits
    if m.cpu_only:
        return _sampled_startup(v) + [Claim(
            pattern=PATTERN, form="cpu-only", share=0.0, tier="note",
            fix=(FixPart(key="capture-no-cuda"),),
            cites=cites(v, "no-kernels"),
            facts=HostOnly(cpu_samples=m.cpu_samples, sampled_ns=m.cpu_sampled_ns,
                           host_ns=m.host_time_ns))]
    acc = v.account
    if acc is not None and acc.steady_fallback:
        return _startup_only(v)
    t, n, top = v.startup_ns
    span = m.host_span_ns or 1
    share = t / span
    if n == 0 or share < lim.startup_yellow_share:
        return []
    return [Claim(
        pattern=PATTERN, form="startup-frames", share=share if acc is None else 0.0,
        tier="consider", fix=(FixPart(key=PATTERN),), cites=cites(v, "startup-frames"),
        facts=StartupFrames(ns=t, span_share=share, frames=n,
                            top=tuple((name, ns) for name, ns in top)))]


def _sampled_startup(v: Views) -> list[Claim]:
    """A CPU-only sampled capture whose stacks are largely start-up (JIT compile, loading)."""
    rt, lim = v.sampled_runtime, v.limits
    up = rt.share("startup") if rt is not None else None
    if rt is None or up is None:
        return []
    share = up.ns / rt.total_ns if rt.total_ns else 0.0
    cut = crossed(share, lim.red_share, lim.yellow_share, ("red_share", "yellow_share"))
    if cut is None:
        return []
    err = rt.share("error_exit")  # the program is reporting an uncaught error: that first
    fix = (FixPart(key="sampled-error"),) if err else ()
    return [Claim(
        pattern=PATTERN, form="sampled-startup", share=share,
        tier="top" if err else cut[0], cutoff=cut[1],
        fix=(*fix, FixPart(key="sampled-startup")),
        cites=cites(v, "sampled-startup"), rigor="L1",
        facts=Sampled(samples=rt.samples, total_ns=rt.total_ns, broken=rt.broken_samples,
                      runtime=rt.runtime, startup_ns=up.ns,
                      shares=tuple(RuntimeKind(kind=s.kind, what=s.what, ns=s.ns,
                                               samples=s.samples, top=tuple(s.top))
                                   for s in rt.shares),
                      error_frame=err.top[0][0] if err and err.top else None))]


def _startup_only(v: Views) -> list[Claim]:
    """Every step is warm-up / JIT / start-up: the capture holds no steady state."""
    lim = v.limits
    sl = slice_of(v, *CAUSES)
    if sl is None or sl.ns == 0:
        return []
    cut = crossed(sl.share, lim.red_share, lim.yellow_share, ("red_share", "yellow_share"))
    if cut is None:
        return []
    compiling = tuple(f.frame for f in sl.top_frames if frames.is_torch_compile(f.frame))
    return [Claim(
        pattern=PATTERN, form="torch-compile" if compiling else "startup-only", share=sl.share,
        tier=cut[0], cutoff=cut[1], owns=Owns(causes=CAUSES),
        fix=(FixPart(key="steady-state-capture",
                     flags=("torch_compile",) if compiling else ()),),
        cites=cites(v, "startup-account"),
        facts=StartupOnly(slice=facts(sl), compiled=compiling, steps=tuple(
            Flagged(x.name, tuple(x.reasons)) for x in v.steps.steps)))]


def _runtime(f: Sampled) -> SampledRuntime:
    return SampledRuntime(f.samples, f.total_ns, f.broken, f.runtime, [
        RuntimeShare(s.kind, s.what, s.ns, s.samples, list(s.top)) for s in f.shares])


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    if isinstance(f, HostOnly):
        held = (f"{f.cpu_samples:,} CPU samples, ~{ms(f.sampled_ns)} of thread time, L1"
                if f.sampled_ns else f"{f.cpu_samples:,} CPU samples, period unknown, L1"
                if f.cpu_samples else f"{ms(f.host_ns)} of host time")
        return Phrasing(title="CPU-only capture: no GPU kernels in the trace",
                        observation=(f"The trace holds host activity only ({held}); GPU "
                                     "metrics and the GPU view are not available."))
    if isinstance(f, StartupFrames):
        names = "; ".join(f"`{short(name, 70)}` {ms(ns)}" for name, ns in f.top)
        return Phrasing(
            title=f"Start-up work inside the capture ({pct(f.span_share)} of the host time span)",
            observation=(f"The host spent {ms(f.ns)} (wall, union over threads) in start-up "
                         f"frames — JIT compilation, module loading, autotuning — "
                         f"{f.frames:,} distinct frames, longest in total: {names}. That is "
                         "warm-up, not steady state; GPU idle during it is not a lever."))
    if isinstance(f, Sampled):
        title = (f"The run reports an uncaught error (`{short(f.error_frame, 50)}`) after its "
                 f"start-up (at least {pct(c.share)} of the sampled host time is JIT "
                 "compilation and code loading)" if f.error_frame else
                 f"The capture is largely start-up: at least {pct(c.share)} of the sampled host "
                 "time is JIT compilation and code loading")
        rt = _runtime(f)
        return Phrasing(
            title=title,
            observation=rt.describe() + " Start-up is warm-up, not the workload: its host "
                        "time says nothing about the steady state.",
            effect=(f"None on the workload itself: {ms(f.startup_ns)} of the "
                    f"{ms(f.total_ns)} sampled here is start-up; a capture of the steady "
                    "state shows what to change there."),
            details={"sampled_runtime": rt.to_dict()})
    assert isinstance(f, StartupOnly)
    sl = f.slice
    rows = "; ".join(f"{r.label} {ms(r.ns)} ({pct(r.share)})" for r in sl.rows)
    top = "; ".join(f"`{short(t.frame, 70)}` {ms(t.ns)}" for t in sl.top)
    flagged = "; ".join(f"`{short(x.step, 50)}`: {', '.join(x.reasons)}" for x in f.steps)
    if f.compiled:
        return Phrasing(
            title=f"torch.compile compiles inside the capture: {pct(c.share)} of it is "
                  "compilation and time outside the kernels, not the steady state",
            observation=(f"The capture's window holds torch.compile compiling the model "
                         f"({', '.join(f'`{short(x, 60)}`' for x in f.compiled)}): "
                         f"{flagged}. Of {ms(sl.wall_ns)}: {rows}" + (
                             f"; longest: {top}" if top else "") + ". The first call of a "
                         "compiled model compiles it; launch and idle numbers of that call say "
                         "nothing about the compiled steady state."))
    return Phrasing(
        title=f"The capture is start-up, not steady state: {pct(c.share)} of it is JIT "
              "compile / time outside the kernels",
        observation=(f"No steady-state step in this capture ({flagged}). Of "
                     f"{ms(sl.wall_ns)}: {rows}" + (f"; longest: {top}" if top else "")
                     + ". Launch and idle numbers of start-up say nothing about the steady "
                     "state."))



DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("startup_yellow_share", "red_share", "yellow_share",
                "steps.yaml:jit_step_share", "steps.yaml:startup_step_share"),
    fix_keys=(PATTERN, "capture-no-cuda", "steady-state-capture", "sampled-startup",
              "sampled-error"),
    about=About(side="capture"))
