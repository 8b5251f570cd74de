"""GPU activity as nsys's expert rules see it: every GPU op (kernel, memcpy, memset) per device
(its gaps and busy chunks: views/device/activity_gaps.py).
The metrics block's busy % counts kernels only (HTA's definition); these count copies too, as
the nsys rules do, so a copy-bound stretch is not called idle here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crossview.intervals import I64, DeviceIntervals, merge
from crossview.store.store import Store

_KINDS = "('kernel', 'memcpy', 'memset')"


@dataclass
class DeviceActivity:
    artifact_id: int
    device: int
    busy_s: I64  # union of GPU op intervals, sorted and disjoint
    busy_e: I64

    @property
    def first(self) -> int:
        return int(self.busy_s[0])

    @property
    def last(self) -> int:
        return int(self.busy_e[-1])


def activity(store: Store, kernel_union: list[DeviceIntervals] | None = None
             ) -> list[DeviceActivity]:
    """kernel_union: f_gpu's kernel union per device (timeline.kernel_union) when the
    caller has it: then only the copies are read, and merged with it (the union of a union
    and more intervals is the union of all of them)."""
    if kernel_union is not None:
        return _with_copies(store, kernel_union)
    r = store.sql(
        "SELECT artifact_id, device, start_ns, start_ns + dur_ns AS e FROM f_gpu"
        f" WHERE kind IN {_KINDS} AND device IS NOT NULL ORDER BY artifact_id, device"
    ).fetchnumpy()
    a = np.asarray(r["artifact_id"], dtype=np.int64)
    if len(a) == 0:
        return []
    d = np.asarray(r["device"], dtype=np.int64)
    s = np.asarray(r["start_ns"], dtype=np.int64)
    e = np.asarray(r["e"], dtype=np.int64)
    key = a * 1_000_003 + d
    cut = np.nonzero(np.diff(key))[0] + 1
    out = []
    for lo, hi in zip(np.r_[0, cut], np.r_[cut, len(a)], strict=True):
        us, ue = merge(s[lo:hi], e[lo:hi])
        out.append(DeviceActivity(int(a[lo]), int(d[lo]), us, ue))
    return out


def _with_copies(store: Store, kernel_union: list[DeviceIntervals]) -> list[DeviceActivity]:
    r = store.sql(
        "SELECT artifact_id, device, start_ns, start_ns + dur_ns AS e FROM f_gpu"
        " WHERE kind IN ('memcpy', 'memset') AND device IS NOT NULL"
    ).fetchnumpy()
    a, d, s, e = (np.asarray(r[c], dtype=np.int64) for c in ("artifact_id", "device",
                                                             "start_ns", "e"))
    k = {(u.artifact_id, u.device): u for u in kernel_union}
    out = []
    for key in sorted(set(k) | set(zip(a.tolist(), d.tolist(), strict=True))):
        sel = (a == key[0]) & (d == key[1])
        u = k.get(key)
        us, ue = (u.busy_s, u.busy_e) if u is not None else (s[:0], e[:0])
        if sel.any():
            us, ue = merge(np.concatenate([us, s[sel]]), np.concatenate([ue, e[sel]]))
        out.append(DeviceActivity(key[0], key[1], us, ue))
    return out
