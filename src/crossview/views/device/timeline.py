"""Timeline facts that tie host intervals to GPU behaviour (interval arithmetic, numpy).

Conventions §1: judge a host-side wait by what the GPU does meanwhile. These functions measure
how much GPU idle time opens inside given host intervals, and how much communication is
exposed (not overlapped by compute), per device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from crossview.store.host_calls import HostSelection, where
from crossview.store.store import Store

I64 = npt.NDArray[np.int64]
G = TypeVar("G", bound=np.generic)


def uniq(a: npt.NDArray[G]) -> npt.NDArray[G]:
    """Sorted distinct values of an integer array (a sort and a mask: numpy's hash-based
    `unique` is several times slower on millions of int64 here)."""
    if len(a) == 0:
        return a
    if a.dtype.kind in "iu":  # few values in a small range (threads, depths, nodes): counts
        lo, hi = int(a.min()), int(a.max())
        if hi - lo <= min(len(a), 1 << 22) + (1 << 16):
            n = np.bincount((a - lo).astype(np.intp), minlength=hi - lo + 1)
            return (np.nonzero(n)[0] + lo).astype(a.dtype)
    a = np.sort(a, kind="stable")
    return a[np.r_[True, a[1:] != a[:-1]]]


def find(keys: I64, x: I64) -> I64:
    """The index of each x among the sorted distinct `keys`, -1 where x is not a key: an
    offset where the keys are one run of consecutive integers (the op ids a reader reserved
    as a block: 700 k Kineto ops, 33 ms of searching → 2 ms), else a binary search."""
    n = len(keys)
    if n == 0:
        return np.full(len(x), -1, dtype=np.int64)
    lo = int(keys[0])
    if int(keys[-1]) - lo == n - 1 and bool((keys[1:] > keys[:-1]).all()):
        i = x.astype(np.int64) - lo
        return np.where((i >= 0) & (i < n), i, -1)
    i = np.minimum(np.searchsorted(keys, x), n - 1)
    return np.where(keys[i] == x, i, -1)


def is_sorted(a: npt.NDArray[Any]) -> bool:
    """Non-decreasing: one pass, no sort (kernels, steps and ops by id mostly come in start
    order, so the caller skips a sort and the gathers of every column)."""
    return bool((a[1:] >= a[:-1]).all())


def in_start_order(s: I64, *cols: I64) -> tuple[I64, ...]:
    """s and the columns in the stable order of s; as given where s is sorted already."""
    if is_sorted(s):
        return (s, *cols)
    o = np.argsort(s, kind="stable")
    return (s[o], *(c[o] for c in cols))


def merge(s: I64, e: I64) -> tuple[I64, I64]:
    """Union of intervals as sorted, disjoint [start, end) arrays."""
    if len(s) == 0:
        return s, e
    s, e = in_start_order(s, e)
    run_end = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > run_end[:-1]
    idx = np.nonzero(new)[0]
    ends = np.append(run_end[idx[1:] - 1], run_end[-1])
    return s[idx], ends


def overlap(qs: I64, qe: I64, us: I64, ue: I64) -> I64:
    """For each query interval, the length it shares with a disjoint sorted union (us, ue)."""
    if len(us) == 0 or len(qs) == 0:
        return np.zeros(len(qs), dtype=np.int64)
    if len(us) == 1:  # one interval (a step window): union length before t is a clip
        a, b = int(us[0]), int(ue[0])
        return (np.clip(qe, a, b) - np.clip(qs, a, b)).astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(ue - us)])

    def covered_before(t: I64) -> I64:
        # union length in (-inf, t)
        i = np.searchsorted(us, t, side="right")  # intervals starting before t
        j = np.maximum(i - 1, 0)
        part = np.clip(np.minimum(t, ue[j]) - us[j], 0, None)
        return np.where(i > 0, cum[j] + part, 0)

    return covered_before(qe) - covered_before(qs)


@dataclass
class DeviceIntervals:
    artifact_id: int
    device: int
    busy_s: I64
    busy_e: I64
    first: int
    last: int

    @property
    def idle_s(self) -> I64:
        return self.busy_e[:-1]

    @property
    def idle_e(self) -> I64:
        return self.busy_s[1:]


def kernel_union(store: Store) -> list[DeviceIntervals]:
    rows = store.sql(
        "SELECT artifact_id, device, start_ns, start_ns + dur_ns FROM f_gpu"
        " WHERE kind = 'kernel' ORDER BY artifact_id, device, start_ns"
    ).fetchnumpy()
    out: list[DeviceIntervals] = []
    if len(rows["artifact_id"]) == 0:
        return out
    a = np.asarray(rows["artifact_id"], dtype=np.int64)
    d = np.asarray(rows["device"], dtype=np.int64)
    s = np.asarray(rows["start_ns"], dtype=np.int64)
    e = np.asarray(rows["start_ns + dur_ns"] if "start_ns + dur_ns" in rows else
                   list(rows.values())[3], dtype=np.int64)
    key = a * 1_000_003 + d
    bounds = np.nonzero(np.diff(key))[0] + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(key)], strict=True):
        us, ue = merge(s[lo:hi], e[lo:hi])
        out.append(DeviceIntervals(int(a[lo]), int(d[lo]), us, ue, int(us[0]), int(ue[-1])))
    return out


def union_by_device(art: I64, dev: I64, s: I64, e: I64) -> list[DeviceIntervals]:
    """`kernel_union` from kernel columns already read (views/device/kernel_rows.py): the
    same unions, per (artifact, device) in that order, without a sorted re-read."""
    out: list[DeviceIntervals] = []
    if len(s) == 0:
        return out
    if (art[0] == art).all() and (dev[0] == dev).all():  # one device: no grouping sort
        groups = [np.arange(len(s))]
    else:
        o = np.lexsort((dev, art))
        a, d = art[o], dev[o]
        cut = np.nonzero((a[1:] != a[:-1]) | (d[1:] != d[:-1]))[0] + 1
        groups = np.split(o, cut)
    for g in groups:
        us, ue = merge(s[g], e[g])
        out.append(DeviceIntervals(int(art[g[0]]), int(dev[g[0]]), us, ue, int(us[0]),
                                   int(ue[-1])))
    return out


@dataclass
class HostWindowEffect:
    """GPU behaviour inside a set of host intervals."""

    host_ns: int  # total length of the host intervals (their union)
    gpu_idle_inside_ns: int  # GPU idle time that falls inside them
    gaps_opened_inside_ns: int  # full length of idle gaps that *open* while inside them
    count: int
    inside: int = 0  # intervals with some of their time inside a device's kernel span

    @property
    def gpu_busy_inside_pct(self) -> float:
        return 100.0 * (1 - self.gpu_idle_inside_ns / self.host_ns) if self.host_ns else 0.0


def host_window_effect(
    devices: list[DeviceIntervals], hs: I64, he: I64, artifact: npt.NDArray[np.int64]
) -> HostWindowEffect:
    """How the GPU behaves while the host is inside the intervals [hs, he)."""
    host_ns = idle_in = opened = 0
    within = np.zeros(len(hs), dtype=bool)
    for dev in devices:
        sel = artifact == dev.artifact_id
        if not sel.any():
            continue
        within[sel] |= np.minimum(he[sel], dev.last) > np.maximum(hs[sel], dev.first)
        ms, me = merge(hs[sel], he[sel])
        # clip to the device's kernel span: outside it "idle" is just before/after capture
        ms, me = np.clip(ms, dev.first, dev.last), np.clip(me, dev.first, dev.last)
        keep = me > ms
        ms, me = ms[keep], me[keep]
        if len(ms) == 0:
            continue
        host_ns += int((me - ms).sum())
        gs, ge = dev.idle_s, dev.idle_e
        # both sides are sorted disjoint unions: their shared length is symmetric, so the
        # fewer intervals are the queries (1 M nsys gaps against a few host calls)
        idle_in += int((overlap(ms, me, gs, ge) if len(ms) < len(gs)
                        else overlap(gs, ge, ms, me)).sum())
        # a gap opens inside when its start (GPU drained) lies within a host interval: the
        # gaps starting in [ms, me) are one run of the sorted gap starts per host interval
        run = np.concatenate([[0], np.cumsum(ge - gs)])
        opened += int((run[np.searchsorted(gs, me)] - run[np.searchsorted(gs, ms)]).sum())
    return HostWindowEffect(host_ns, idle_in, opened, int(len(hs)), int(within.sum()))


@dataclass
class CommExposure:
    artifact_id: int
    device: int
    comm_ns: int  # union of comm kernel time
    exposed_ns: int  # comm time with no non-comm kernel running
    busy_ns: int  # union of all kernel time
    comm_kernels: int
    top_collectives: list[tuple[str, int, int]]  # (kernel name, count, time_ns)


def comm_exposure(store: Store) -> list[CommExposure]:
    out: list[CommExposure] = []
    devs = store.sql(
        "SELECT DISTINCT artifact_id, device FROM f_gpu WHERE kind = 'kernel'"
        " AND family = 'comm' ORDER BY ALL"
    ).fetchall()
    for a, d in devs:
        k = store.sql(
            "SELECT start_ns, start_ns + dur_ns AS e, family = 'comm' AS c FROM f_gpu"
            " WHERE kind = 'kernel' AND artifact_id = $a AND device = $d",
            {"a": a, "d": d},
        ).fetchnumpy()
        s = np.asarray(k["start_ns"], dtype=np.int64)
        e = np.asarray(k["e"], dtype=np.int64)
        c = np.asarray(k["c"], dtype=bool)
        cs, ce = merge(s[c], e[c])
        ns, ne = merge(s[~c], e[~c])
        bs, be = merge(s, e)
        comm = int((ce - cs).sum())
        exposed = comm - int(overlap(cs, ce, ns, ne).sum())
        top = store.sql(
            "SELECT name, count(*), sum(dur_ns) FROM f_gpu WHERE kind = 'kernel' AND"
            " family = 'comm' AND artifact_id = $a AND device = $d GROUP BY name"
            " ORDER BY 3 DESC LIMIT 3", {"a": a, "d": d},
        ).fetchall()
        out.append(CommExposure(int(a), int(d), comm, exposed, int((be - bs).sum()),
                                int(c.sum()), [(n, int(m), int(t)) for n, m, t in top]))
    return out


def host_intervals(store: Store, sel: HostSelection
                   ) -> tuple[I64, I64, npt.NDArray[np.int64]]:
    """Host op intervals in scope of a host-call selection (store/host_calls.py)."""
    cond, params = where(sel)
    r = store.sql(
        f"SELECT start_ns, start_ns + dur_ns AS e, artifact_id FROM f_host WHERE {cond}",
        params,
    ).fetchnumpy()
    return (np.asarray(r["start_ns"], dtype=np.int64), np.asarray(r["e"], dtype=np.int64),
            np.asarray(r["artifact_id"], dtype=np.int64))
