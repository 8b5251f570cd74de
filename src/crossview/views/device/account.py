"""The time account: per device and step, every nanosecond of wall time in exactly one row.

Busy time is the kernel union: exposed communication (comm kernels with no other kernel
running) is its own row, the rest is split by kernel family in proportion to each family's
union inside the step. Idle time is cut into pieces at every host-op boundary of the
kernel-launching threads (views/device/host_state.py) and every GPU copy boundary; each piece takes
the cause of what the host was doing then, then the gap-level rules of
knowledge/account.yaml apply (work already queued → GPU-side dependency; a gap opened in a
sync → the sync owns the refill; no host op → capture boundary or unexplained). Pieces are
disjoint and cover the idle time exactly, so per step the causes sum to the idle time.

The launch queue (kernels launched but not finished at each launch call, per device) tells
"the host never got ahead" (the queue is empty at most launches: launch/dispatch-bound) from
"a few long host stalls" (the queue is deep between stalls).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.knowledge import causes
from crossview.knowledge.steps_rules import rules as step_rules
from crossview.scope.step_detect import Step, StepSet
from crossview.store.kernel_rows import KernelRows
from crossview.store.store import Store
from crossview.views.device import host_state, idle_pieces, launch_queue
from crossview.views.device.idle_pieces import Pieces
from crossview.views.device.shared_reads import SharedReads
from crossview.views.distributed.peer_wait import PeerWait

I64 = npt.NDArray[np.int64]
BUSY_PREFIX = "kernel:"  # busy rows are "kernel:<family>"
EXPOSED_COMM = "exposed_comm"
PEER_WAIT = "peer_wait"
BUSY_LABELS = {EXPOSED_COMM: "exposed communication",
               PEER_WAIT: "collectives waiting for a peer rank (GPU spins)"}
_PIECES_PER_PASS = 1 << 20  # idle pieces summed per pass (memory only: the sums are exact)


@dataclass(frozen=True)
class FrameNs:
    frame: str
    ns: int


@dataclass
class CauseSlice:
    """One row of the account: a cause (or busy kernel family) and its time."""

    cause: str
    label: str
    ns: int  # per step (mean over the steps and devices it summarizes)
    share_of_step: float  # of the mean step wall time
    top_frames: list[FrameNs] = field(default_factory=list)
    evidence: str = ""
    startup: bool = False  # start-up / boundary time: never a steady-state lever
    idle: bool = True  # False for busy rows (kernel families, exposed communication)

    def to_dict(self) -> dict[str, object]:
        return {"cause": self.cause, "label": self.label, "ns": self.ns,
                "share_of_step": self.share_of_step,
                "top_frames": [{"frame": f.frame, "ns": f.ns} for f in self.top_frames],
                "evidence": self.evidence, "startup": self.startup, "idle": self.idle}


@dataclass(frozen=True)
class GapCall:
    frame: str  # the frame the cause names (innermost op, matched frame or calling frame)
    calling: str | None  # nearest python frame above, when recorded
    ns: int  # idle time of the gap spent there


@dataclass
class Gap:
    start_ns: int
    dur_ns: int
    cause: str  # the cause holding most of the gap
    calls: list[GapCall]
    # the causes holding ≥ account.yaml gap_cause_min_share of the gap, most first, when
    # there are several (its calls may belong to any of them: the recap names each)
    causes: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class StepAccount:
    artifact: str
    device: int
    step: int  # Step.number
    wall_ns: int
    busy_ns: int
    busy_by_family: dict[str, int]  # non-comm busy split by family
    exposed_comm_ns: int  # without peer_wait_ns
    idle_ns: int
    idle_by_cause: dict[str, int]
    top_gaps: list[Gap]
    launches: int
    empty_queue_launches: int  # launch calls that found no launched kernel unfinished
    # collective kernels spinning for a peer rank with no other kernel running
    # (views/distributed/peer_wait.py): busy, but not this rank's communication
    peer_wait_ns: int = 0

    @property
    def empty_queue_share(self) -> float:
        return self.empty_queue_launches / self.launches if self.launches else 0.0


@dataclass
class DeviceAccount:
    artifact: str
    device: int
    steps: list[StepAccount]
    outside_steps_ns: int  # kernel-span time of the device in no step

    def to_dict(self) -> dict[str, object]:
        return {
            "artifact": self.artifact, "device": self.device,
            "outside_steps_ns": self.outside_steps_ns,
            "steps": [{
                "step": s.step, "wall_ns": s.wall_ns, "busy_ns": s.busy_ns,
                "busy_by_family": s.busy_by_family, "exposed_comm_ns": s.exposed_comm_ns,
                "peer_wait_ns": s.peer_wait_ns,
                "idle_ns": s.idle_ns, "idle_by_cause": s.idle_by_cause,
                "launches": s.launches, "empty_queue_share": s.empty_queue_share,
                "top_gaps": [{"start_ns": g.start_ns, "dur_ns": g.dur_ns, "cause": g.cause,
                              "calls": [{"frame": c.frame, "calling": c.calling, "ns": c.ns}
                                        for c in g.calls],
                              **({"causes": [{"cause": c, "ns": n} for c, n in g.causes]}
                                 if g.causes else {})} for g in s.top_gaps],
            } for s in self.steps],
        }


@dataclass
class Account:
    per_device: list[DeviceAccount]
    steady_state: list[CauseSlice]  # per mean steady step, busy rows and idle causes
    steady_wall_ns: int  # mean wall time of a steady step
    steady_steps: int
    steady_fallback: bool  # no steady step: the rows summarize warm-up / JIT steps
    startup: list[CauseSlice]  # start-up/boundary causes over flagged steps + outside steps
    empty_queue_share: float  # over the steady steps' launches
    launch_bound: bool  # the host never got ahead (queue empty at most launches)

    def slice(self, cause: str) -> CauseSlice | None:
        return next((c for c in self.steady_state if c.cause == cause), None)

    def idle_ns(self) -> int:
        return sum(c.ns for c in self.steady_state if c.idle)

    def summary_dict(self) -> dict[str, object]:
        """The steady-state rows without the per-device, per-step detail (compact results)."""
        d = self.to_dict()
        d.pop("per_device")
        return d

    def to_dict(self) -> dict[str, object]:
        return {
            "per_device": [d.to_dict() for d in self.per_device],
            "steady_state": [c.to_dict() for c in self.steady_state],
            "steady_wall_ns": self.steady_wall_ns, "steady_steps": self.steady_steps,
            "steady_fallback": self.steady_fallback,
            "startup": [c.to_dict() for c in self.startup],
            "empty_queue_share": self.empty_queue_share, "launch_bound": self.launch_bound,
        }


# -- per device ------------------------------------------------------------------------------
def _largest_remainder(total: int, weights: dict[str, int]) -> dict[str, int]:
    w = sum(weights.values())
    if total <= 0 or w <= 0:
        return {}
    raw = {k: total * v / w for k, v in weights.items()}
    out = {k: int(x) for k, x in raw.items()}
    left = total - sum(out.values())
    for k in sorted(raw, key=lambda k: raw[k] - out[k], reverse=True)[:left]:
        out[k] += 1
    return {k: v for k, v in out.items() if v}


@dataclass
class DeviceKernels:
    """A device's kernels as the account reads them, in f_gpu's order: start, end, family as
    a code into `fams` (the sorted names present on the device), launch op id (-1 none)."""

    s: I64
    e: I64
    fam: npt.NDArray[np.int32]
    fams: list[str]
    lop: I64


class KernelColumns:
    """The columns of f_gpu's kernels the account needs, kept from the Views' one read
    (store/kernel_rows.py) instead of a second scan (nsys 1 M kernels: ~45 ms of
    DuckDB), where every kernel is of one device (the arrays as read, no copy); handed over
    once. Several devices read their own rows (not every device's columns held at once)."""

    def __init__(self, k: KernelRows) -> None:
        self.key = (int(k.art[0]), int(k.dev[0]))
        self._cols: tuple[I64, ...] | None = (k.s, k.e, k.fam, k.launch)
        self._families = k.families

    @staticmethod
    def of(k: KernelRows) -> KernelColumns | None:
        one = len(k.s) > 0 and bool((k.art == k.art[0]).all() and (k.dev == k.dev[0]).all())
        return KernelColumns(k) if one else None

    def take(self, a: int, d: int) -> DeviceKernels | None:
        if self._cols is None or (a, d) != self.key:
            return None
        s, e, fam, lop = self._cols
        self._cols = None  # handed over, not kept
        # codes into the device's own sorted names (those present), as the SQL read numbers them
        present = intervals.uniq(fam)
        code = np.full(len(self._families), -1, dtype=np.int32)
        code[present] = np.arange(len(present), dtype=np.int32)
        return DeviceKernels(s, e, code[fam], [self._families[int(f)] for f in present], lop)


def _box(kernels: KernelColumns | None, a: int, d: int) -> list[DeviceKernels] | None:
    """The device's kernel columns in a list `_device` empties (freed there once used)."""
    cols = kernels.take(a, d) if kernels is not None else None
    return [cols] if cols is not None else None


def _read_kernels(store: Store, a: int, d: int) -> DeviceKernels:
    # kernel families as codes into their sorted names (no per-row Python string)
    p = {"a": a, "d": d}
    where = "FROM f_gpu WHERE kind = 'kernel' AND artifact_id = $a AND device = $d"
    fams = sorted(str(f) for (f,) in store.sql(
        f"SELECT DISTINCT coalesce(family, 'None') {where}", p).fetchall())
    k = store.sql(
        "SELECT start_ns, start_ns + dur_ns AS e,"
        f" list_position($f, coalesce(family, 'None'))::INTEGER - 1 AS fam,"
        f" coalesce(launch_op_id, -1) AS lop {where}", {**p, "f": fams}).fetchnumpy()
    return DeviceKernels(np.asarray(k["start_ns"], dtype=np.int64),
                         np.asarray(k["e"], dtype=np.int64),
                         np.asarray(k["fam"], dtype=np.int32), fams,
                         np.asarray(k["lop"], dtype=np.int64))


def _device(store: Store, a: int, path: str, d: int, steps: list[Step],
            union: intervals.DeviceIntervals | None = None,
            kbox: list[DeviceKernels] | None = None,
            wait: PeerWait | None = None,
            gaps_for: Collection[int] | None = None,
            reads: SharedReads | None = None) -> tuple[DeviceAccount, Pieces]:
    """reads: the host ops and loop spans another account of this analysis shares (a job's;
    shared_reads.py), else read here and freed once painted.
    union: the device's kernel union when the caller has it (else merged here); kbox: the
    device's kernels when the caller has them, taken out of the list (else read here); wait:
    the device's collective waits for peers, carved out of exposed communication; gaps_for:
    as `compute`'s."""
    rules = causes.rules()
    ids = [c.id for c in rules.causes]
    k = kbox.pop() if kbox else _read_kernels(store, a, d)
    s, e, fam, fams, lop = k.s, k.e, k.fam, k.fams, k.lop
    del k
    host = reads.ops(store, a, d, lop) if reads is not None else host_state.ops(store, a, d, lop)
    # the launch calls: searched among the host ops just read when they hold every op of
    # the artifact, else joined in SQL (a host filter leaves launch calls out of the scope)
    launches = (launch_queue.from_ops(s, e, lop, host.op, host.s, host.e)
                if host.complete else launch_queue.kernel_launches(store, a, d))
    del lop
    ls, depth = launch_queue.depth_at_launches(launches)
    first_end = launch_queue.first_launch_end(launches)
    del launches
    us, ue = (union.busy_s, union.busy_e) if union is not None else intervals.merge(s, e)
    ws = np.array([x.start_ns for x in steps], dtype=np.int64)
    we = np.array([x.end_ns for x in steps], dtype=np.int64)
    lo = int(min(ws.min(), us[0] if len(us) else ws.min()))
    hi = int(max(we.max(), ue[-1] if len(ue) else we.max()))
    busy = intervals.overlap(ws, we, us, ue)
    peer = np.zeros(len(steps), dtype=np.int64)
    if "comm" in fams:
        comm = fam == fams.index("comm")
        ns, ne = intervals.merge(s[~comm], e[~comm])
        noncomm = intervals.overlap(ws, we, ns, ne)
        del comm
        if wait is not None and len(wait.wait_s):
            # |W ∖ N| = |W ∪ N| − |N| per step: the waits no other kernel runs beside
            peer = intervals.overlap(ws, we, *intervals.merge(
                np.concatenate([wait.wait_s, ns]), np.concatenate([wait.wait_e, ne]))) - noncomm
        del ns, ne
    else:  # no comm kernel: the non-comm union is the kernel union (no second merge)
        noncomm = busy
    fam_w: dict[str, I64] = {}
    for f in np.nonzero(np.bincount(fam, minlength=len(fams)))[0]:  # names in order
        if fams[f] != "comm":
            of = fam == f
            fam_w[fams[f]] = intervals.overlap(ws, we, *intervals.merge(s[of], e[of]))
    del s, e, fam  # the kernel rows are done with before the pieces
    # launches per step and those finding the queue empty: prefix counts over the sorted
    # launch times (no pass over every launch per step)
    lo_l = np.searchsorted(ls, ws)
    hi_l = np.maximum(np.searchsorted(ls, we), lo_l)
    empty = np.r_[0, np.cumsum(depth == 0)]
    n_launch, n_empty = hi_l - lo_l, empty[hi_l] - empty[lo_l]
    del ls, depth, empty
    box = [host]
    del host  # idle_pieces takes the op rows and frees them once painted
    pcs, gs, ge = idle_pieces.pieces(store, a, d, lo, hi, us, ue, first_end, box,
                                     reads.loop_windows(store, a) if reads is not None else None)
    by_cause = _by_cause(pcs, ws, we, ids)
    rows: list[StepAccount] = []
    for i, x in enumerate(steps):
        rows.append(StepAccount(
            path, d, x.number, x.wall_ns, int(busy[i]),
            _largest_remainder(int(noncomm[i]), {f: int(w[i]) for f, w in fam_w.items()}),
            int(busy[i] - noncomm[i] - peer[i]), int(x.wall_ns - busy[i]),
            {c: int(v[i]) for c, v in by_cause.items() if v[i]},
            _top_gaps(pcs, gs, ge, x, ids) if gaps_for is None or x.number in gaps_for
            else [], int(n_launch[i]), int(n_empty[i]),
            int(peer[i])))
    inside = int(intervals.overlap(np.array([int(us[0])]), np.array([int(ue[-1])]),
                                  *intervals.merge(ws, we))[0]) if len(us) else 0
    outside = (int(ue[-1]) - int(us[0]) - inside) if len(us) else 0
    return DeviceAccount(path, d, rows, outside), pcs


def _by_cause(p: Pieces, ws: I64, we: I64, ids: list[str]) -> dict[str, I64]:
    """Per cause, its idle time inside each step: per run of pieces, the pieces grouped by
    cause (stable: each group keeps start order), one slice per cause; the runs add up (the
    pieces are disjoint)."""
    out = {c: np.zeros(len(ws), dtype=np.int64) for c in ids}
    for i in range(0, len(p.s), _PIECES_PER_PASS):
        run = slice(i, i + _PIECES_PER_PASS)
        cause = p.cause[run]
        o = np.argsort(cause.astype(np.int16), kind="stable")
        cut = np.searchsorted(cause[o], np.arange(len(ids) + 1))
        s, e = p.s[run], p.e[run]
        for k, c in enumerate(ids):
            if cut[k + 1] > cut[k]:
                at = o[cut[k]:cut[k + 1]]
                out[c] += intervals.overlap(ws, we, s[at], e[at])
    return out


def _top_gaps(p: Pieces, gs: I64, ge: I64, x: Step, ids: list[str]) -> list[Gap]:
    rules = causes.rules()
    # gaps and pieces are sorted and disjoint: the step's gaps, and each gap's pieces, are
    # one contiguous run each (searchsorted, no scan of the whole device per step)
    g0, g1 = int(np.searchsorted(ge, x.start_ns, "right")), int(np.searchsorted(gs, x.end_ns))
    cs = np.clip(gs[g0:g1], x.start_ns, x.end_ns)
    ce = np.clip(ge[g0:g1], x.start_ns, x.end_ns)
    dur = ce - cs
    order = _longest(dur, rules.top_gaps)
    out: list[Gap] = []
    for g in order:
        if dur[g] <= 0:
            continue
        sel = slice(int(np.searchsorted(p.e, cs[g], "right")), int(np.searchsorted(p.s, ce[g])))
        ln = np.minimum(p.e[sel], ce[g]) - np.maximum(p.s[sel], cs[g])
        by_cause = np.bincount(p.cause[sel], weights=ln, minlength=len(ids))
        held = [(ids[i], int(by_cause[i])) for i in np.argsort(-by_cause, kind="stable")
                if by_cause[i] >= rules.gap_cause_min_share * dur[g]]
        out.append(Gap(int(cs[g]), int(dur[g]), ids[int(by_cause.argmax())],
                       [GapCall(p.names[f], p.names[c] if c >= 0 and c != f else None, n)
                        for f, c, n in _gap_calls(p, sel, ln, rules.gap_calls)],
                       held if len(held) > 1 else []))
    return out


def _longest(dur: I64, top: int) -> I64:
    """The indices of the `top` largest values, largest first, ties in index order (a stable
    sort of every value's negation, cut): only the values reaching the top-th largest are
    sorted (nsys 1 M: one step of 1 M gaps)."""
    if top <= 0 or len(dur) <= 4 * top:
        return np.argsort(-dur, kind="stable")[:top]
    neg = -dur
    cand = np.nonzero(neg <= np.partition(neg, top - 1)[top - 1])[0]
    return cand[np.argsort(neg[cand], kind="stable")][:top]


def _gap_calls(p: Pieces, sel: slice, ln: I64, top: int) -> list[tuple[int, int, int]]:
    """The (frame, calling frame, ns) with the most time among a gap's pieces, most first
    (ties: first met first)."""
    f, c = p.frame[sel].astype(np.int64), p.calling[sel].astype(np.int64)
    has = f >= 0
    if not has.any():
        return []
    f, c, ln = f[has], c[has], ln[has]
    key = f * (len(p.names) + 1) + (c + 1)
    uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
    tot = np.bincount(inv, weights=ln).astype(np.int64)  # exact: ns sums far below 2**53
    o = np.lexsort((first, -tot))[:top]
    return [(int(f[first[i]]), int(c[first[i]]), int(tot[i])) for i in o]


# -- over the steady state -------------------------------------------------------------------
def compute(store: Store, steps: StepSet,
            unions: list[intervals.DeviceIntervals] | None = None,
            kernels: KernelColumns | None = None,
            waits: list[PeerWait] | None = None,
            gaps_for: Collection[int] | None = None,
            reads: SharedReads | None = None) -> Account | None:
    """The account of every device with kernels, over the steps of its artifact. reads: the
    reads another account of this analysis shares (shared_reads.py). unions:
    the kernel union per device (timeline.kernel_union), kernels: f_gpu's kernel columns,
    when the caller has them; waits: collective waits for peers per device; gaps_for: the
    step numbers whose longest gaps are named (None: every step's; the others get none —
    a rank's segments name them only where it arrived last)."""
    if not steps.steps:
        return None
    rules = causes.rules()
    ids = [c.id for c in rules.causes]
    labels = {c.id: c.label for c in rules.causes}
    devs = store.sql("SELECT DISTINCT artifact_id, device FROM f_gpu WHERE kind = 'kernel'"
                     " ORDER BY ALL").fetchall()
    per_device: list[DeviceAccount] = []
    pieces: list[tuple[Pieces, list[Step]]] = []
    for a, d in devs:
        mine = [x for x in steps.steps if x.artifact_id == a]
        if not mine:
            continue
        acc, pcs = _device(store, int(a), mine[0].artifact, int(d), mine, next(
            (u for u in unions or [] if (u.artifact_id, u.device) == (a, d)), None),
            _box(kernels, int(a), int(d)),
            next((w for w in waits or [] if (w.artifact_id, w.device) == (a, d)), None),
            gaps_for, reads)
        per_device.append(acc)
        pieces.append((pcs, mine))
    if not per_device:
        return None
    _flag_jit(steps, per_device)
    steady_keys = {(x.artifact, x.number) for x in steps.steady}
    rows = [(dev, s) for dev in per_device for s in dev.steps
            if (dev.artifact, s.step) in steady_keys]
    n = len(rows) or 1
    wall = sum(s.wall_ns for _, s in rows)
    mean_wall = wall // n
    totals: dict[str, int] = defaultdict(int)
    for _, s in rows:
        for f, v in s.busy_by_family.items():
            totals[BUSY_PREFIX + f] += v
        totals[EXPOSED_COMM] += s.exposed_comm_ns
        totals[PEER_WAIT] += s.peer_wait_ns
        for c, v in s.idle_by_cause.items():
            totals[c] += v
    frames_by = _top_frames(pieces, steady_keys, ids)
    launches = sum(s.launches for _, s in rows)
    empty = sum(s.empty_queue_launches for _, s in rows)
    empty_share = empty / launches if launches else 0.0
    steady: list[CauseSlice] = []
    for key, v in sorted(totals.items(), key=lambda kv: -kv[1]):
        if v <= 0:
            continue
        is_idle = key in labels
        label = labels.get(key) or BUSY_LABELS.get(key) or f"busy: {key[len(BUSY_PREFIX):]} kernels"
        steady.append(CauseSlice(
            key, label, v // n, v / wall if wall else 0.0,
            [FrameNs(f, t // n) for f, t in frames_by.get(key, [])],
            _evidence(key, rows, empty_share), key in rules.startup_causes, is_idle))
    launch_bound = empty_share >= rules.queue_empty_launch_share
    return Account(per_device, steady, mean_wall, len(rows), steps.steady_fallback,
                   _startup(per_device, steady_keys, labels, rules.startup_causes),
                   empty_share, launch_bound)


def _flag_jit(steps: StepSet, per_device: list[DeviceAccount]) -> None:
    r = step_rules()
    startup = causes.rules().startup_causes
    for dev in per_device:
        for s in dev.steps:
            x = next((x for x in steps.steps
                      if x.artifact == dev.artifact and x.number == s.step), None)
            if x is None or not s.wall_ns:
                continue
            jit = s.idle_by_cause.get("jit_compile", 0)
            if jit >= r.jit_step_share * s.wall_ns:
                x.flag("jit", f"{jit / 1e6:.2f} ms of GPU idle ({jit / s.wall_ns:.0%} of the "
                              "step) while the host compiled / autotuned")
            st = sum(v for c, v in s.idle_by_cause.items() if c in startup)
            # start-up needs start-up evidence (issue 37): compile / autotune / module load in
            # the step; idle at the capture's edges alone is not it
            if jit and st >= r.startup_step_share * s.wall_ns:
                x.flag("startup", f"{st / 1e6:.2f} ms ({st / s.wall_ns:.0%} of the step) is "
                                  "start-up: JIT compile or time before the first / after the "
                                  "last kernel with no host work recorded")


def _top_frames(pieces: list[tuple[Pieces, list[Step]]], keys: set[tuple[str, int]],
                ids: list[str]) -> dict[str, list[tuple[str, int]]]:
    acc: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p, mine in pieces:
        sw = [x for x in mine if (x.artifact, x.number) in keys]
        if not sw:
            continue
        ws, we = intervals.merge(np.array([x.start_ns for x in sw], dtype=np.int64),
                                np.array([x.end_ns for x in sw], dtype=np.int64))
        # (cause, frame) pairs summed with numpy over runs of pieces (float sums of integer
        # ns: exact, whatever the runs), then named
        m = len(ids) * (len(p.names) + 1)
        tot, cnt = np.zeros(m), np.zeros(m, dtype=np.int64)
        for i in range(0, len(p.s), _PIECES_PER_PASS):
            run = slice(i, i + _PIECES_PER_PASS)
            ln = intervals.overlap(p.s[run], p.e[run], ws, we)
            sel = (ln > 0) & (p.frame[run] >= 0)
            key = p.cause[run][sel].astype(np.int64) * (len(p.names) + 1) + p.frame[run][sel]
            tot += np.bincount(key, weights=ln[sel], minlength=m)  # small key range: no sort
            cnt += np.bincount(key, minlength=m)
        uk = np.nonzero(cnt)[0]
        for k, n in zip(uk, tot[uk], strict=True):
            c, f = divmod(int(k), len(p.names) + 1)
            acc[ids[c]][p.names[f]] += int(n)
    n = causes.rules().top_frames
    return {c: sorted(d.items(), key=lambda kv: -kv[1])[:n] for c, d in acc.items()}


def _evidence(key: str, rows: list[tuple[DeviceAccount, StepAccount]], empty: float) -> str:
    gaps = sum(1 for _, s in rows for g in s.top_gaps if g.cause == key)
    if key.startswith(BUSY_PREFIX) or key == EXPOSED_COMM:
        return "kernel intervals (union per device) inside the steps"
    if key == "graph_unrecorded":
        return "GPU idle between the first and last recorded op of one CUDA-graph replay"
    if key == PEER_WAIT:
        return ("collective kernels' run beyond the same collective's shortest run over the "
                "steps, where no other kernel runs")
    base = "idle pieces judged by the launching thread's innermost host op"
    if key in ("cpu_dispatch", "launch_overhead"):
        base += f"; launch queue empty at {empty:.0%} of launches"
    if gaps:
        base += f"; {gaps} of the longest gaps per step"
    return base


def _startup(per_device: list[DeviceAccount], steady_keys: set[tuple[str, int]],
             labels: dict[str, str], startup: frozenset[str]) -> list[CauseSlice]:
    """Start-up / boundary causes over the flagged steps, plus time outside any step."""
    tot: dict[str, int] = defaultdict(int)
    for dev in per_device:
        for s in dev.steps:
            if (dev.artifact, s.step) in steady_keys:
                continue
            for c, v in s.idle_by_cause.items():
                if c in startup:
                    tot[c] += v
        if dev.outside_steps_ns:
            tot["outside_steps"] += dev.outside_steps_ns
    return [CauseSlice(c, labels.get(c, "outside any step (device kernel span)"), v, 0.0,
                       startup=True) for c, v in sorted(tot.items(), key=lambda kv: -kv[1])]
