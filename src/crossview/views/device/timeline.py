"""Timeline facts that tie host intervals to GPU behaviour (numpy; the interval arithmetic
itself is crossview/intervals.py).

Conventions §1: judge a host-side wait by what the GPU does meanwhile. These functions measure
how much GPU idle time opens inside given host intervals, and how much communication is
exposed (not overlapped by compute), per device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crossview.intervals import I64, DeviceIntervals, merge, overlap
from crossview.store.host_calls import HostSelection, where
from crossview.store.store import Store


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
    devices: list[DeviceIntervals], hs: I64, he: I64, artifact: I64
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
                   ) -> tuple[I64, I64, I64]:
    """Host op intervals in scope of a host-call selection (store/host_calls.py)."""
    cond, params = where(sel)
    r = store.sql(
        f"SELECT start_ns, start_ns + dur_ns AS e, artifact_id FROM f_host WHERE {cond}",
        params,
    ).fetchnumpy()
    return (np.asarray(r["start_ns"], dtype=np.int64), np.asarray(r["e"], dtype=np.int64),
            np.asarray(r["artifact_id"], dtype=np.int64))
