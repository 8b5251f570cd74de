"""nccl-collective-bound: communication kernels not overlapped with compute."""

from __future__ import annotations

from msgspec import Struct

from crossview.core.claim import (
    Bytes,
    Claim,
    Count,
    CountF,
    Facts,
    FixPart,
    Ns,
    NsF,
    Owns,
    Phrasing,
    Ratio,
    Share,
)
from crossview.detectors.account_share import AccountSlice, facts, slice_of
from crossview.detectors.common import cites, crossed, is_compiled, ms, pct, short
from crossview.detectors.declare import About, Declaration
from crossview.knowledge.frames import compiled_prefixes
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


class Collective(Struct, frozen=True):
    name: str
    count: Count
    ns: Ns


class ByType(Struct, frozen=True):
    op: str
    count: Count
    ns: Ns


class BigBucket(Struct, frozen=True, kw_only=True):
    message_bytes: Bytes
    calls: Count
    mean_ns: Ns
    time_ns: Ns


class PerGradient(Struct, frozen=True, kw_only=True):
    artifact_id: int
    artifact: str | None  # named when several artifacts (ranks) are in scope
    steps: Count
    calls: Count
    grads: Count
    host_ns: Ns
    kernels: Count
    kernel_ns: Ns
    kernel_median_ns: Ns
    loop_calls: Count
    loop_ns: Ns
    loop_spacing_ns: Ns
    loop_lane: str
    loop_parent: str
    loop_compute: Count
    step_ns: Ns
    call_names: tuple[str, ...]
    one_per_grad_max: Ratio
    # per steady step
    calls_per_step: CountF
    grads_per_step: CountF
    host_per_step_ns: NsF
    step_per_step_ns: NsF
    loop_per_step_ns: NsF
    loop_calls_per_step: CountF
    loop_compute_per_step: CountF
    kernels_per_step: CountF
    loop_row_ns: Ns | None  # the account's per-tensor loop row per steady step


class Comm(Facts, frozen=True, kw_only=True):
    comm_ns: Ns  # union over streams
    exposed_ns: Ns
    share_of_busy: Share
    comm_share: Share | None  # the comm family's share of kernel time (summed per kernel)
    top: tuple[Collective, ...]
    by_type: tuple[ByType, ...] = ()  # when kernel names misname the collective
    untyped: tuple[Count, Ns] = (0, 0)
    slice: AccountSlice | None = None
    peer_wait_ns: Ns | None = None
    # ranks analyzed together with late ranks named: the kernel time counts the waits for
    # them, and the late-ranks claim owns that wait (detectors/late_ranks.py)
    late: bool = False
    big: BigBucket | None = None
    per_grad: PerGradient | None = None


