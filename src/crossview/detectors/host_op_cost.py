"""host-op-overhead: every ATen op pays a host cost far above what the op does.

Ops that only make a view or read metadata (`aten::view`, `aten::as_strided`, …) cost well
under a microsecond each in a healthy run with the profiler on; when nearly all of them take
many microseconds, every op of the step pays that tax before it launches anything, and the
host-side shares of the capture (launch-bound, Python overhead) carry it. CUDA query calls on
the same threads tell the two causes apart: fast queries put the cost in the per-op path
(dispatcher, RecordFunction observers, the profiler's own callbacks, anomaly mode, a debug
build); slow queries too mean a slow or shared CPU. The claim owns no account cause: it says
why the GPU's wait on the host is as long as it is (views/host/op_cost.py) — its time lies
within the host-work causes (`within`).
"""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import (
    Claim,
    Count,
    CountF,
    Facts,
    FixPart,
    Ns,
    Owns,
    Phrasing,
    Ratio,
    Share,
)
from crossview.detectors.account_share import slice_of
from crossview.detectors.common import cites, crossed, ms, pct
from crossview.detectors.declare import About, Declaration
from crossview.views.host.op_threads import threads
from crossview.views.views import Views

PATTERN = "host-op-overhead"
# the GPU's idle time while the launching thread ran host work between launches
_HOST_WORK = ("cpu_dispatch", "launch_overhead")


class OpName(Struct, frozen=True):
    name: str
    count: Count
    median_ns: Ns


class OpCostFacts(Facts, frozen=True, kw_only=True):
    trivial: Count
    steps: Count
    names: tuple[OpName, ...]
    quantile: Share
    floor_ns: Ns
    median_ns: Ns
    query_median_ns: Ns | None
    queries: Count
    cpu_ratio: Ratio
    ops_per_step: CountF
    thread: str
    thread_floor_ns: Ns | None
    each_ns: Ns  # the floor the busiest thread's own trivial ops pay
    floor_per_step_ns: Ns
    mean_step_ns: Ns
    wait_ns: Ns | None  # the GPU's wait on host work per step (time account)
    artifact: str


def detect(v: Views) -> list[Claim]:
    lim = v.limits
    rows = [(o, threads(v, o)) for o in v.op_cost
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
    cut = crossed(share, lim.host_op_red_share, lim.host_op_yellow_share,
                  ("host_op_red_share", "host_op_yellow_share"))
    if cut is None:
        return []
    wait = slice_of(v, *_HOST_WORK)
    return [Claim(
        pattern=PATTERN, share=share, tier=cut[0], cutoff=cut[1],
        owns=Owns(within=_HOST_WORK), fix=(FixPart(key=PATTERN),),
        cites=cites(v, "host-op-cost"),
        facts=OpCostFacts(
            trivial=o.trivial, steps=o.steps,
            names=tuple(OpName(n.name, n.count, n.median_ns) for n in o.names[:3]),
            quantile=o.quantile, floor_ns=o.floor_ns, median_ns=o.median_ns,
            query_median_ns=t.query_median_ns, queries=t.queries,
            cpu_ratio=lim.host_op_cpu_ratio, ops_per_step=t.ops / o.steps, thread=t.thread,
            thread_floor_ns=t.floor_ns, each_ns=each, floor_per_step_ns=floor_ns,
            mean_step_ns=o.mean_step_ns, wait_ns=wait.ns if wait and wait.ns else None,
            artifact=o.artifact))]


def _cpu_sentence(f: OpCostFacts) -> str:
    if f.query_median_ns is None:
        return ("No CUDA query call was recorded on these steps, so a slow CPU cannot be told "
                "apart from a slow per-op path.")
    q = (f"CUDA query calls in the same steps (×{f.queries:,}) take {ms(f.query_median_ns)} "
         "median")
    if f.query_median_ns * f.cpu_ratio <= f.floor_ns:
        return (f"{q}: the CPU itself is fast, so the cost is in each ATen op's own path "
                "(dispatcher, RecordFunction callbacks, the profiler's per-op work).")
    return (f"{q}, slow as well: the CPU itself is slow or shared (clock, contention, a "
            "virtual machine), not only the per-op path.")


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, OpCostFacts)
    names = "; ".join(f"`{n.name}` ×{n.count:,}, median {ms(n.median_ns)}" for n in f.names)
    steps = f"{f.steps} steady step" + ("s" if f.steps != 1 else "")
    waited = (f" The GPU waited {ms(f.wait_ns)} per step on host work between launches (time "
              "account), which this per-op cost is part of." if f.wait_ns else "")
    cut = ms(f.floor_per_step_ns)
    return Phrasing(
        title=f"Every ATen op pays ≥ {ms(f.floor_ns)} of host time: ops that only make a view "
              f"take {ms(f.median_ns)} median — {cut} per step ({pct(c.share)})",
        observation=(
            f"{f.trivial:,} ATen ops that do no work beyond their dispatch ran in the {steps} "
            f"({names}), yet {1 - f.quantile:.0%} of them took ≥ {ms(f.floor_ns)} of host "
            f"time (median {ms(f.median_ns)}). {_cpu_sentence(f)} At "
            f"{f.ops_per_step:,.0f} ATen ops per step on the busiest thread ({f.thread}), "
            + (f"whose own trivial ops pay ≥ {ms(f.each_ns)}, "
               if ms(f.each_ns) != ms(f.floor_ns) else "")
            + f"that floor alone is {cut} of host time per step ({pct(c.share)} of the "
            f"{ms(f.mean_step_ns)} step).{waited}"),
        effect=(
            f"Removing the per-op cost frees up to {cut} of host time per step on the busiest "
            "thread" + (f"; the step shortens by at most the {ms(f.wait_ns)} per step the GPU "
                        "waits on host work" if f.wait_ns else "")
            + ". An A/B of the step time with and without the change (each arm also timed "
              "without the profiler) measures it."),
        details={"floor_ns": f.floor_ns, "median_ns": f.median_ns, "trivial_ops": f.trivial,
                 "ops_per_step": round(f.ops_per_step, 1),
                 "floor_per_step_ns": f.floor_per_step_ns, "thread_floor_ns": f.thread_floor_ns,
                 "query_median_ns": f.query_median_ns, "artifact": f.artifact})


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase,
    thresholds=("host_op_floor_quantile", "host_op_floor_min_ns", "host_op_floor_min_ops",
                "host_op_cpu_ratio", "host_op_red_share", "host_op_yellow_share"),
    fix_keys=(PATTERN,), about=About(side="host"))
