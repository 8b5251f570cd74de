"""The launch queue (HTA's "queue length"): at each launch call, the kernels of the device
launched earlier and not yet finished. Empty at most launches = the host never got ahead."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crossview import intervals
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]


@dataclass
class KernelLaunches:
    """One row per kernel of a device whose launch call is recorded: the kernel's start and
    end, the call's op id, start and end. Read once per device; the launch queue and the idle
    pieces' gap rules (views/device/idle_pieces.py) both use it."""

    ks: I64
    ke: I64
    op: I64
    hs: I64
    he: I64


def kernel_launches(store: Store, a: int, d: int) -> KernelLaunches:
    r = store.sql(
        "SELECT g.start_ns, g.start_ns + g.dur_ns AS e, h.op_id, h.start_ns AS hs,"
        " h.start_ns + h.dur_ns AS he FROM f_gpu g JOIN host_ops h"
        " ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id"
        " WHERE g.kind = 'kernel' AND g.artifact_id = $a AND g.device = $d",
        {"a": a, "d": d},
    ).fetchnumpy()
    return KernelLaunches(*(np.asarray(r[c], dtype=np.int64)
                            for c in ("start_ns", "e", "op_id", "hs", "he")))


def from_ops(ks: I64, ke: I64, launch_op: I64, op: I64, hs: I64, he: I64) -> KernelLaunches:
    """The same rows as `kernel_launches` from rows already read: the device's kernels (start,
    end, launch op id, -1 none) and host ops sorted by op id (start, end) holding every
    launch call of the device (the join done by a search, not a second read)."""
    n = len(op)
    if n == 0:
        e0 = np.zeros(0, dtype=np.int64)
        return KernelLaunches(e0, e0, e0, e0, e0)
    i = intervals.find(op, launch_op)
    hit = np.nonzero(i >= 0)[0]
    i = i[hit]
    return KernelLaunches(ks[hit], ke[hit], launch_op[hit], hs[i], he[i])


def depth_at_launches(k: KernelLaunches) -> tuple[I64, I64]:
    """Launch-call start times on the device and, per call, kernels launched earlier and
    still unfinished (the launch queue HTA calls queue length)."""
    # stable (merge) sorts: the rows come in long sorted runs, several times faster than
    # the default quicksort here, and the sorted values are the same
    kl = np.sort(k.hs, kind="stable")
    ke = np.sort(k.ke, kind="stable")
    one = _call_starts(k.op, k.hs)  # one start per launch call
    if one is None:  # one kernel per call (nsys): the calls' starts are the kernels'
        ls = kl
        # kernels launched before each call: the first index of its start among them
        i = np.arange(len(kl), dtype=np.int64)
        before = np.maximum.accumulate(np.where(np.r_[True, kl[1:] != kl[:-1]], i, 0)) \
            if len(kl) else i
    else:
        ls = np.sort(one, kind="stable")
        before = np.searchsorted(kl, ls, side="left")
    depth = before - np.searchsorted(ke, ls, side="right")
    return ls, np.maximum(depth, 0)


def _call_starts(op: I64, hs: I64) -> I64 | None:
    """The start of each distinct launch call (any order; a call's rows share its start), or
    None when no call launched two of the rows. Op ids in a dense range (a reader's block)
    are marked in a table, else found by numpy's unique."""
    if len(op) == 0:
        return None
    lo, hi = int(op.min()), int(op.max())
    if hi - lo > 4 * len(op) + (1 << 16):
        _, first = np.unique(op, return_index=True)
        return None if len(first) == len(op) else hs[first]
    at = op - lo
    seen = np.zeros(hi - lo + 1, dtype=bool)
    seen[at] = True
    if int(np.count_nonzero(seen)) == len(op):
        return None
    start = np.zeros(hi - lo + 1, dtype=np.int64)
    start[at] = hs
    return start[seen]


def first_launch_end(k: KernelLaunches) -> tuple[I64, I64]:
    """Per distinct kernel start time (sorted), the earliest end of a launch call of a kernel
    starting then."""
    if len(k.ks) == 0:
        return k.ks, k.he
    o = np.lexsort((k.he, k.ks))
    s, e = k.ks[o], k.he[o]
    head = np.r_[True, s[1:] != s[:-1]]
    return s[head], e[head]