def detect(v: Views) -> list[Claim]:
    m, lim = v.metrics, v.limits
    if m.cpu_only or not v.comm:
        return []
    comm = sum(c.comm_ns for c in v.comm)
    exposed = sum(c.exposed_ns for c in v.comm)
    busy = sum(c.busy_ns for c in v.comm) or 1
    share_busy = exposed / busy
    sl = slice_of(v, *CAUSES)
    # with a time account: the share of the steady step its own rows hold
    cut = crossed(sl.share if sl is not None else share_busy, lim.nccl_red_share,
                  lim.nccl_yellow_share, ("nccl_red_share", "nccl_yellow_share"))
    if cut is None:
        return []
    top = sorted((t for c in v.comm for t in c.top_collectives), key=lambda t: -t[2])[:3]
    comm_family = next((f for f in v.families if f.family == "comm"), None)
    row = v.account.slice(PEER_WAIT) if v.account is not None else None
    by_type, untyped = _by_collective(v)
    per_grad = _per_gradient(v)
    big = _big_bucket(v) if per_grad is None else None
    f = Comm(comm_ns=comm, exposed_ns=exposed, share_of_busy=share_busy,
             comm_share=comm_family.share if comm_family else None,
             top=tuple(Collective(n, k, t) for n, k, t in top), by_type=by_type,
             untyped=untyped, slice=facts(sl) if sl is not None else None,
             peer_wait_ns=row.ns if row is not None else None, late=_late(v),
             big=BigBucket(message_bytes=big.message_bytes or 0, calls=big.count,
                           mean_ns=int(big.mean_ns), time_ns=big.time_ns) if big else None,
             per_grad=_per_grad_facts(v, per_grad) if per_grad is not None else None)
    share = sl.share if sl is not None else (
        exposed / m.kernel_span_ns if m.kernel_span_ns else 0.0)
    if per_grad is not None:
        g = f.per_grad
        assert g is not None
        in_graph = per_grad.loop_parent.startswith(tuple(compiled_prefixes()))
        flags = ("in_compiled_graph",) if in_graph else ("compiled",) if is_compiled(v) else ()
        fix = FixPart(key=PER_GRADIENT, flags=flags, located=True, fill=(
            ("calls", f"{g.calls_per_step:,.0f}"), ("grads", f"{g.grads_per_step:,.0f}"),
            ("parent", per_grad.loop_parent)))
        read = "comm-per-gradient"
    elif big is not None:
        fix = FixPart(key=BIG_BUCKET, located=True, fill=(
            ("size", size(big.message_bytes or 0)), ("calls", f"{big.count:,}"),
            ("mean", ms(int(big.mean_ns)))))
        read = "comm-exposure"
    else:
        # the parallelism the capture shows picks the variant (tensor parallel: no DDP
        # buckets; views/distributed/parallelism.py)
        kind = v.parallelism.kind
        fix = FixPart(key=PATTERN, located=True, flags=(kind,) if kind else ())
        read = "comm-exposure"
    return [Claim(
        pattern=PATTERN, form="per-gradient" if per_grad is not None else "", share=share,
        tier=cut[0], cutoff=cut[1], owns=Owns(causes=CAUSES) if sl is not None else Owns(),
        fix=(fix,), cites=cites(v, read), facts=f,
        lever=PER_GRADIENT_LEVER if per_grad is not None else None)]


def _late(v: Views) -> bool:
    """Ranks analyzed together with late ranks named (detectors/late_ranks.py owns the wait)."""
    return v.ranks is not None and v.ranks.late is not None and bool(v.ranks.late.named)


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


def _by_collective(v: Views) -> tuple[tuple[ByType, ...], tuple[int, int]]:
    """When kernel names spell another collective than the one run (NCCL 2.12–2.13 name every
    kernel after SendRecv), the collectives by their recorded type (kernel args, or the op
    holding the launch call: `nccl:all_reduce`): the fix depends on which one it is."""
    colls = v.comm_bandwidth.collectives
    if not any(c.kernel_name_differs for c in colls):
        return (), (0, 0)
    by: dict[str, list[int]] = {}
    unknown = [0, 0]  # typed by a kernel name alone, which this capture shows misleads
    for c in colls:
        acc = unknown if c.typed_by_name == c.count else by.setdefault(c.op, [0, 0])
        acc[0] += c.count
        acc[1] += c.time_ns
    top = sorted(by.items(), key=lambda kv: -kv[1][1])
    return tuple(ByType(op, k, t) for op, (k, t) in top[:4]), (unknown[0], unknown[1])


def _per_gradient(v: Views) -> GradSync | None:
    """The artifact whose steady steps issue a collective call per gradient (the most calls per
    step among those that do), or None: gradients reduced in buckets, or no autograd."""
    lim = v.limits
    hits = [g for g in v.grad_sync if g.per_step(g.grads) >= lim.grad_sync_min_grads
            and g.calls >= lim.grad_sync_per_grad_share * g.grads]
    return max(hits, key=lambda g: g.per_step(g.calls)) if hits else None


def _per_grad_facts(v: Views, g: GradSync) -> PerGradient:
    row = v.account.slice(LOOP) if v.account is not None else None
    return PerGradient(
        artifact_id=g.artifact_id, artifact=None if len(v.grad_sync) == 1 else g.artifact,
        steps=g.steps, calls=g.calls, grads=g.grads, host_ns=g.host_ns, kernels=g.kernels,
        kernel_ns=g.kernel_ns, kernel_median_ns=g.kernel_median_ns, loop_calls=g.loop_calls,
        loop_ns=g.loop_ns,
        loop_spacing_ns=g.loop_spacing_ns, loop_lane=g.loop_lane, loop_parent=g.loop_parent,
        loop_compute=g.loop_compute, step_ns=g.step_ns, call_names=tuple(g.call_names[:2]),
        one_per_grad_max=v.limits.grad_sync_one_per_grad_max,
        calls_per_step=g.per_step(g.calls), grads_per_step=g.per_step(g.grads),
        host_per_step_ns=g.per_step(g.host_ns), step_per_step_ns=g.per_step(g.step_ns),
        loop_per_step_ns=g.per_step(g.loop_ns), loop_calls_per_step=g.per_step(g.loop_calls),
        loop_compute_per_step=g.per_step(g.loop_compute),
        kernels_per_step=g.per_step(g.kernels), loop_row_ns=row.ns if row else None)


