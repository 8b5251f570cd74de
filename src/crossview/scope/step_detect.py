"""Steps: the repeated unit of work in a capture, and which steps are steady state.

Sources, first that yields steps wins (knowledge/steps.yaml): `ProfilerStep#N` ranges, a
serving engine's step frame (vLLM `execute_model`, SGLang forward), a repeating
annotation (NVTX / record_function) that covers most of the host span, else the capture is one
unit. Per step: wall time, GPU busy (kernel union, per device, averaged over the artifact's
devices), kernel time by family (kernel time clipped to the step). Warm-up, JIT/autotune and
outlier steps are flagged and kept out of the steady state; when every step is flagged the
steady state falls back to all steps and says so (`steady_fallback`).
Found over the whole capture before any filter (`--step N` numbers them: scope/steps.py),
so it sits in scope, below the views that read the steps (decision 0901).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.knowledge.steps_rules import StepRules, rules
from crossview.store.host_calls import NO_LIMIT
from crossview.store.kernel_rows import KernelRows
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]

Flag = str  # warmup | jit | outlier


@dataclass
class Step:
    artifact_id: int
    artifact: str  # artifact path
    index: int  # 1-based, in time order within the artifact
    number: int  # ProfilerStep#N's N; else the index
    name: str
    start_ns: int
    end_ns: int
    gpu_busy_ns: int = 0  # kernel union inside the step, mean over the artifact's devices
    kernel_ns_by_family: dict[str, int] = field(default_factory=dict)  # clipped to the step
    flags: list[Flag] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # one sentence per flag
    # the step's own range (ProfilerStep, engine frame) ends here; end_ns may reach past it
    # to its GPU tail (_extend_to_gpu_tail); None: a range ending at end_ns
    range_end_ns: int | None = None

    @property
    def wall_ns(self) -> int:
        return self.end_ns - self.start_ns

    @property
    def steady(self) -> bool:
        return not self.flags

    def flag(self, flag: Flag, reason: str) -> None:
        if flag not in self.flags:
            self.flags.append(flag)
            self.reasons.append(reason)

    def to_dict(self) -> dict[str, object]:
        return {
            "artifact": self.artifact, "index": self.index, "number": self.number,
            "name": self.name, "start_ns": self.start_ns, "end_ns": self.end_ns,
            "wall_ns": self.wall_ns, "gpu_busy_ns": self.gpu_busy_ns,
            "gpu_busy_share": self.gpu_busy_ns / self.wall_ns if self.wall_ns else 0.0,
            "kernel_ns_by_family": dict(self.kernel_ns_by_family),
            "steady": self.steady, "flags": list(self.flags), "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class WallSummary:
    """Wall time of the steady steps (ns): median, p90 (linear interpolation), min, max."""

    n: int
    median_ns: int
    p90_ns: int
    min_ns: int
    max_ns: int


@dataclass
class StepSet:
    source: str  # profiler-step | engine:<name> | annotation:<name> | capture | none
    steps: list[Step]

    @property
    def steady(self) -> list[Step]:
        """Steps in the steady state; all steps when every one is flagged."""
        s = [x for x in self.steps if x.steady]
        return s or list(self.steps)

    @property
    def steady_fallback(self) -> bool:
        """True when no step is steady (the capture holds only warm-up / JIT / outliers)."""
        return bool(self.steps) and not any(x.steady for x in self.steps)

    @property
    def is_one_unit(self) -> bool:
        return self.source == "capture"

    def summary(self) -> WallSummary | None:
        walls = np.array([s.wall_ns for s in self.steady], dtype=np.int64)
        if len(walls) == 0:
            return None
        return WallSummary(len(walls), int(np.median(walls)), int(np.percentile(walls, 90)),
                           int(walls.min()), int(walls.max()))

    def to_dict(self) -> dict[str, object]:
        s = self.summary()
        return {
            "source": self.source, "count": len(self.steps),
            "steady_count": len([x for x in self.steps if x.steady]),
            "steady_fallback": self.steady_fallback,
            "wall": None if s is None else {"n": s.n, "median_ns": s.median_ns,
                                            "p90_ns": s.p90_ns, "min_ns": s.min_ns,
                                            "max_ns": s.max_ns},
            "per_step": [x.to_dict() for x in self.steps],
        }


# -- finding the steps ----------------------------------------------------------------------
def source_phrase(source: str) -> str:
    """Where a StepSet's steps came from, in words (the recap's and whatif's)."""
    if source == "profiler-step":
        return "`ProfilerStep#N` ranges"
    if source.startswith("engine:"):
        return f"the {source.split(':', 1)[1]} engine's step frame"
    if source.startswith("annotation:"):
        return f"the repeating range `{source.split(':', 1)[1]}`"
    return "the whole capture (no repeated step found: one unit)"


