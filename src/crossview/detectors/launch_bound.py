"""kernel-launch-bound and cuda-graphs-missing: the host never gets ahead of the GPU.

With a time account (views/device/account.py): kernel-launch-bound owns the `launch_overhead` slice
and, when the launch queue is empty at most launches (the host never got ahead), the
`cpu_dispatch` slice too — then host-python-overhead yields it. A 🔴 needs that empty queue:
a deep queue between a few long host stalls is not launch-bound, whatever the kernel sizes.
The fix fits the capture: when most kernels already replay from graphs it names the kernels
still launched one by one instead of saying "enable CUDA graphs".
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, per_step, slice_of
from crossview.detectors.common import (
    evidence,
    fix_where,
    is_compiled,
    ms,
    pct,
    profiler_stack_note,
    severity,
    short,
)
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.device.account import CauseSlice
from crossview.views.views import Views

PATTERN = "kernel-launch-bound"
GRAPHS = "cuda-graphs-missing"
PARTIAL = "kernel-launch-bound-graphs-partial"
CAUSES = ("launch_overhead", "cpu_dispatch")

_EAGER = """
SELECT g.name, count(*), sum(g.dur_ns) FROM f_gpu g WHERE g.kind = 'kernel'
AND NOT coalesce(g.via_graph, false) GROUP BY 1 ORDER BY 2 DESC LIMIT 3
"""


def _variant(v: Views) -> str | None:
    """The fix variant: the engine's, else "compiled" when torch.compile already ran the step
    without graphs (no graph launch), else None (default)."""
    if v.engine or (v.metrics.launch and v.metrics.launch.graph_launches):
        return v.engine
    if not is_compiled(v):
        return None
    return "compiled_no_inductor" if _inductor_facts(v) else "compiled"


_TRITON = """
SELECT count(*) FILTER (starts_with(name, 'triton')), count(*),
       count(*) FILTER (family = 'elementwise')
FROM f_gpu WHERE kind = 'kernel'
"""


def _inductor_facts(v: Views) -> dict[str, object]:
    """{} when Inductor's Triton kernels are in the trace; else the counts the
    compiled_no_inductor fix quotes (a compiled step whose backend is not Inductor)."""
    triton, kernels, eager = v.store.sql(_TRITON).fetchall()[0]
    return {} if triton or not kernels else {"kernels": f"{kernels:,}", "eager": f"{eager:,}"}


def _large_step(v: Views) -> tuple[str, dict[str, object]] | None:
    """A vLLM step larger than vLLM's default largest CUDA-graph size runs without a graph
    even when graphs are on: (observation sentence, facts for the fix text), else None."""
    from crossview.views.host import engine_batch  # only on vLLM captures (decision 0760)

    got = engine_batch.batches(v.store, v.engine, v.steps.steady)
    big = max(got, key=lambda b: b.tokens, default=None)
    if big is None or big.tokens <= engine_batch.vllm_default_max_graph():
        return None
    obs = (f" The largest steady step's batch, as vLLM's annotation `{big.annotation}` "
           f"states it: {big.tokens:,} tokens ({big.prefill_tokens:,} prefill in "
           f"{big.prefill_reqs:,} request{'s' if big.prefill_reqs != 1 else ''}, "
           f"{big.decode_tokens:,} decode).")
    return obs, {"tokens": f"{big.tokens:,}", "size": engine_batch.vllm_graph_size(big.tokens),
                 "default_max": engine_batch.vllm_default_max_graph()}


def _mechanism(rows: list[CauseSlice], host_never_ahead: bool) -> str:
    """The title's mechanism when the launch calls hold less of the wait than the op-by-op
    dispatch between them (B200 vLLM eager: 5.84 ms of launch calls in a 71.58 ms wait): the
    pattern's name alone reads as "launch calls are slow"."""
    calls = sum(r.ns for r in rows if r.cause == "launch_overhead")
    between = sum(r.ns for r in rows if r.cause == "cpu_dispatch")
    if not host_never_ahead or calls >= between:
        return ""
    share = sum(r.share_of_step for r in rows if r.cause == "launch_overhead")
    return f", mostly dispatching ops one by one (the launch calls themselves: {pct(share)})"