def _loop_text(g: PerGradient) -> str:
    """The calls as a per-tensor loop on one thread (views/distributed/collective_loops.py),
    with the GPU idle the time account charges to it."""
    if not g.loop_calls:
        return ""
    span, step = g.loop_per_step_ns, g.step_per_step_ns
    idle = (f"; the GPU idles {ms(g.loop_row_ns)} per step inside it (time account: per-tensor "
            "collective loop), apart from the collective kernels it runs"
            if g.loop_row_ns is not None else "")
    under = f" under `{g.loop_parent}`" if g.loop_parent else ""
    alone = f", {g.loop_compute_per_step:,.0f} compute kernels per step launched meanwhile"
    return (f" They run as a loop on one thread (`{g.loop_lane}`){under}: "
            f"{g.loop_calls_per_step:,.0f} calls per step spanning {ms(int(span))} "
            f"({pct(span / step if step else 0.0)} of the step), one every "
            f"{ms(g.loop_spacing_ns)} on average{alone} — each call's host cost plus the work "
            f"between calls{idle}.")


def phrase(c: Claim) -> Phrasing:
    f = c.facts
    assert isinstance(f, Comm)
    names = "; ".join(f"{short(t.name, 70)} ×{t.count:,} ({ms(t.ns)})" for t in f.top)
    by = ""
    if f.by_type or f.untyped[0]:
        rest = (f"; {f.untyped[0]:,} more ({ms(f.untyped[1])}) that record no collective (no "
                "kernel args, no `nccl:` op around a launch in the capture)") if f.untyped[0] \
            else ""
        by = (" The kernel names do not say which collective ran (NCCL 2.12–2.13 name their "
              "kernels after one function, NVIDIA/nccl#714); by the collective recorded on the "
              "op holding each launch (`nccl:<collective>`): "
              + "; ".join(f"{t.op} ×{t.count:,} ({ms(t.ns)})" for t in f.by_type) + rest + ".")
    obs = (
        # comm is a union over streams while the per-kernel totals are sums: say which is
        # which, or a top collective reads longer than all communication together
        f"Communication kernels occupied the GPU {ms(f.comm_ns)} (union over streams; summed "
        f"per kernel they are {pct(f.comm_share) if f.comm_share is not None else '?'} of "
        f"kernel time); {ms(f.exposed_ns)} of it "
        f"({pct(f.exposed_ns / f.comm_ns if f.comm_ns else 0)}) ran with no compute kernel "
        f"alongside — exposed, {pct(f.share_of_busy)} of GPU busy time. Top (summed kernel "
        f"time): {names}.{by}")
    sl = f.slice
    if sl is not None:
        obs += (f" Per steady step: {ms(sl.ns)} ({pct(sl.share)}; time account): "
                + "; ".join(f"{r.label} {ms(r.ns)}" for r in sl.rows if r.ns) + ".")
    if f.peer_wait_ns is not None:
        # the account's peer-wait row is not in the claim's share: say so, since the kernel
        # time above includes it (views/distributed/peer_wait.py)
        obs += (f" Not counted: {ms(f.peer_wait_ns)} per step of the collectives waiting for a "
                "late rank (measured across the ranks: the late-ranks finding) — the fix there "
                "is the late rank's, not the communication's." if f.late else
                f" Not counted: {ms(f.peer_wait_ns)} per step of the collectives waiting for a "
                "peer rank (the peer arrived late; the peer-wait note) — no change on this rank "
                "removes it.")
    title = (f"NCCL-bound: exposed communication is {pct(f.share_of_busy)} of GPU busy time"
             if sl is None else f"NCCL-bound: communication holds {pct(sl.share)} of the "
             f"step ({pct(f.share_of_busy)} of GPU busy time exposed"
             # ranks together: the kernel time counts the waits for late ranks
             + ("; kernel time, waits for late ranks included)" if f.late else ")"))
    effect = (f"Overlapping communication with compute hides up to {ms(f.exposed_ns)}."
              if sl is None else "Overlapping communication with compute hides up "
              f"to {ms(sl.ns)} per step ({ms(f.exposed_ns)} over the capture).")
    details: dict[str, object] = {"comm_ns": f.comm_ns, "exposed_ns": f.exposed_ns,
                                  "share_of_busy": f.share_of_busy}
    g = f.per_grad
    if g is not None:
        calls, grads = g.calls_per_step, g.grads_per_step
        per = grads / calls if calls else 0.0
        one = per < g.one_per_grad_max
        each = "one per gradient" if one else f"one per {per:.0f} gradients"
        title = title.replace("NCCL-bound: ", f"NCCL-bound: {calls:,.0f} collective calls per "
                              f"step, {each} — ", 1)
        names_ = ", ".join(f"`{n}`" for n in g.call_names)
        where = f" in `{g.artifact}`" if g.artifact else ""
        obs += (
            # more gradients per call: small buckets, or one call per tensor with gradients
            # accumulated over several micro-batches; the counts cannot say which
            (" The gradients are reduced one tensor at a time: " if one else
             " Collective calls come close to one per gradient (small buckets, or one per "
             "tensor over accumulated micro-batches): ")
            + f"{calls:,.0f} collective calls ({names_}) per steady step{where} for "
            f"{grads:,.0f} gradients accumulated (`torch::autograd::AccumulateGrad`) over "
            f"{g.steps} steady steps; median communication kernel {ms(g.kernel_median_ns)}. The "
            f"calls hold {ms(int(g.host_per_step_ns))} of host time per step "
            f"({pct(g.host_per_step_ns / g.step_per_step_ns if g.step_per_step_ns else 0.0)} "
            "of the step)." + _loop_text(g))
        bound = (f"the loop around them ({ms(int(g.loop_per_step_ns))} per step: the calls and "
                 "the per-tensor work between them) is the host-side bound"
                 if g.loop_per_step_ns > g.host_per_step_ns else
                 f"their host time ({ms(int(g.host_per_step_ns))} per step) is the host-side "
                 "bound")
        effect = (
            f"Bucketing cuts the {calls:,.0f} collective calls per step to one per bucket: "
            f"{bound}, and the {g.kernels_per_step:,.0f} communication kernels per step "
            f"(median {ms(g.kernel_median_ns)}, mean "
            f"{ms(g.kernel_ns // g.kernels if g.kernels else 0)}: most of their time is in the "
            "larger messages, which bucketing keeps) become a few larger ones. An A/B counts "
            "the collective calls per step and compares the median step.")
        details |= {"replay_lever": PER_GRADIENT_LEVER, "per_gradient": {
            "artifact_id": g.artifact_id, "steps": g.steps, "calls": g.calls,
            "grads": g.grads, "host_ns": g.host_ns, "kernels": g.kernels,
            "kernel_median_ns": g.kernel_median_ns, "loop_calls": g.loop_calls,
            "loop_ns": g.loop_ns, "loop_spacing_ns": g.loop_spacing_ns}}
    elif f.big is not None:
        b = f.big
        obs += (f" The largest all-reduce moves {size(b.message_bytes)} per call "
                f"({b.calls:,} calls, {ms(b.mean_ns)} each): one bucket, which "
                "starts only once its last gradient is ready.")
        details |= {"big_bucket": {"message_bytes": b.message_bytes, "calls": b.calls,
                                   "time_ns": b.time_ns}}
    return Phrasing(title=title, observation=obs, effect=effect, details=details)


DECLARATION = Declaration(
    patterns=(PATTERN,), detect=detect, phrase=phrase, causes=CAUSES,
    thresholds=("nccl_red_share", "nccl_yellow_share", "grad_sync_per_grad_share",
                "grad_sync_min_grads", "grad_sync_one_per_grad_max", "nccl_big_bucket_bytes"),
    fix_keys=(PATTERN, PER_GRADIENT, BIG_BUCKET),
    about=About(side="communication", levers=("overlap-comm",), refutable=True))
