"""kernel-launch-bound and cuda-graphs-missing: the host never gets ahead of the GPU.

With a time account (views/device/account.py): kernel-launch-bound owns the `launch_overhead`
slice and, when the launch queue is empty at most launches (the host never got ahead), the
`cpu_dispatch` slice too — then host-python-overhead yields it. A top issue needs that empty
queue: a deep queue between a few long host stalls is not launch-bound, whatever the kernel
sizes (caveat `queue-deep`). The fix fits the capture: when most kernels already replay from
graphs it names the kernels still launched one by one instead of saying "enable CUDA graphs".
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import (
    Claim,
    Count,
    Facts,
    FixPart,
    Ns,
    Owns,
    Phrasing,
    Share,
    Tier,
    Tokens,
)
from crossview.detectors.account_share import AccountSlice, facts, per_step, slice_of
from crossview.detectors.common import (
    cites,
    crossed,
    is_compiled,
    ms,
    pct,
    short,
    stack_density,
)
from crossview.detectors.declare import About, Declaration
from crossview.views.device import kernel_names
from crossview.views.views import Views

PATTERN = "kernel-launch-bound"
GRAPHS = "cuda-graphs-missing"
PARTIAL = "kernel-launch-bound-graphs-partial"
CAUSES = ("launch_overhead", "cpu_dispatch")


class Eager(Struct, frozen=True):
    name: str
    count: Count
    ns: Ns


class LargeStep(Struct, frozen=True, kw_only=True):
    annotation: str
    tokens: Tokens
    prefill_tokens: Tokens
    prefill_reqs: Count
    decode_tokens: Tokens


class Launches(Facts, frozen=True, kw_only=True):
    short_kernels: Count
    kernels: Count
    short_kernel_ns: Ns
    median_kernel_ns: Ns
    median_launch_ns: Ns
    launch_calls: Count
    launch_time_ns: Ns
    waiting_ns: Ns
    graph_launches: Count
    kernels_via_graph: Count
    eager_short: Count  # short kernels outside any graph
    empty_queue: Share | None = None  # launches that found the queue empty (account)
    host_never_ahead: bool = False
    slice: AccountSlice | None = None
    eager: tuple[Eager, ...] = ()  # most graphs replay: the kernels still launched one by one
    large: LargeStep | None = None


def _inductor_fill(v: Views) -> tuple[tuple[str, str], ...] | None:
    """None when Inductor's Triton kernels are in the trace; else the counts the
    compiled_no_inductor fix quotes (a compiled step whose backend is not Inductor)."""
    triton, kernels, eager = kernel_names.triton_counts(v)
    return None if triton or not kernels else (("kernels", f"{kernels:,}"),
                                               ("eager", f"{eager:,}"))


def _large_step(v: Views) -> tuple[LargeStep, tuple[tuple[str, str], ...]] | None:
    """A vLLM step larger than vLLM's default largest CUDA-graph size runs without a graph
    even when graphs are on: (its batch, the values the fix quotes), else None."""
    from crossview.views.host import engine_batch  # lazy: only on vLLM captures (decision 0760)

    got = engine_batch.batches(v, v.engine, v.steps.steady)
    big = max(got, key=lambda b: b.tokens, default=None)
    if big is None or big.tokens <= engine_batch.vllm_default_max_graph():
        return None
    return (LargeStep(annotation=big.annotation, tokens=big.tokens,
                      prefill_tokens=big.prefill_tokens, prefill_reqs=big.prefill_reqs,
                      decode_tokens=big.decode_tokens),
            (("tokens", f"{big.tokens:,}"), ("size", str(engine_batch.vllm_graph_size(
                big.tokens))), ("default_max", str(engine_batch.vllm_default_max_graph()))))


def _fix_flags(v: Views) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...],
                                   LargeStep | None]:
    """Flags the launch fixes' variants may require, the values they quote, and the vLLM step
    above the default graph size when that is the flag (else torch.compile without graphs,
    with or without Inductor)."""
    if v.engine == "vllm":
        large = _large_step(v)
        return (("large_step",), large[1], large[0]) if large else ((), (), None)
    if v.engine or (v.metrics.launch and v.metrics.launch.graph_launches) or not is_compiled(v):
        return (), (), None
    fill = _inductor_fill(v)
    return (("compiled_no_inductor",), fill, None) if fill else (("compiled",), (), None)


def detect(v: Views) -> list[Claim]:
    m, lim, ls = v.metrics, v.limits, v.metrics.launch
    if m.cpu_only or ls is None or m.kernel_count == 0 or m.kernel_span_ns == 0:
        return []
    acc = v.account
    short_share = ls.short_kernels / m.kernel_count
    graph_share = ls.kernels_via_graph / m.kernel_count
    mostly_graphs = graph_share >= lim.graphs_mostly_share
    keys = ("red_share", "yellow_share")
    caveats: tuple[str, ...] = ()
    sl = None
    if acc is not None:
        sl = slice_of(v, *(CAUSES if acc.launch_bound else CAUSES[:1]))
        assert sl is not None
        share, waiting = sl.share, sl.ns
        cut = crossed(share, lim.red_share, lim.yellow_share, keys)
        if not acc.launch_bound:
            caveats = ("queue-deep",)
    else:
        waiting = m.idle.host_wait_ns + m.idle.kernel_wait_ns
        share = waiting / m.kernel_span_ns
        cut = crossed(share, lim.red_share, lim.yellow_share, keys) \
            if short_share >= lim.launch_bound_short_share else None
    if cut is None:
        return []
    eager = [Eager(n, c, t) for n, c, t in kernel_names.eager(v)] if mostly_graphs else []
    flags, fill, large = _fix_flags(v) if not mostly_graphs else ((), (), None)
    f = Launches(
        short_kernels=ls.short_kernels, kernels=m.kernel_count,
        short_kernel_ns=ls.short_kernel_ns, median_kernel_ns=ls.median_kernel_ns,
        median_launch_ns=ls.median_launch_ns, launch_calls=ls.launch_calls,
        launch_time_ns=ls.launch_time_ns, waiting_ns=waiting,
        graph_launches=ls.graph_launches, kernels_via_graph=ls.kernels_via_graph,
        eager_short=ls.short_kernels - min(ls.kernels_via_graph, ls.short_kernels),
        empty_queue=acc.empty_queue_share if acc is not None else None,
        host_never_ahead=bool(acc is not None and acc.launch_bound),
        slice=facts(sl) if sl is not None else None, eager=tuple(eager), large=large)
    dense = stack_density(v)
    note = (FixPart(key="profiler-stack-note", fill=(
        ("frames", f"{dense[0]:,}"), ("wall", ms(dense[1])), ("per_ms", f"{dense[2]:,.0f}"))),
    ) if dense else ()
    main = FixPart(key=PARTIAL, located=True) if mostly_graphs else \
        FixPart(key=PATTERN, flags=flags, fill=fill, located=True)
    ev = cites(v, "launches")
    out = [Claim(pattern=PATTERN, form="account" if acc is not None else "span", share=share,
                 tier=cut[0], cutoff=cut[1], caveats=caveats,
                 owns=Owns(causes=sl.causes) if sl is not None else Owns(),
                 fix=(main, *note), cites=ev, facts=f)]
    if f.eager_short >= lim.graphs_missing_min_kernels and not mostly_graphs:
        # the "how" beside the claim that names the cause: a note, never a second charge of
        # the same time (it claims no account slice)
        note_tier: Tier = "note"
        out.append(Claim(pattern=GRAPHS, share=0.0, tier=note_tier,
                         fix=(FixPart(key=GRAPHS, flags=flags, fill=fill, located=True),),
                         cites=ev, facts=f))
    return out


def _mechanism(s: AccountSlice, host_never_ahead: bool) -> str:
    """The title's mechanism when the launch calls hold less of the wait than the op-by-op
    dispatch between them (B200 vLLM eager: 5.84 ms of launch calls in a 71.58 ms wait): the
    pattern's name alone reads as "launch calls are slow"."""
    calls = sum(r.ns for r in s.rows if r.cause == "launch_overhead")
    between = sum(r.ns for r in s.rows if r.cause == "cpu_dispatch")
    if not host_never_ahead or calls >= between:
        return ""
    share = sum(r.share for r in s.rows if r.cause == "launch_overhead")
    return f", mostly dispatching ops one by one (the launch calls themselves: {pct(share)})"


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Launches)
    graph_share = f.kernels_via_graph / f.kernels if f.kernels else 0.0
    if c.pattern == GRAPHS:
        return Phrasing(
            title=f"CUDA graphs not used: {f.eager_short:,} short kernels launched one by one",
            observation=(
                f"{f.graph_launches} graph launches ({f.kernels_via_graph:,} kernels, "
                f"{pct(graph_share)} of all) against {f.launch_calls:,} individual launch "
                f"calls; {f.eager_short:,} kernels under {ms(f.short_kernel_ns)} ran outside "
                "any graph."))
    short_share = f.short_kernels / f.kernels if f.kernels else 0.0
    sl = f.slice
    if sl is not None:
        regime = (f"the launch queue was empty at {pct(f.empty_queue or 0.0)} of launches "
                  "(the host never got ahead)" if f.host_never_ahead else
                  f"the launch queue was empty at only {pct(f.empty_queue or 0.0)} of "
                  "launches (deep between host stalls)")
        top = "; ".join(f"`{short(t.frame, 70)}` {ms(t.ns)}" for t in sl.top)
        wait_txt = (f"{per_step(sl)} the GPU waited {ms(f.waiting_ns)} ({pct(c.share)} of the "
                    f"{ms(sl.wall_ns)} step) on " + (
                        "launch calls and the CPU work between them" if f.host_never_ahead
                        else "launch calls") + (f" ({top})" if top else "") + f"; {regime}.")
        title = (f"Launch-bound: the GPU waits on the host {pct(c.share)} of the step"
                 + _mechanism(sl, f.host_never_ahead))
    else:
        wait_txt = (f"The GPU waited on launches for {ms(f.waiting_ns)} ({pct(c.share)} of the "
                    "kernel span).")
        title = (f"Launch-bound: {pct(short_share)} of kernels shorter than "
                 f"{ms(f.short_kernel_ns)}, GPU waiting on launches {pct(c.share)} of the span")
    obs = (
        f"{f.short_kernels:,} of {f.kernels:,} kernels ({pct(short_share)}) ran "
        f"shorter than {ms(f.short_kernel_ns)} (median kernel {ms(f.median_kernel_ns)}, "
        f"median launch call {ms(f.median_launch_ns)}); {f.launch_calls:,} launch calls "
        f"took {ms(f.launch_time_ns)} of host time. {wait_txt}")
    if f.eager:
        obs += (f" {pct(graph_share)} of kernels already replay from graphs "
                f"({f.graph_launches:,} graph launches); launched one by one: "
                + "; ".join(f"`{short(e.name, 70)}` ×{e.count:,} ({ms(e.ns)})" for e in f.eager)
                + ".")
    if f.large is not None:
        b = f.large
        obs += (f" The largest steady step's batch, as vLLM's annotation `{b.annotation}` "
                f"states it: {b.tokens:,.0f} tokens ({b.prefill_tokens:,.0f} prefill in "
                f"{b.prefill_reqs:,} request{'s' if b.prefill_reqs != 1 else ''}, "
                f"{b.decode_tokens:,.0f} decode).")
    return Phrasing(
        title=title, observation=obs,
        effect="Replaying the step as a graph removes per-kernel launch cost; the waiting time "
               f"({ms(f.waiting_ns)}) bounds the gain.")


DECLARATION = Declaration(
    patterns=(PATTERN, GRAPHS), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("red_share", "yellow_share", "launch_bound_short_share",
                "graphs_missing_min_kernels", "graphs_mostly_share",
                "account.yaml:queue_empty_launch_share", "profiler_stack_frames_per_ms"),
    fix_keys=(PATTERN, GRAPHS, PARTIAL, "profiler-stack-note"),
    shared={"cpu_dispatch": "host-python-overhead owns it when the launch queue is deep"},
    # a list: the first lever the capture supports (graph-region where a region CUDA graphs
    # would cover is recorded, e.g. vLLM's model forward; else launch calls only)
    about=About(side="host", levers=("graph-region", "cuda-graphs"),
                corroborated_by=("host-cpu",)),
    per_pattern={GRAPHS: About(side="host", levers=("graph-region", "cuda-graphs"))})