def detect(v: Views) -> list[Finding]:
    m, lim, ls = v.metrics, v.limits, v.metrics.launch
    if m.cpu_only or ls is None or m.kernel_count == 0 or m.kernel_span_ns == 0:
        return []
    acc = v.account
    out: list[Finding] = []
    short_share = ls.short_kernels / m.kernel_count
    graph_share = ls.kernels_via_graph / m.kernel_count
    mostly_graphs = graph_share >= lim.graphs_mostly_share
    where = fix_where(v)
    ev = evidence(v, "kernel durations, launch API calls, launch queue and idle gaps per "
                     "device (time account)")
    if acc is not None:
        owned = CAUSES if acc.launch_bound else CAUSES[:1]
        sl = slice_of(v, *owned)
        assert sl is not None
        share, waiting = sl.share, sl.ns
        launch_sev = severity(share, lim.red_share, lim.yellow_share)
        if launch_sev == "red" and not acc.launch_bound:
            launch_sev = "yellow"
        regime = (f"the launch queue was empty at {pct(acc.empty_queue_share)} of launches "
                  "(the host never got ahead)" if acc.launch_bound else
                  f"the launch queue was empty at only {pct(acc.empty_queue_share)} of "
                  "launches (deep between host stalls)")
        top = "; ".join(f"`{short(f.frame, 70)}` {ms(f.ns)}" for f in sl.top_frames)
        wait_txt = (f"{per_step(v)} the GPU waited {ms(waiting)} ({pct(share)} of the "
                    f"{ms(sl.wall_ns)} step) on " + (
                        "launch calls and the CPU work between them" if acc.launch_bound
                        else "launch calls") + (f" ({top})" if top else "") + f"; {regime}.")
        details = claims(*owned)
        mechanism = _mechanism(sl.rows, acc.launch_bound)
    else:
        waiting = m.idle.host_wait_ns + m.idle.kernel_wait_ns
        share = waiting / m.kernel_span_ns
        launch_sev = severity(share, lim.red_share, lim.yellow_share) \
            if short_share >= lim.launch_bound_short_share else None
        wait_txt = (f"The GPU waited on launches for {ms(waiting)} ({pct(share)} of the "
                    "kernel span).")
        details = {}
        mechanism = ""
    eager = [(str(n), int(c), int(t)) for n, c, t in v.store.sql(_EAGER).fetchall()] \
        if mostly_graphs else []
    # one scan for both findings, only when one is made
    variant = _variant(v) if launch_sev and not mostly_graphs else v.engine
    large = _large_step(v) if variant == "vllm" and launch_sev and not mostly_graphs else None
    facts: dict[str, object] = large[1] if large else (
        _inductor_facts(v) if variant == "compiled_no_inductor" else {})
    if large:
        variant = "vllm_large_step"
    if launch_sev:
        obs = (
            f"{ls.short_kernels:,} of {m.kernel_count:,} kernels ({pct(short_share)}) ran "
            f"shorter than {ms(ls.short_kernel_ns)} (median kernel {ms(ls.median_kernel_ns)}, "
            f"median launch call {ms(ls.median_launch_ns)}); {ls.launch_calls:,} launch calls "
            f"took {ms(ls.launch_time_ns)} of host time. {wait_txt}"
        )
        if mostly_graphs:
            obs += (f" {pct(graph_share)} of kernels already replay from graphs "
                    f"({ls.graph_launches:,} graph launches); launched one by one: "
                    + "; ".join(f"`{short(n, 70)}` ×{c:,} ({ms(t)})" for n, c, t in eager)
                    + ".")
        if large:
            obs += large[0]
        out.append(Finding(
            pattern=PATTERN, severity=launch_sev,
            title=(f"Launch-bound: the GPU waits on the host {pct(share)} of the step"
                   + mechanism if acc is not None else
                   f"Launch-bound: {pct(short_share)} of kernels shorter than "
                   f"{ms(ls.short_kernel_ns)}, GPU waiting on launches {pct(share)} of the "
                   "span"),
            observation=obs,
            fix=(fix_for(PARTIAL, v.engine, where) if mostly_graphs
                 else fix_for(PATTERN, variant, where, **facts)) + profiler_stack_note(v),
            share=share, evidence=ev,
            expected_effect="Replaying the step as a graph removes per-kernel launch cost; "
                            f"the waiting time ({ms(waiting)}) bounds the gain.",
            details=details,
        ))
    eager_short = ls.short_kernels - min(ls.kernels_via_graph, ls.short_kernels)
    if eager_short >= lim.graphs_missing_min_kernels and not mostly_graphs and launch_sev:
        # the "how" beside the finding that names the cause: a note, never a second charge
        # of the same time (it claims no account slice)
        out.append(Finding(
            pattern=GRAPHS, severity="info",
            title=f"CUDA graphs not used: {eager_short:,} short kernels launched one by one",
            observation=(
                f"{ls.graph_launches} graph launches ({ls.kernels_via_graph:,} kernels, "
                f"{pct(graph_share)} of all) against {ls.launch_calls:,} individual launch "
                f"calls; {eager_short:,} kernels under {ms(ls.short_kernel_ns)} ran outside "
                "any graph."
            ),
            fix=fix_for(GRAPHS, variant, where, **facts), share=0.0, evidence=ev,
        ))
    return out


DECLARATION = Declaration(
    patterns=(PATTERN, GRAPHS), detect=detect, causes=CAUSES,
    thresholds=("red_share", "yellow_share", "launch_bound_short_share",
                "graphs_missing_min_kernels", "graphs_mostly_share",
                "account.yaml:queue_empty_launch_share", "profiler_stack_frames_per_ms"),
    fix_keys=(PATTERN, GRAPHS, PARTIAL),
    shared={"cpu_dispatch": "host-python-overhead owns it when the launch queue is deep"})
