"""Views: everything detectors and renderers read, computed once under one resolved filter."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from crossview import intervals
from crossview.knowledge import api_roles, frames, hardware
from crossview.knowledge.thresholds import Thresholds
from crossview.scope import step_detect as steps
from crossview.scope import steps as step_scope
from crossview.scope.filter import ResolvedFilter
from crossview.scope.step_detect import StepSet
from crossview.sol import op_ncu_agreement, op_roofline, roofline, workload
from crossview.store import host_calls, kernel_rows
from crossview.store.kernel_rows import KernelRows
from crossview.store.store import Store
from crossview.views import capture_context, summary
from crossview.views.counters import device_counters, ncu_launches
from crossview.views.device import account, fusion_runs, gpu_activity, timeline, trace_metrics
from crossview.views.device.account import Account, KernelColumns
from crossview.views.device.shared_reads import SharedReads
from crossview.views.distributed import comm_bandwidth, grad_sync, peer_wait, rank_job
from crossview.views.host import calltree, first_calls, op_charges, op_cost, sampled

# views most captures never read (multi-rank, sampled CPU, busy lanes): imported where
# computed, not at start-up (docs/decisions/0760)
if TYPE_CHECKING:
    from crossview.sol import workload
    from crossview.views import capture_context
    from crossview.views.device import busy_lanes, fusion_runs
    from crossview.views.distributed import crossrank, grad_sync, parallelism, peer_wait
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


@dataclass
class _KernelRead:
    """What f_gpu's one kernel read (one scan, one join to the launch calls) feeds: the idle
    metrics, the kernel union per device (a NULL device leaves it to the SQL read), the steps
    as detected, the account's columns (dropped once it is computed) and the traced GPU view.
    Read on first use of any of them; the columns themselves are not kept."""
    metrics: trace_metrics.Metrics
    union: list[intervals.DeviceIntervals] | None
    steps: StepSet | None  # None under `--step` (found over the whole capture instead)
    account_kernels: KernelColumns | None
    gpu: calltree.CallTree


class Views:
    """Each view is computed on first use and kept (a renderer or MCP tool pays only for what
    it shows); none depends on the order they are read in (decision 0841)."""

    def __init__(self, store: Store, resolved: ResolvedFilter, limits: Thresholds) -> None:
        self.store = store
        self.filter = resolved
        self.limits = limits
        # inputs no reader could take (set by analysis.analyze): a rejected rank file is a
        # missing rank in the cross-rank analysis
        self.rejected: list[rank_job.Rejected] = []
        # the joined replay of a multi-rank job, run when its critical path is first read
        # (analysis.py sets replay/rank_findings.replay_job: views sit below replay/)
        self.rank_replayer: Callable[[Views, crossrank.RankAnalysis], object] | None = None

    @cached_property
    def _kernel_read(self) -> _KernelRead:
        kernels = KernelRows(self.store, names=True)
        m = trace_metrics.compute(self.store, self.limits, kernels)
        union = (intervals.union_by_device(kernels.art, kernels.dev, kernels.s, kernels.e)
                 if not (kernels.dev == kernel_rows.NULL).any() else None)
        found = (self._find_steps(kernels, union) if self.filter.requested.step is None
                 else None)
        cols = KernelColumns.of(kernels) if union is not None else None
        return _KernelRead(m, union, found, cols, calltree.gpu_view(self.store, self._frames,
                                                                     kernels))

    @cached_property
    def metrics(self) -> trace_metrics.Metrics:
        return self._kernel_read.metrics

    @cached_property
    def _frames(self) -> calltree._Frames:
        return calltree.frames_of(self.store)

    @cached_property
    def gpu(self) -> calltree.CallTree:
        """Traced kernels under the host stacks that launched them, else sampled GPU stacks
        (L1)."""
        traced = self._kernel_read.gpu
        if not traced.roots and sampled.gpu_present(self.store):
            return sampled.gpu_view(self.store, self._frames)
        return traced

    @cached_property
    def cpu(self) -> calltree.CallTree:
        """Sampled stacks in scope (nsys CPU sampling) are the L1 CPU view, else traced ops."""
        return (sampled.cpu_view(self.store, self._frames) if sampled.present(self.store)
                else calltree.cpu_view(self.store, self._frames))

    @cached_property
    def artifact_info(self) -> list[ArtifactInfo]:
        return self._artifact_info()

    @cached_property
    def families(self) -> list[FamilyShare]:
        return self._families()

    @cached_property
    def top_kernels(self) -> list[KernelTime]:
        return self._top_kernels()

    @cached_property
    def top_self(self) -> list[FrameTime]:
        return self._top_self()

    @cached_property
    def engine(self) -> str | None:
        """The serving engine the Python frames name, else the one its metrics name."""
        return frames.engine_of([n for n, k in self._python_frame_names()]) \
            or self.gpu_metrics.engine

    @cached_property
    def gpu_metrics(self) -> device_counters.GpuMetrics:
        """Metrics first (conventions §1 step 2): counters, serving metrics, benchmark
        trials."""
        return device_counters.compute(self.store, self.filter, self.limits.itl_spike_ratio)

    @cached_property
    def workload_sol(self) -> list[workload.DeviceSol]:
        """Workload speed-of-light: counters as % of the GPU's ceilings (sol/workload.py)."""
        return workload.compute(self.gpu_metrics.devices, self.limits)

    @cached_property
    def has_trace(self) -> bool:
        m = self.metrics
        return bool(m.devices) or m.host_span_ns > 0 or bool(
            self.store.sql("SELECT count(*) FROM f_host").fetchall()[0][0]
        ) or m.cpu_samples > 0 or m.summary_only or m.gpu_samples > 0

    @cached_property
    def summaries(self) -> list[summary.SummaryReport]:
        """Summary-only evidence (nsys stats CSV)."""
        return summary.summaries(self.store, self.filter.artifacts)

    @cached_property
    def capture_notes(self) -> dict[str, list[str]]:
        """What each capture did not collect."""
        return summary.artifact_notes(self.store, self.filter.artifacts)

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
        # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
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
        us, ue = intervals.merge(hs, he)
        return int((ue - us).sum()), len(rows), rows[:3]

    @cached_property
    def _detected(self) -> StepSet:
        """The steps as detected, before the account flags JIT / start-up steps."""
        found = self._kernel_read.steps
        return found if found is not None else self._find_steps(None, None)

    @cached_property
    def _steps_and_account(self) -> tuple[StepSet, Account | None]:
        """The account over the detected steps, and those steps with the JIT / start-up
        flags it sets: one computation, so `steps` reads the same whoever asks first."""
        found = self._detected
        kernels, self._kernel_read.account_kernels = self._kernel_read.account_kernels, None
        acc = account.compute(self.store, found, self.device_union, kernels, self.peer_wait,
                              reads=self.shared_reads)
        return found, acc

    @cached_property
    def shared_reads(self) -> SharedReads | None:
        """The host ops and loop spans a job's two accounts share — the steady steps' here,
        the late-ranks segments' in `ranks` (views/device/shared_reads.py, decision 0913);
        None for the input of one rank, whose one account frees them once painted."""
        n = self.store.sql("SELECT count(DISTINCT rank) FROM artifacts WHERE status = 'ok'"
                           " AND rank IS NOT NULL AND path IN (SELECT unnest($p))",
                           {"p": list(self.filter.artifacts)}).fetchall()[0][0]
        return SharedReads() if n >= 2 else None

    @property
    def steps(self) -> StepSet:
        """The repeated unit of work and its steady state (scope/step_detect.py), with the
        account's JIT / start-up flags."""
        return self._steps_and_account[0]

    @property
    def account(self) -> Account | None:
        """Per device and step, wall time in disjoint causes (views/device/account.py); None
        without kernels."""
        return self._steps_and_account[1]

    def _find_steps(self, kernels: KernelRows | None,
                    unions: list[intervals.DeviceIntervals] | None) -> StepSet:
        spec = self.filter.requested.step
        if spec is None:
            return steps.detect(self.store, kernels=kernels,
                                unions=unions if kernels is not None else None)
        # `--step`: the steps as numbered over the whole capture, then the selected ones
        ids = [int(a) for (a,) in self.store.sql(
            "SELECT artifact_id FROM artifacts WHERE path IN (SELECT unnest($p))",
            {"p": list(self.filter.artifacts)}).fetchall()]
        found, got = step_scope.selected(self.store, ids, spec)
        return steps.StepSet(found.source, got)

    @cached_property
    def peer_wait(self) -> list[peer_wait.PeerWait]:
        """Collective kernels waiting for a peer rank, per device, from the detected steps'
        repeats (views/distributed/peer_wait.py; an input of the account)."""
        found = peer_wait.compute(self.store, self._detected.steps,
                                  self.limits.peer_wait_min_steps,
                                  self.limits.peer_wait_min_excess_ns)
        if self.ranks is None or not self.ranks.comm:
            return found
        # ranks analyzed together: each collective's wait for its last member, measured
        # across ranks (views/distributed/rank_comm.py), replaces the one-rank estimate
        job = rank_job.peer_waits(self.store, self.ranks)
        have = {(w.artifact_id, w.device) for w in job}
        return job + [w for w in found if (w.artifact_id, w.device) not in have]

    @cached_property
    def device_union(self) -> list[intervals.DeviceIntervals]:
        union = self._kernel_read.union
        return union if union is not None else timeline.kernel_union(self.store)

    @cached_property
    def busy_lanes(self) -> busy_lanes.BusyLanes:
        """Kernel busy per device and stream in equal time slices (the HTML timeline)."""
        # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
        from crossview.views.device.busy_lanes import compute

        return compute(self.store)

    @cached_property
    def ranks(self) -> crossrank.RankAnalysis | None:
        """Cross-rank analysis when the input holds more than one rank
        (views/distributed/rank_job.py)."""
        job = rank_job.analyze_ranks(self.store, list(self.filter.artifacts), self.rejected,
                                     self.limits, self.shared_reads)
        if job is not None and self.rank_replayer is not None:
            job.replayer = functools.partial(self.rank_replayer, self, job)
        return job

    @cached_property
    def parallelism(self) -> parallelism.Parallelism:
        """Tensor parallel, FSDP, pipeline or data parallel, from the capture's frames and
        collectives (views/distributed/parallelism.py): which communication fix fits."""
        # lazy: a rare view, kept out of analyze start-up (measured, decision 0760)
        from crossview.views.distributed import parallelism

        return parallelism.detect(self.store)

    @cached_property
    def comm(self) -> list[timeline.CommExposure]:
        return timeline.comm_exposure(self.store)

    @cached_property
    def grad_sync(self) -> list[grad_sync.GradSync]:
        """Collective calls against gradients accumulated per steady step, per artifact
        (views/distributed/grad_sync.py)."""
        return grad_sync.compute(self.store, self.steps.steady)

    @cached_property
    def first_calls(self) -> first_calls.FirstCalls:
        """Ops whose first call with given shapes costs far more than the later ones, over
        the steady steps (views/host/first_calls.py)."""
        lim = self.limits
        return first_calls.compute(self.store, self.steps.steady, lim.first_call_min_ratio,
                                   lim.first_call_min_excess_ns, lim.first_call_min_later)

    @cached_property
    def fusion_runs(self) -> fusion_runs.FusionRuns:
        """Runs of consecutive one-op kernels per stream and what fusing each would save
        (views/device/fusion_runs.py)."""
        return fusion_runs.compute(self.store, op_roofline.limits()["unfused_families"])

    @cached_property
    def op_cost(self) -> list[op_cost.OpCost]:
        """The cheapest ATen ops' host time against CUDA query calls, per artifact, over the
        steady steps (views/host/op_cost.py)."""
        return op_cost.compute(self.store, self.steps.steady, self.limits.host_op_floor_quantile)

    @cached_property
    def device_activity(self) -> list[gpu_activity.DeviceActivity]:
        """Union of all GPU ops (kernels, copies, memsets) per device: the nsys rules' view."""
        return gpu_activity.activity(self.store, self._kernel_read.union)

    @cached_property
    def gpu_vendor(self) -> str | None:
        """The vendor (sol_ceilings.yaml `vendor`) of the GPUs whose kernels are in scope, when
        one vendor covers them all; None when unknown or mixed."""
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
        return capture_context.compute(self.store, self.filter.artifacts,
                                       self.gpu_metrics.engine,
                                       op_roofline.limits()["training_op_markers"],
                                       self.code_site()[0])

    @cached_property
    def kernels(self) -> list[roofline.KernelRoofline]:
        """Per-kernel roofline rows from ncu counters (empty without ncu input)."""
        return roofline.compute(ncu_launches.read(self.store, self.filter.artifacts),
                                self.limits)

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
        return self._code_site

    @cached_property
    def _code_site(self) -> tuple[str, str]:
        # once per analysis: a walk of the whole CPU view (every fix asks)
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
        r = op_roofline.compute(op_charges.read(self.store))
        if self.kernels and r.groups:
            r.agreement = op_ncu_agreement.compare(r.groups, self.kernels)
        return r

    @cached_property
    def comm_bandwidth(self) -> comm_bandwidth.CommBandwidth:
        """Collective algbw/busbw and copy bytes/s (views/distributed/comm_bandwidth.py)."""
        job = self.ranks
        return comm_bandwidth.compute(self.store, rank_job.transfers(self.store, job)
                                      if job is not None and job.comm else None)

