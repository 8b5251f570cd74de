"""nccl-collective-bound: communication kernels not overlapped with compute."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.detectors.account_share import claims, slice_of
from crossview.detectors.common import (
    compiled_prefixes,
    evidence,
    fix_where,
    is_compiled,
    ms,
    pct,
    severity,
    short,
)
from crossview.detectors.declare import Declaration
from crossview.knowledge.fixes import fix_for
from crossview.units import size
from crossview.views.device.account import PEER_WAIT
from crossview.views.distributed.comm_bandwidth import CollectiveBw
from crossview.views.distributed.grad_sync import GradSync
from crossview.views.views import Views

PATTERN = "nccl-collective-bound"
# the fix when the gradients are reduced one tensor at a time (views/distributed/grad_sync.py)
PER_GRADIENT = "nccl-collective-bound-per-gradient"
# its replay: the per-call host cost of the collectives scales to the bucketed call count
PER_GRADIENT_LEVER = "bucket-grads"
# the fix when the gradient all-reduce is one huge bucket (thresholds nccl_big_bucket_bytes)
BIG_BUCKET = "nccl-collective-bound-big-bucket"
# exposed communication is a busy row of the account; a host blocked on a collective's peers
# an idle cause: both go away with overlap / fewer collectives
# the GPU idle inside a per-tensor collective loop (views/distributed/collective_loops.py)
LOOP = "collective_loop"
CAUSES = ("exposed_comm", "collective_wait", "collective_call", LOOP)


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
        f"(summed kernel time): {names}.{_by_collective(v)}"
    )
    f = Finding(
        pattern=PATTERN, severity=sev,
        title=(f"NCCL-bound: exposed communication is {pct(share_busy)} of GPU busy time"
               if sl is None else f"NCCL-bound: communication holds {pct(sl.share)} of the "
               f"step ({pct(share_busy)} of GPU busy time exposed"
               # ranks together: the kernel time counts the waits for late ranks
               + ("; kernel time, waits for late ranks included)" if _late(v) else ")")),
        observation=obs + (f" Per steady step: {ms(sl.ns)} ({pct(sl.share)}; time account): "
                           + "; ".join(f"{r.label} {ms(r.ns)}" for r in sl.rows if r.ns) + "."
                           if sl is not None else ""),
        # the parallelism the capture shows picks the fix (tensor parallel: no DDP buckets)
        fix=fix_for(PATTERN, v.engine or v.parallelism.kind, fix_where(v)),
        share=sl.share if sl is not None else (
            exposed / m.kernel_span_ns if m.kernel_span_ns else 0.0),
        evidence=evidence(v, "comm-family kernels vs the union of compute kernels per device"),
        expected_effect=(f"Overlapping communication with compute hides up to {ms(exposed)}."
                         if sl is None else "Overlapping communication with compute hides up "
                         f"to {ms(sl.ns)} per step ({ms(exposed)} over the capture)."),
        details={"comm_ns": comm, "exposed_ns": exposed, "share_of_busy": share_busy,
                 **(claims(*CAUSES) if sl is not None else {})},
    )
    f.observation += _peer_wait(v)
    per_grad = _per_gradient(v)
    if per_grad is not None:
        return [_as_per_gradient(v, f, per_grad)]
    big = _big_bucket(v)
    return [_as_big_bucket(v, f, big) if big is not None else f]


def _late(v: Views) -> bool:
    """Ranks analyzed together with late ranks named (detectors/late_ranks.py owns the wait)."""
    return v.ranks is not None and v.ranks.late is not None and bool(v.ranks.late.named)


def _peer_wait(v: Views) -> str:
    """The account's peer-wait row is not in the finding's share: say so, since the kernel
    time above includes it (views/distributed/peer_wait.py)."""
    row = v.account.slice(PEER_WAIT) if v.account is not None else None
    if row is None:
        return ""
    if _late(v):
        return (f" Not counted: {ms(row.ns)} per step of the collectives waiting for a late "
                "rank (measured across the ranks: the late-ranks finding) — the fix there is "
                "the late rank's, not the communication's.")
    return (f" Not counted: {ms(row.ns)} per step of the collectives waiting for a peer rank "
            "(the peer arrived late; the peer-wait note) — no change on this rank removes it.")


def _big_bucket(v: Views) -> CollectiveBw | None:
    """The gradient all-reduce sent as one huge bucket: the collective row with the most
    kernel time is an all-reduce of ≥ nccl_big_bucket_bytes per call, in a capture whose
    steps accumulate gradients (training)."""
    colls = v.comm_bandwidth.collectives
    if not colls or not any(g.grads for g in v.grad_sync):
        return None
    top = max(colls, key=lambda c: c.time_ns)
    if top.op != "allreduce" or (top.message_bytes or 0) < v.limits.nccl_big_bucket_bytes:
        return None
    return top


def _as_big_bucket(v: Views, f: Finding, c: CollectiveBw) -> Finding:
    f.observation += (f" The largest all-reduce moves {size(c.message_bytes or 0)} per call "
                      f"({c.count:,} calls, {ms(int(c.mean_ns))} each): one bucket, which "
                      "starts only once its last gradient is ready.")
    f.fix = fix_for(BIG_BUCKET, None, fix_where(v), size=size(c.message_bytes or 0),
                    calls=f"{c.count:,}", mean=ms(int(c.mean_ns)))
    f.details = {**f.details, "big_bucket": {"message_bytes": c.message_bytes,
                                             "calls": c.count, "time_ns": c.time_ns}}
    return f


def _by_collective(v: Views) -> str:
    """When kernel names spell another collective than the one run (NCCL 2.12–2.13 name every
    kernel after SendRecv), the collectives by their recorded type (kernel args, or the op
    holding the launch call: `nccl:all_reduce`): the fix depends on which one it is."""
    colls = v.comm_bandwidth.collectives
    if not any(c.kernel_name_differs for c in colls):
        return ""
    by: dict[str, list[int]] = {}
    unknown = [0, 0]  # typed by a kernel name alone, which this capture shows misleads
    for c in colls:
        acc = unknown if c.typed_by_name == c.count else by.setdefault(c.op, [0, 0])
        acc[0] += c.count
        acc[1] += c.time_ns
    top = sorted(by.items(), key=lambda kv: -kv[1][1])
    rest = (f"; {unknown[0]:,} more ({ms(unknown[1])}) that record no collective (no kernel "
            "args, no `nccl:` op around a launch in the capture)") if unknown[0] else ""
    return (" The kernel names do not say which collective ran (NCCL 2.12–2.13 name their "
            "kernels after one function, NVIDIA/nccl#714); by the collective recorded on the "
            "op holding each launch (`nccl:<collective>`): "
            + "; ".join(f"{op} ×{k:,} ({ms(t)})" for op, (k, t) in top[:4]) + rest + ".")


def _per_gradient(v: Views) -> GradSync | None:
    """The artifact whose steady steps issue a collective call per gradient (the most calls per
    step among those that do), or None: gradients reduced in buckets, or no autograd."""
    lim = v.limits
    hits = [g for g in v.grad_sync if g.per_step(g.grads) >= lim.grad_sync_min_grads
            and g.calls >= lim.grad_sync_per_grad_share * g.grads]
    return max(hits, key=lambda g: g.per_step(g.calls)) if hits else None


def _as_per_gradient(v: Views, f: Finding, g: GradSync) -> Finding:
    """The NCCL finding when each gradient gets its own collective: the call count is the
    lever (bucketing, replayed by bucket-grads), not overlap alone."""
    calls, grads = g.per_step(g.calls), g.per_step(g.grads)
    host = g.per_step(g.host_ns)
    step = g.per_step(g.step_ns)
    names = ", ".join(f"`{n}`" for n in g.call_names[:2])
    # several artifacts (ranks): say which one the counts are from
    where = "" if len(v.grad_sync) == 1 else f" in `{g.artifact}`"
    per = grads / calls if calls else 0.0
    one = per < v.limits.grad_sync_one_per_grad_max
    each = "one per gradient" if one else f"one per {per:.0f} gradients"
    f.title = f.title.replace("NCCL-bound: ", f"NCCL-bound: {calls:,.0f} collective calls per "
                              f"step, {each} — ", 1)
    f.observation += (
        # more gradients per call: small buckets, or one call per tensor with gradients
        # accumulated over several micro-batches; the counts cannot say which
        (" The gradients are reduced one tensor at a time: " if one else
         " Collective calls come close to one per gradient (small buckets, or one per "
         "tensor over accumulated micro-batches): ")
        + f"{calls:,.0f} collective calls "
        f"({names}) per steady step{where} for {grads:,.0f} gradients accumulated "
        f"(`torch::autograd::AccumulateGrad`) over {g.steps} steady steps; median "
        f"communication kernel {ms(g.kernel_median_ns)}. The calls hold {ms(int(host))} of "
        f"host time per step ({pct(host / step if step else 0.0)} of the step)."
        + _loop_text(v, g))
    in_graph = g.loop_parent.startswith(tuple(compiled_prefixes()))
    f.fix = fix_for(PER_GRADIENT, "in_compiled_graph" if in_graph else "compiled"
                    if is_compiled(v) else None, fix_where(v), calls=f"{calls:,.0f}",
                    grads=f"{grads:,.0f}", parent=g.loop_parent)
    f.evidence = evidence(v, "comm-family kernels vs compute kernels per device; c10d "
                          "collective calls and AccumulateGrad ops per steady step")
    loop = g.per_step(g.loop_ns)
    bound = (f"the loop around them ({ms(int(loop))} per step: the calls and the per-tensor "
             "work between them) is the host-side bound" if loop > host else
             f"their host time ({ms(int(host))} per step) is the host-side bound")
    f.expected_effect = (
        f"Bucketing cuts the {calls:,.0f} collective calls per step to one per bucket: "
        f"{bound}, and the "
        f"{g.per_step(g.kernels):,.0f} communication kernels per step (median "
        f"{ms(g.kernel_median_ns)}, mean {ms(g.kernel_ns // g.kernels if g.kernels else 0)}: "
        "most of their time is in the larger messages, which bucketing keeps) become a few "
        "larger ones. An A/B counts the collective calls per step and compares the median "
        "step.")
    f.details = {**f.details, "replay_lever": PER_GRADIENT_LEVER, "per_gradient": {
        "artifact_id": g.artifact_id, "steps": g.steps, "calls": g.calls, "grads": g.grads,
        "host_ns": g.host_ns, "kernels": g.kernels, "kernel_median_ns": g.kernel_median_ns,
        "loop_calls": g.loop_calls, "loop_ns": g.loop_ns, "loop_spacing_ns": g.loop_spacing_ns}}
    return f


def _loop_text(v: Views, g: GradSync) -> str:
    """The calls as a per-tensor loop on one thread (views/distributed/collective_loops.py),
    with the GPU idle the time account charges to it."""
    if not g.loop_calls:
        return ""
    row = v.account.slice(LOOP) if v.account is not None else None
    span = g.per_step(g.loop_ns)
    step = g.per_step(g.step_ns)
    idle = (f"; the GPU idles {ms(row.ns)} per step inside it (time account: per-tensor "
            "collective loop), apart from the collective kernels it runs" if row else "")
    under = f" under `{g.loop_parent}`" if g.loop_parent else ""
    compute = g.per_step(g.loop_compute)
    alone = f", {compute:,.0f} compute kernels per step launched meanwhile"
    return (f" They run as a loop on one thread (`{g.loop_lane}`){under}: "
            f"{g.per_step(g.loop_calls):,.0f} calls per step spanning {ms(int(span))} "
            f"({pct(span / step if step else 0.0)} of the step), one every "
            f"{ms(g.loop_spacing_ns)} on average{alone} — each call's host cost plus the work "
            f"between calls{idle}.")


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, causes=CAUSES,
    thresholds=("nccl_red_share", "nccl_yellow_share", "grad_sync_per_grad_share",
                "grad_sync_min_grads", "grad_sync_one_per_grad_max", "nccl_big_bucket_bytes"),
    fix_keys=(PATTERN, PER_GRADIENT, BIG_BUCKET))