def in_steps(steps: Sequence[Step]) -> dict[str, list[int]]:
    """The parameters of the named relations f_host_in_steps($a, $s, $e) and
    f_gpu_in_steps($a, $s, $e) (store/stdlib STEP_MACROS) for these steps."""
    return {"a": [s.artifact_id for s in steps], "s": [s.start_ns for s in steps],
            "e": [s.end_ns for s in steps]}


def _paths(store: Store) -> dict[int, str]:
    return dict(store.sql("SELECT artifact_id, path FROM artifacts").fetchall())


def _profiler_steps(store: Store, host: str, r: StepRules) -> list[tuple[int, str, int, int]]:
    rows = store.sql(
        f"SELECT artifact_id, name, min(start_ns), max(start_ns + dur_ns) FROM {host}"
        # the regex on the distinct names, not on every op (host_calls.NO_LIMIT)
        f" WHERE name IN (SELECT name FROM (SELECT DISTINCT name FROM {host} LIMIT {NO_LIMIT})"
        " WHERE regexp_matches(name, $p)) GROUP BY ALL ORDER BY 1, 3",
        {"p": r.profiler_step.pattern},
    ).fetchall()
    return [(int(a), str(n), int(s), int(e)) for a, n, s, e in rows]


def _outermost(rows: list[tuple[int, str, int, int]]) -> list[tuple[int, str, int, int]]:
    """Drop ranges nested inside an earlier range of the same artifact."""
    out: list[tuple[int, str, int, int]] = []
    for a, n, s, e in sorted(rows, key=lambda x: (x[0], x[2], -x[3])):
        if out and out[-1][0] == a and s < out[-1][3]:
            continue
        out.append((a, n, s, e))
    return out


Raw = list[tuple[int, str, int, int]]  # (artifact_id, name, start_ns, end_ns)


def _engine_steps(store: Store, host: str, r: StepRules) -> tuple[str, Raw]:
    for engine, pat in r.engine_steps.items():
        rows = store.sql(
            f"SELECT artifact_id, name, start_ns, start_ns + dur_ns FROM {host}"
            " WHERE kind IN ('python', 'annotation') AND name IN (SELECT name FROM"
            f" (SELECT DISTINCT name FROM {host} WHERE kind IN ('python', 'annotation')"
            f" LIMIT {NO_LIMIT})"
            " WHERE regexp_matches(name, $p))", {"p": pat.pattern},
        ).fetchall()
        if rows:
            return engine, _outermost([(int(a), str(n), int(s), int(e)) for a, n, s, e in rows])
    return "", []


def _repeated_annotation(store: Store, host: str, r: StepRules
                         ) -> tuple[str, list[tuple[int, str, int, int]]]:
    spans = dict(store.sql(
        f"SELECT artifact_id, max(start_ns + dur_ns) - min(start_ns) FROM {host} GROUP BY 1"
    ).fetchall())
    cands = store.sql(
        f"SELECT artifact_id, name, min(depth), count(*), sum(dur_ns) FROM {host}"
        " WHERE kind = 'annotation' GROUP BY ALL HAVING count(*) >= $n ORDER BY 5 DESC",
        {"n": r.repeat_min},
    ).fetchall()
    for a, name, _, _, total in cands:
        if not spans.get(a) or int(total) < r.repeat_min_cover_share * int(spans[a]):
            continue
        rows = store.sql(
            f"SELECT start_ns, start_ns + dur_ns FROM {host} WHERE kind = 'annotation'"
            " AND artifact_id = $a AND name = $n ORDER BY 1", {"a": a, "n": name},
        ).fetchall()
        if all(rows[i + 1][0] >= rows[i][1] for i in range(len(rows) - 1)):
            return str(name), [(int(a), str(name), int(s), int(e)) for s, e in rows]
    return "", []


