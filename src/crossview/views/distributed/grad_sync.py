"""Gradient synchronization per artifact: how many collective calls the host issues per steady
step against how many gradients autograd accumulates per step (frames.yaml `grad_sync`).

A DDP reducer all-reduces gradients in buckets (a few calls per step); a hook or loop that
all-reduces each gradient issues one call per gradient, each paying the collective's fixed
host and launch cost. The counts are facts; detectors/nccl.py judges them.
"""

from __future__ import annotations

from dataclasses import dataclass

from crossview.knowledge.frames import grad_sync_ops
from crossview.scope.step_detect import Step, in_steps
from crossview.store.store import Store
from crossview.views.distributed import collective_loops


@dataclass(frozen=True)
class GradSync:
    artifact_id: int
    artifact: str  # its path
    steps: int  # steady steps counted
    step_ns: int  # their wall time, summed
    grads: int  # gradients accumulated (AccumulateGrad ops) in those steps
    calls: int  # c10d collective calls starting in those steps
    call_names: tuple[str, ...]  # their distinct names, most frequent first
    host_ns: int  # host time inside those calls
    kernels: int  # communication kernels starting in those steps
    kernel_median_ns: int
    kernel_ns: int = 0  # their summed time
    # per-tensor collective loops (views/distributed/collective_loops.py) inside those steps
    loop_calls: int = 0  # calls issued inside them
    loop_ns: int = 0  # their spans, clipped to the steps
    loop_lane: str = ""  # the thread running the longest loop
    loop_parent: str = ""  # the op its calls run under
    loop_compute: int = 0  # compute kernels starting during the loops

    @property
    def loop_spacing_ns(self) -> int:
        """Mean start-to-start spacing of the loops' calls (their span ÷ their calls)."""
        return self.loop_ns // self.loop_calls if self.loop_calls else 0

    def per_step(self, count: int) -> float:
        return count / self.steps if self.steps else 0.0


def compute(store: Store, steady: list[Step]) -> list[GradSync]:
    """One record per artifact with steady steps and at least one collective call in them."""
    if not steady:
        return []
    acc, prefix = grad_sync_ops()
    windows = in_steps(steady)
    host = store.sql(
        "SELECT x.artifact_id, count(*) FILTER (WHERE x.name = $acc),"
        " count(*) FILTER (WHERE starts_with(x.name, $pre)),"
        " coalesce(sum(x.dur_ns) FILTER (WHERE starts_with(x.name, $pre)), 0),"
        " histogram(x.name) FILTER (WHERE starts_with(x.name, $pre))"
        " FROM f_host_in_steps($a, $s, $e) x"
        " WHERE x.name = $acc OR starts_with(x.name, $pre) GROUP BY 1",
        {**windows, "acc": acc, "pre": prefix}).fetchall()
    gpu = {int(a): (int(n), int(m or 0), int(t or 0)) for a, n, m, t in store.sql(
        "SELECT x.artifact_id, count(*), median(x.dur_ns), sum(x.dur_ns) FROM"
        " f_gpu_in_steps($a, $s, $e) x WHERE x.kind = 'kernel' AND x.family = 'comm' GROUP BY 1",
        windows).fetchall()}
    out: list[GradSync] = []
    for a, grads, calls, host_ns, counts in host:
        if not calls:
            continue
        mine = [s for s in steady if s.artifact_id == a]
        k, med, tot = gpu.get(int(a), (0, 0, 0))
        loops = [x for x in collective_loops.loops(store, int(a))
                 if any(x.start_ns < s.end_ns and s.start_ns < x.end_ns for s in mine)]
        span = sum(min(x.end_ns, s.end_ns) - max(x.start_ns, s.start_ns)
                   for x in loops for s in mine if x.start_ns < s.end_ns and s.start_ns < x.end_ns)
        top = max(loops, key=lambda x: x.end_ns - x.start_ns, default=None)
        out.append(GradSync(
            int(a), mine[0].artifact, len(mine), sum(s.end_ns - s.start_ns for s in mine),
            int(grads), int(calls),
            tuple(sorted(counts, key=lambda n: (-counts[n], n))), int(host_ns), k, med, tot,
            sum(x.calls for x in loops), span, top.lane if top else "",
            top.parent if top else "", sum(x.compute for x in loops)))
    return sorted(out, key=lambda r: r.artifact_id)
