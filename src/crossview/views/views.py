"""Views: everything detectors and renderers read, computed once under one resolved filter."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from crossview.knowledge import api_roles, frames
from crossview.knowledge.thresholds import Thresholds
from crossview.scope.filter import ResolvedFilter
from crossview.sol import op_roofline, roofline
from crossview.store import host_calls
from crossview.store.store import Store
from crossview.views import summary
from crossview.views.counters import device_counters as gpu_metrics
from crossview.views.device import gpu_activity, kernel_rows, timeline
from crossview.views.device import trace_metrics as metrics
from crossview.views.device.account import Account, KernelColumns
from crossview.views.device.kernel_rows import KernelRows
from crossview.views.device.steps import StepSet
from crossview.views.distributed import comm_bandwidth, rank_job
from crossview.views.host import calltree, sampled

# views most captures never read (multi-rank, sampled CPU, busy lanes): imported where
# computed, not at start-up (docs/decisions/0760)
if TYPE_CHECKING:
    from crossview.views import capture_context
    from crossview.views.device import busy_lanes, fusion_runs
    from crossview.views.distributed import crossrank, grad_sync, peer_wait
    from crossview.views.host import first_calls, op_cost, sampled_runtime


@dataclass
class FamilyShare:
    family: str
    time_ns: int
    count: int
    share: float  # fraction of kernel time

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class ArtifactInfo:
    path: str
    events: int
    rank: int | None
    world_size: int | None
    backend: str | None
    devices: list[str]  # device names from deviceProperties that ran kernels
    what: str = "timed events"  # what `events` counts (metric samples, trial values, …)


@dataclass
class KernelTime:
    name: str
    family: str
    count: int
    time_ns: int
    median_ns: int
    share: float  # fraction of kernel time
    via_graph: int  # executions replayed by a CUDA/HIP graph

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class FrameTime:
    frame: str
    kind: str
    self_ns: int
    share: float  # fraction of host self time in scope
    user: bool  # the user's own code (actionable)
    role: str | None  # API role (sync, launch, …) for runtime frames
    samples: int | None = None  # sampled CPU view (L1): samples that ended in this frame


class Views:
    def __init__(self, store: Store, resolved: ResolvedFilter, limits: Thresholds) -> None:
        self.store = store
        self.filter = resolved
        self.limits = limits
        # inputs no reader could take (set by analysis.analyze): a rejected rank file is a
        # missing rank in the cross-rank analysis
        self.rejected: list[rank_job.Rejected] = []
        # f_gpu's kernels, read once (one scan, one join to the launch calls) for the idle
        # metrics and the steps; the steps are found now so the columns are not kept
        kernels = KernelRows(store, names=True)
        self.metrics = metrics.compute(store, limits, kernels)
        # the kernel union per device from the same columns (the steps, the account and the
        # host-call effects read it); a NULL device leaves it to the SQL read
        self._union = (timeline.union_by_device(kernels.art, kernels.dev, kernels.s, kernels.e)
                       if not (kernels.dev == kernel_rows.NULL).any() else None)
        self._steps = self._find_steps(kernels) if resolved.requested.step is None else None
        # the columns the account reads, kept from this read (dropped once it is computed)
        self._account_kernels = KernelColumns.of(kernels) if self._union is not None \
            else None
        self._frames = calltree.frames_of(store)
        self.gpu = calltree.gpu_view(store, self._frames, kernels)  # traced kernels
        del kernels
        if not self.gpu.roots and sampled.gpu_present(store):  # else sampled GPU stacks (L1)
            self.gpu = sampled.gpu_view(store, self._frames)
        # sampled stacks in scope (nsys CPU sampling) are the L1 CPU view, else traced ops
        self.cpu = (sampled.cpu_view(store, self._frames) if sampled.present(store)
                    else calltree.cpu_view(store, self._frames))
        self.artifact_info = self._artifact_info()
        self.families = self._families()
        self.top_kernels = self._top_kernels()
        self.top_self = self._top_self()
        self.engine = frames.engine_of(
            [n for n, k in self._python_frame_names()]
        )
        # metrics first (conventions §1 step 2): counters, serving metrics, benchmark trials
        self.gpu_metrics = gpu_metrics.compute(store, resolved, limits.itl_spike_ratio)
        # workload speed-of-light: counters as % of the GPU's ceilings (sol/workload.py)
        from crossview.sol import workload as workload_sol
        self.workload_sol = workload_sol.compute(self.gpu_metrics.devices, self.limits)
        self.engine = self.engine or self.gpu_metrics.engine
        self.has_trace = bool(self.metrics.devices) or self.metrics.host_span_ns > 0 or bool(
            self.store.sql("SELECT count(*) FROM f_host").fetchall()[0][0]
        ) or self.metrics.cpu_samples > 0 or self.metrics.summary_only \
            or self.metrics.gpu_samples > 0
        # summary-only evidence (nsys stats CSV) and what each capture did not collect
        self.summaries = summary.summaries(store, resolved.artifacts)
        self.capture_notes = summary.artifact_notes(store, resolved.artifacts)

    # -- simple summaries -------------------------------------------------------------
    def _families(self) -> list[FamilyShare]:
        rows = self.store.sql(
            "SELECT family, sum(dur_ns), count(*) FROM f_gpu WHERE kind = 'kernel'"
            " GROUP BY family ORDER BY 2 DESC, 1"
        ).fetchall()
        total = sum(int(t) for _, t, _ in rows) or 1
        return [FamilyShare(f, int(t), int(c), int(t) / total) for f, t, c in rows]

    def _artifact_info(self) -> list[ArtifactInfo]:
        rows = self.store.sql(
            "SELECT a.path, a.events, a.rank, a.world_size, a.backend,"
            " list(DISTINCT d.name ORDER BY d.name) FILTER (d.name IS NOT NULL AND d.name <> ''),"
            " CASE any_value(a.rigor) WHEN 'L3' THEN 'metric samples' WHEN 'L1' THEN"
            " 'stack samples' WHEN 'bench' THEN"
            " 'trial values' ELSE 'timed events' END"
            " FROM artifacts a LEFT JOIN devices d ON d.artifact_id = a.artifact_id AND"
            " d.device IN (SELECT DISTINCT device FROM f_gpu g WHERE g.artifact_id = a.artifact_id)"
            " WHERE a.status = 'ok' AND a.path IN (SELECT unnest($p)) GROUP BY ALL ORDER BY 1",
            {"p": list(self.filter.artifacts)},
        ).fetchall()
        return [ArtifactInfo(p, int(e or 0), r, w, b, list(d or []), what)
                for p, e, r, w, b, d, what in rows]

    def _top_kernels(self, limit: int = 10) -> list[KernelTime]:
        rows = self.store.sql(
            "SELECT name, any_value(family), count(*), sum(dur_ns), median(dur_ns),"
            " count(*) FILTER (via_graph) FROM f_gpu WHERE kind = 'kernel'"
            f" GROUP BY name ORDER BY 4 DESC, 1 LIMIT {int(limit)}"
        ).fetchall()
        total = self.metrics.kernel_time_ns or 1
        return [KernelTime(n, f, int(c), int(t), int(m), int(t) / total, int(g))
                for n, f, c, t, m, g in rows]

    def _top_self(self, limit: int = 25) -> list[FrameTime]:
        if self.cpu.samples:  # sampled stacks in scope: leaf frames by samples (L1)
            return [FrameTime(n, k, s, sh, frames.is_user_frame(n), None, c)
                    for n, k, s, c, sh in sampled.top_self(self.store, limit)]
        rows = self.store.sql(
            "SELECT name, kind, sum(self_ns) AS s FROM f_host GROUP BY ALL"
            " ORDER BY s DESC, name, kind"  # ties in a stable order (steps of equal time)
            f" LIMIT {int(limit)}"
        ).fetchall()
        total = self.cpu.total_ns or 1
        return [FrameTime(n, k, int(s), int(s) / total, frames.is_user_frame(n),
                          api_roles.role_of(n) if k in ("runtime", "op") else
                          "thread_wait" if k == "python" and frames.is_thread_wait(n) else None)
                for n, k, s in rows]

    def _python_frame_names(self) -> list[tuple[str, str]]:
        return [(n, k) for n, k in self.store.sql(
            "SELECT DISTINCT name, kind FROM f_host WHERE kind = 'python' LIMIT 5000"
        ).fetchall()]

    # -- timeline facts (lazy: only the detectors that need them pay) -----------------
    @cached_property
    def sampled_runtime(self) -> sampled_runtime.SampledRuntime | None:
        """Sampled host time by the language runtime's own frames: start-up, garbage
        collection, OS kernel (views/host/sampled_runtime.py); None without CPU samples."""
        from crossview.views.host.sampled_runtime import compute

        return compute(self.store, self._frames)

    @cached_property
    def startup_ns(self) -> tuple[int, int, list[tuple[str, int]]]:
        """Wall time the host spent in start-up work (JIT compile, module load, autotune:
        frames.yaml startup, and start-up API calls) inside the kernel span, as the union of
        those frames' intervals over all threads: (ns, frames matched, top 3 (name, ns))."""
        startup = host_calls.NameOrRuntime(frames.startup_pattern(),
                                           tuple(api_roles.names_with_role("startup")))
        rows, cols = host_calls.ns_by_name_and_intervals(self.store, startup)
        if not rows:
            return 0, 0, []
        hs, he = (np.asarray(cols[c], dtype=np.int64) for c in ("start_ns", "e"))
        if self.filter.window_ns:
            lo, hi = self.filter.window_ns
            hs, he = hs.clip(lo, hi), he.clip(lo, hi)
        us, ue = timeline.merge(hs, he)
        return int((ue - us).sum()), len(rows), rows[:3]

    @cached_property
    def steps(self) -> StepSet:
        """The repeated unit of work and its steady state (views/device/steps.py)."""
        if self._steps is not None:
            return self._steps
        return self._find_steps(None)

    def _find_steps(self, kernels: KernelRows | None) -> StepSet:
        from crossview.scope import steps as step_scope
        from crossview.views.device import steps

        spec = self.filter.requested.step
        if spec is None:
            return steps.detect(self.store, kernels=kernels,
                                unions=self._union if kernels is not None else None)
        # `--step`: the steps as numbered over the whole capture, then the selected ones
        ids = [int(a) for (a,) in self.store.sql(
            "SELECT artifact_id FROM artifacts WHERE path IN (SELECT unnest($p))",
            {"p": list(self.filter.artifacts)}).fetchall()]
        found, got = step_scope.selected(self.store, ids, spec)
        return steps.StepSet(found.source, got)

    @cached_property
    def account(self) -> Account | None:
        """Per device and step, wall time in disjoint causes (views/device/account.py); None without
        kernels. Computing it flags JIT / start-up steps on `steps`."""
        from crossview.views.device import account

        kernels, self._account_kernels = self._account_kernels, None
        return account.compute(self.store, self.steps, self.device_union, kernels,
                               self.peer_wait)

    @cached_property
    def peer_wait(self) -> list[peer_wait.PeerWait]:
        """Collective kernels waiting for a peer rank, per device, from the steps' repeats
        (views/distributed/peer_wait.py)."""
        from crossview.views.distributed import peer_wait

        return peer_wait.compute(self.store, self.steps.steps, self.limits.peer_wait_min_steps,
                                 self.limits.peer_wait_min_excess_ns)

    @cached_property
    def device_union(self) -> list[timeline.DeviceIntervals]:
        return self._union if self._union is not None else timeline.kernel_union(self.store)

    @cached_property
    def busy_lanes(self) -> busy_lanes.BusyLanes:
        """Kernel busy per device and stream in equal time slices (the HTML timeline)."""
        from crossview.views.device.busy_lanes import compute

        return compute(self.store)

    @cached_property
    def ranks(self) -> crossrank.RankAnalysis | None:
        """Cross-rank analysis when the input holds more than one rank
        (views/distributed/rank_job.py)."""
        return rank_job.analyze_ranks(self.store, list(self.filter.artifacts), self.rejected,
                                      self.limits)

    @cached_property
    def comm(self) -> list[timeline.CommExposure]:
        return timeline.comm_exposure(self.store)

    @cached_property
    def grad_sync(self) -> list[grad_sync.GradSync]:
        """Collective calls against gradients accumulated per steady step, per artifact
        (views/distributed/grad_sync.py)."""
        from crossview.views.distributed import grad_sync

        return grad_sync.compute(self.store, self.steps.steady)

    @cached_property
    def first_calls(self) -> first_calls.FirstCalls:
        """Ops whose first call with given shapes costs far more than the later ones, over
        the steady steps (views/host/first_calls.py)."""
        from crossview.views.host import first_calls

        lim = self.limits
        return first_calls.compute(self.store, self.steps.steady, lim.first_call_min_ratio,
                                   lim.first_call_min_excess_ns, lim.first_call_min_later)

    @cached_property
    def fusion_runs(self) -> fusion_runs.FusionRuns:
        """Runs of consecutive one-op kernels per stream and what fusing each would save
        (views/device/fusion_runs.py)."""
        from crossview.views.device import fusion_runs

        return fusion_runs.compute(self.store, op_roofline.limits()["unfused_families"])

    @cached_property
    def op_cost(self) -> list[op_cost.OpCost]:
        """The cheapest ATen ops' host time against CUDA query calls, per artifact, over the
        steady steps (views/host/op_cost.py)."""
        from crossview.views.host import op_cost

        return op_cost.compute(self.store, self.steps.steady, self.limits.host_op_floor_quantile)

    @cached_property
    def device_activity(self) -> list[gpu_activity.DeviceActivity]:
        """Union of all GPU ops (kernels, copies, memsets) per device: the nsys rules' view."""
        return gpu_activity.activity(self.store, self._union)

    @cached_property
    def gpu_vendor(self) -> str | None:
        """The vendor (sol_ceilings.yaml `vendor`) of the GPUs whose kernels are in scope, when
        one vendor covers them all; None when unknown or mixed."""
        from crossview.knowledge import hardware

        rows = self.store.sql(
            "SELECT DISTINCT name, sm_count, mem_bytes, cc_major, cc_minor FROM devices WHERE"
            " artifact_id IN (SELECT DISTINCT artifact_id FROM f_gpu)").fetchall()
        vendors = {s.vendor for n, sms, mem, ma, mi in rows if (s := hardware.match(
            n, sm_count=sms, mem_bytes=mem, cc=f"{ma}.{mi}" if ma is not None else None))}
        return vendors.pop() if len(vendors) == 1 else None

    @cached_property
    def context(self) -> capture_context.CaptureContext:
        """What program the capture shows: frameworks, phase, engine, model kind, GPU
        generation and dtypes (views/capture_context.py)."""
        from crossview.views import capture_context

        return capture_context.compute(self.store, self.filter.artifacts,
                                       self.gpu_metrics.engine,
                                       op_roofline.limits()["training_op_markers"],
                                       self.code_site()[0])

    @cached_property
    def kernels(self) -> list[roofline.KernelRoofline]:
        """Per-kernel roofline rows from ncu counters (empty without ncu input)."""
        return roofline.compute(self.store, self.filter, self.limits)

    def gpu_inside(self, sel: host_calls.HostSelection) -> timeline.HostWindowEffect:
        """What the GPU did while the selected host calls (store/host_calls.py) ran."""
        hs, he, art = timeline.host_intervals(self.store, sel)
        return timeline.host_window_effect(self.device_union, hs, he, art)

    def sync_calls(self) -> host_calls.RuntimeCalls:
        """Host calls that can block on the GPU: syncs, synchronous copies, and async copies
        (a cudaMemcpyAsync to pageable memory blocks too; the GPU's behaviour decides)."""
        return host_calls.RuntimeCalls(tuple(n for r in ("sync", "sync_memcpy", "async_memcpy")
                                             for n in api_roles.names_with_role(r)))

    def user_frame_for(self, kinds: tuple[str, ...] = ("python",)) -> str | None:
        """The hottest frame (by self + child time) in the user's own code, if any."""
        best: tuple[int, str] | None = None
        stack = [*self.cpu.roots]
        while stack:
            n = stack.pop()
            if n.kind in kinds and frames.is_user_frame(n.frame) and (
                best is None or n.time_ns > best[0]
            ):
                best = (n.time_ns, n.frame)
            stack.extend(n.children)
        return best[1] if best else None

    def code_site(self) -> tuple[str, str]:
        """Where a fix's change goes, as data: (a knowledge/fix_where.yaml key, the user's
        frame it names or ""). The sentence is the fix text's (knowledge/fixes.where_text)."""
        uf = self.user_frame_for()
        if uf:
            return "own-frame", uf
        if any(n.kind == "python" for n in self.cpu.roots) or self.engine:
            return "library-only", ""  # every python frame is library/framework code
        if self.store.sql("SELECT count(*) FROM artifacts WHERE kind = 'nsys' AND path IN"
                          " (SELECT unnest($p))", {"p": list(self.filter.artifacts)}
                          ).fetchall()[0][0]:
            return "nsys-no-stacks", ""
        return "no-stacks", ""

    @property
    def evidence_path(self) -> str:
        arts = self.filter.artifacts
        return arts[0] if len(arts) == 1 else f"{len(arts)} artifacts"

    # -- analytic per-op roofline and transfer bandwidth (issue 19) ---------------------
    @cached_property
    def op_roofline(self) -> op_roofline.OpRoofline:
        """Per-op FLOPs/bytes/% of roofline from recorded shapes (sol/op_roofline.py), with
        the analytic-vs-ncu FLOP check where a kernel has both."""
        from crossview.sol import op_ncu_agreement
        r = op_roofline.compute(self.store)
        if self.kernels and r.groups:
            r.agreement = op_ncu_agreement.compare(r.groups, self.kernels)
        return r

    @cached_property
    def comm_bandwidth(self) -> comm_bandwidth.CommBandwidth:
        """Collective algbw/busbw and copy bytes/s (views/distributed/comm_bandwidth.py)."""
        return comm_bandwidth.compute(self.store)