_PROBES = 8  # threads checked one by one for a launch before one query over all of them


def _one_unit(store: Store, host: str, gpu: str) -> list[tuple[int, str, int, int]]:
    """The whole capture of each artifact with kernels: from the first host op on a
    kernel-launching thread (or the first kernel) to the last kernel's end."""
    kernels = store.sql(
        f"SELECT artifact_id, min(start_ns), max(start_ns + dur_ns) FROM {gpu}"
        " WHERE kind = 'kernel' GROUP BY 1 ORDER BY 1").fetchall()
    if not kernels:
        return []
    first = _first_launching_thread_start(store, host, gpu)
    return [(int(a), "(whole capture)", min(int(ks), first.get(int(a), int(ks))), int(ke))
            for a, ks, ke in kernels]


def _first_launching_thread_start(store: Store, host: str, gpu: str) -> dict[int, int]:
    """Per artifact, the first host op's start on a thread that launched a GPU op. Threads
    are tried in the order of their first op, each by one EXISTS probe (the first usually
    launches: a probe of one thread's ops, not a join of every op); past `_PROBES` probes,
    one query over all threads."""
    threads = store.sql(
        f"SELECT artifact_id, pid, tid, min(start_ns) FROM {host}"
        " WHERE pid IS NOT NULL AND tid IS NOT NULL GROUP BY ALL ORDER BY 1, 4").fetchall()
    out: dict[int, int] = {}
    probes = 0
    for a, pid, tid, s in threads:
        if a in out:
            continue
        if probes == _PROBES:
            return _launching_thread_starts(store, host, gpu)
        probes += 1
        if _launches(store, gpu, a, pid, tid):
            out[int(a)] = int(s)
    return out


_SAMPLE = 1024  # launch op ids looked for first on a thread (a hit settles the probe)


def _launches(store: Store, gpu: str, a: object, pid: object, tid: object) -> bool:
    """Whether the thread launched a GPU op of its artifact: first among a few of the
    artifact's launch op ids (the thread that launches holds them: 1 M nsys kernels, the
    join's hash table of the thread's 1 M ops 50 ms → 4 ms), else by the join."""
    p = {"a": a, "p": pid, "t": tid}
    return bool(store.sql(
        "SELECT EXISTS (SELECT 1 FROM host_ops h WHERE h.artifact_id = $a AND h.pid = $p"
        " AND h.tid = $t AND h.op_id IN (SELECT launch_op_id FROM"
        f" {gpu} WHERE artifact_id = $a AND launch_op_id IS NOT NULL LIMIT {_SAMPLE}))", p,
    ).fetchall()[0][0]) or bool(store.sql(
        f"SELECT EXISTS (SELECT 1 FROM {gpu} g JOIN host_ops h"
        " ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id"
        " WHERE h.artifact_id = $a AND h.pid = $p AND h.tid = $t)", p,
    ).fetchall()[0][0])


def _launching_thread_starts(store: Store, host: str, gpu: str) -> dict[int, int]:
    return {int(a): int(s) for a, s in store.sql(
        f"WITH t AS (SELECT DISTINCT h.artifact_id, h.pid, h.tid FROM {gpu} g JOIN host_ops h"
        "   ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id)"
        f" SELECT f.artifact_id, min(f.start_ns) FROM {host} f JOIN t USING (artifact_id, pid,"
        " tid) GROUP BY 1").fetchall()}


