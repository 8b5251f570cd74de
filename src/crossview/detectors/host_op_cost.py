"""host-op-overhead: every ATen op pays a host cost far above what the op does.

Ops that only make a view or read metadata (`aten::view`, `aten::as_strided`, …) cost well
under a microsecond each in a healthy run with the profiler on; when nearly all of them take
many microseconds, every op of the step pays that tax before it launches anything, and the
host-side shares of the capture (launch-bound, Python overhead) carry it. CUDA query calls on
the same threads tell the two causes apart: fast queries put the cost in the per-op path
(dispatcher, RecordFunction observers, the profiler's own callbacks, anomaly mode, a debug
build); slow queries too mean a slow or shared CPU. The finding claims no account cause: it
says why the GPU's wait on the host is as long as it is (views/host/op_cost.py).
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import slice_of
from crossview.detectors.common import evidence, ms, pct, severity
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.views.host.op_cost import OpCost, Threads, threads
from crossview.views.views import Views

PATTERN = "host-op-overhead"
# the GPU's idle time while the launching thread ran host work between launches
_HOST_WORK = ("cpu_dispatch", "launch_overhead")


def _cpu_sentence(o: OpCost, t: Threads, ratio: float) -> str:
    if t.query_median_ns is None:
        return ("No CUDA query call was recorded on these steps, so a slow CPU cannot be told "
                "apart from a slow per-op path.")
    q = f"CUDA query calls in the same steps (×{t.queries:,}) take {ms(t.query_median_ns)} median"
    if t.query_median_ns * ratio <= o.floor_ns:
        return (f"{q}: the CPU itself is fast, so the cost is in each ATen op's own path "
                "(dispatcher, RecordFunction callbacks, the profiler's per-op work).")
    return (f"{q}, slow as well: the CPU itself is slow or shared (clock, contention, a "
            "virtual machine), not only the per-op path.")


def detect(v: Views) -> list[Finding]:
    lim = v.limits
    rows = [(o, threads(v.store, o)) for o in v.op_cost
            if o.trivial >= lim.host_op_floor_min_ops and o.floor_ns >= lim.host_op_floor_min_ns
            and o.mean_step_ns > 0]
    if not rows:
        return []
    # the floor's host time per step: the busiest thread's ops per step × the floor its own
    # trivial ops pay (the pooled floor when it runs none)
    per_step = [(o, t, min(o.floor_ns, t.floor_ns or o.floor_ns)) for o, t in rows]
    o, t, each = max(per_step, key=lambda r: r[1].ops / r[0].steps * r[2] / r[0].mean_step_ns)
    floor_ns = int(t.ops / o.steps * each)
    share = floor_ns / o.mean_step_ns
    sev = severity(share, lim.host_op_red_share, lim.host_op_yellow_share)
    if sev is None:
        return []
    names = "; ".join(f"`{n.name}` ×{n.count:,}, median {ms(n.median_ns)}" for n in o.names[:3])
    steps = f"{o.steps} steady step" + ("s" if o.steps != 1 else "")
    wait = slice_of(v, *_HOST_WORK)
    waited = (f" The GPU waited {ms(wait.ns)} per step on host work between launches (time "
              "account), which this per-op cost is part of." if wait and wait.ns else "")
    cut = ms(floor_ns)
    return [Finding(
        pattern=PATTERN, severity=sev,
        title=f"Every ATen op pays ≥ {ms(o.floor_ns)} of host time: ops that only make a view "
              f"take {ms(o.median_ns)} median — {cut} per step ({pct(share)})",
        observation=(
            f"{o.trivial:,} ATen ops that do no work beyond their dispatch ran in the {steps} "
            f"({names}), yet {1 - o.quantile:.0%} of them took ≥ {ms(o.floor_ns)} of host "
            f"time (median {ms(o.median_ns)}). {_cpu_sentence(o, t, lim.host_op_cpu_ratio)} At "
            f"{t.ops / o.steps:,.0f} ATen ops per step on the busiest thread ({t.thread}), "
            + (f"whose own trivial ops pay ≥ {ms(each)}, " if ms(each) != ms(o.floor_ns) else "")
            + f"that floor alone is {cut} of host time per step ({pct(share)} of the "
            f"{ms(o.mean_step_ns)} step).{waited}"),
        fix=fix_for(PATTERN, v.engine), share=share,
        evidence=evidence(v, "host durations of the trivial ATen ops (frames.yaml trivial_ops) "
                             "and of CUDA query calls (api_roles.yaml query) in the steady "
                             "steps"),
        expected_effect=(
            f"Removing the per-op cost frees up to {cut} of host time per step on the busiest "
            "thread" + (f"; the step shortens by at most the {ms(wait.ns)} per step the GPU "
                        "waits on host work" if wait and wait.ns else "")
            + ". An A/B of the step time with and without the change (each arm also timed "
              "without the profiler) measures it."),
        details={"floor_ns": o.floor_ns, "median_ns": o.median_ns, "trivial_ops": o.trivial,
                 "ops_per_step": round(t.ops / o.steps, 1), "floor_per_step_ns": floor_ns,
                 "thread_floor_ns": t.floor_ns,
                 "query_median_ns": t.query_median_ns, "artifact": o.artifact},
    )]


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect,
    thresholds=("host_op_floor_quantile", "host_op_floor_min_ns", "host_op_floor_min_ops",
                "host_op_cpu_ratio", "host_op_red_share", "host_op_yellow_share"),
    fix_keys=(PATTERN,))