def _tables(whole: Sequence[int] | Literal["all"] | None) -> tuple[str, str]:
    """The host and GPU relations the step queries read (see `detect`)."""
    if whole is None:
        return "f_host", "f_gpu"
    if whole == "all":
        return "host_ops", "gpu_ops"
    ids = ",".join(str(int(a)) for a in whole) or "NULL"
    return (f"(SELECT * FROM host_ops WHERE artifact_id IN ({ids}))",
            f"(SELECT * FROM gpu_ops WHERE artifact_id IN ({ids}))")


def detect(store: Store, whole: Sequence[int] | Literal["all"] | None = None,
           kernels: KernelRows | None = None,
           unions: list[intervals.DeviceIntervals] | None = None) -> StepSet:
    """Find the steps: in the filter's scope (f_host / f_gpu) by default; with `whole`, over
    the whole capture (filter ignored) of every artifact ("all") or of these artifact ids.
    `kernels`: f_gpu's kernels when the caller has them (the filter's scope only), with
    `unions` their kernel union per device (intervals.union_by_device) if computed."""
    host, gpu = _tables(whole)
    r = rules()
    raw = _profiler_steps(store, host, r)
    source = "profiler-step"
    if not raw:
        engine, raw = _engine_steps(store, host, r)
        source = f"engine:{engine}"
    if not raw:
        name, raw = _repeated_annotation(store, host, r)
        source = f"annotation:{name}"
    if not raw:
        raw, source = _one_unit(store, host, gpu), "capture"
    if not raw:
        return StepSet("none", [])
    paths = _paths(store)
    steps: list[Step] = []
    per_art: dict[int, int] = {}
    for a, name, s, e in raw:
        per_art[a] = per_art.get(a, 0) + 1
        m = r.profiler_step.match(name) if source == "profiler-step" else None
        steps.append(Step(a, paths.get(a, str(a)), per_art[a],
                          int(m.group(1)) if m else per_art[a], name, s, e,
                          range_end_ns=e))
    mine = kernels is not None and whole is None
    k = kernels if kernels is not None and mine else KernelRows(store, gpu)
    if len(k):
        _extend_to_gpu_tail(k, steps)
        _gpu_facts(k, steps, {(u.artifact_id, u.device): u for u in unions or []}
                   if mine else {})
    _flag_walls(steps, r)
    return StepSet(source, steps)


def _extend_to_gpu_tail(k: KernelRows, steps: list[Step]) -> None:
    """A step ends when its host range ends or when the last kernel launched inside it
    finishes, whichever is later, but never after the next step starts (steps stay
    disjoint). vLLM's `execute_model` returns before its graph replay runs on the GPU.
    The last of back-to-back steps (the previous step reaches its start: host ranges cut start
    to start, or a GPU tail capped there) keeps its range: the others run start to start, each
    holding the previous step's GPU tail and handing its own to the next, while the last one's
    tail has no next step and would add the whole queued backlog (hta_a100_16rank: 216.22 →
    374.46 ms, the GPU 160 ms behind; workers0: 155.72 → 167.12 ms)."""
    for a in dict.fromkeys(x.artifact_id for x in steps):
        sel = k.launched & (k.art == a)
        ls, ke = intervals.in_start_order(k.ls[sel], k.e[sel])
        for i, x in enumerate(steps):
            if x.artifact_id != a:
                continue
            lo, hi = np.searchsorted(ls, [x.start_ns, x.end_ns], side="left")
            if hi <= lo:
                continue
            end = max(x.end_ns, int(ke[lo:hi].max()))
            nxt = steps[i + 1] if i + 1 < len(steps) else None
            if nxt is not None and nxt.artifact_id == x.artifact_id:
                end = min(end, nxt.start_ns)
            else:
                prev = steps[i - 1] if i > 0 else None
                if (prev is not None and prev.artifact_id == x.artifact_id
                        and prev.end_ns >= x.start_ns):
                    continue  # the last of back-to-back steps: start to start like the rest
            x.end_ns = end


def _gpu_facts(k: KernelRows, steps: list[Step],
               unions: dict[tuple[int, int], intervals.DeviceIntervals]) -> None:
    """Per step: kernel union (mean over the artifact's devices; `unions` holds those already
    merged) and kernel time by family (each kernel clipped to the step)."""
    for a in {x.artifact_id for x in steps}:
        mine = [x for x in steps if x.artifact_id == a]
        ws = np.array([x.start_ns for x in mine], dtype=np.int64)
        we = np.array([x.end_ns for x in mine], dtype=np.int64)
        sel_a: slice | npt.NDArray[np.bool_] = slice(None) if (k.art == a).all() \
            else k.art == a  # one artifact: no copy
        dev = k.dev[sel_a]
        devices = intervals.uniq(dev)
        busy = np.zeros(len(mine), dtype=np.int64)
        s_a, e_a = k.s[sel_a], k.e[sel_a]
        for d in devices:
            u = unions.get((int(a), int(d)))
            us, ue = (u.busy_s, u.busy_e) if u is not None else intervals.merge(
                s_a[dev == d], e_a[dev == d])
            busy += intervals.overlap(ws, we, us, ue)
        for x, b in zip(mine, busy, strict=True):
            x.gpu_busy_ns = int(b // max(len(devices), 1))
        # kernels by start; those overlapping [ws, we) start before we and sit at or after
        # the first whose running end max passes ws
        ks, ke, fam = intervals.in_start_order(s_a, e_a, k.fam[sel_a])
        first = np.searchsorted(np.maximum.accumulate(ke), ws, side="right")
        stop = np.searchsorted(ks, we, side="left")
        for x, lo, hi in zip(mine, first, stop, strict=True):
            t = np.zeros(len(k.families), dtype=np.int64)
            if hi > lo:
                clip = (np.minimum(ke[lo:hi], x.end_ns) - np.maximum(ks[lo:hi], x.start_ns))
                np.add.at(t, fam[lo:hi], clip.clip(0))
            for f in np.nonzero(t)[0]:
                x.kernel_ns_by_family[k.families[f]] = int(t[f])


def _flag_walls(steps: list[Step], r: StepRules) -> None:
    """Warm-up (first step, slow) and outlier (slow) steps, per artifact (steps.yaml)."""
    for a in {x.artifact_id for x in steps}:
        mine = [x for x in steps if x.artifact_id == a]
        if len(mine) < r.flag_min_steps:
            continue
        walls = np.array([x.wall_ns for x in mine], dtype=np.float64)
        med_rest = float(np.median(walls[1:]))
        if walls[0] > r.warmup_ratio * med_rest:
            mine[0].flag("warmup", f"first step {walls[0] / 1e6:.2f} ms > {r.warmup_ratio}× "
                                   f"the median of the others ({med_rest / 1e6:.2f} ms)")
        med = float(np.median(walls))
        for i, x in enumerate(mine):
            if x.wall_ns > r.outlier_ratio * med and "warmup" not in x.flags:
                last = " (the last step: it holds the profiler's flush)" \
                    if i == len(mine) - 1 else ""
                x.flag("outlier", f"{x.wall_ns / 1e6:.2f} ms > {r.outlier_ratio}× the median "
                                  f"step ({med / 1e6:.2f} ms){last}")


def select(steps: StepSet, spec: str) -> list[Step]:
    """`--step N` or `--step A:B` (inclusive): steps by number (ProfilerStep#N's N, else the
    1-based index). Raises ValueError naming what exists."""
    try:
        if ":" in spec:
            a, b = (int(x) for x in spec.split(":", 1))
        else:
            a = b = int(spec)
    except ValueError:
        raise ValueError(f"--step {spec}: expected N or A:B (step numbers)") from None
    if b < a:
        raise ValueError(f"--step {spec}: the end must not be before the start")
    got = [s for s in steps.steps if a <= s.number <= b]
    if not got:
        have = sorted({s.number for s in steps.steps})
        raise ValueError(f"--step {spec}: no such step (have: {have}; steps from "
                         f"{steps.source})")
    return got
