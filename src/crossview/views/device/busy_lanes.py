"""GPU busy / idle per device and per stream, bucketed for drawing (the HTML timeline).

A lane is one (artifact, device) — the union of kernel intervals over all its streams, the
same union as `metrics` — or one stream on it. Each lane's kernel span (first kernel start to
last kernel end) of its device is cut into `buckets` equal slices and the busy nanoseconds of
each slice are reported, so a drawing needs at most `buckets` rectangles per lane whatever the
kernel count. The largest idle gaps of each device are listed exactly (not bucketed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crossview.intervals import merge, overlap
from crossview.store.store import Store

BUCKETS = 600  # slices per lane: about one per pixel column of the report's timeline
TOP_GAPS = 5  # largest idle gaps listed per device


@dataclass
class Lane:
    artifact: str
    device: int
    stream: int | None  # None: the device lane (union over all streams)
    t0_ns: int  # the device's kernel span (the same for all lanes of a device)
    t1_ns: int
    busy_ns: int  # union of kernel intervals on this lane
    kernels: int
    bucket_busy_ns: list[int]  # busy ns in each of the equal slices of [t0, t1)


@dataclass
class IdleGap:
    artifact: str
    device: int
    start_ns: int
    dur_ns: int


@dataclass
class BusyLanes:
    lanes: list[Lane]
    gaps: list[IdleGap]  # the TOP_GAPS longest idle gaps per device, longest first
    buckets: int


def _buckets(us: np.ndarray, ue: np.ndarray, t0: int, t1: int, n: int) -> list[int]:
    edges = np.linspace(t0, t1, n + 1).round().astype(np.int64)
    return [int(x) for x in overlap(edges[:-1], edges[1:], us, ue)]


def compute(store: Store, buckets: int = BUCKETS) -> BusyLanes:
    r = store.sql(
        "SELECT a.path, g.device, g.stream, g.start_ns, g.start_ns + g.dur_ns AS e"
        " FROM f_gpu g JOIN artifacts a USING (artifact_id) WHERE g.kind = 'kernel'"
        " ORDER BY a.path, g.device, g.stream, g.start_ns"
    ).fetchnumpy()
    lanes: list[Lane] = []
    gaps: list[IdleGap] = []
    if len(r["path"]) == 0:
        return BusyLanes(lanes, gaps, buckets)
    path = np.asarray(r["path"], dtype=object)
    dev = np.asarray(r["device"], dtype=np.int64)
    stream = np.asarray(r["stream"].filled(-1) if hasattr(r["stream"], "filled")
                        else r["stream"], dtype=np.int64)
    s = np.asarray(r["start_ns"], dtype=np.int64)
    e = np.asarray(r["e"], dtype=np.int64)
    for p in dict.fromkeys(path):
        for d in np.unique(dev[path == p]):
            sel = (path == p) & (dev == d)
            us, ue = merge(s[sel], e[sel])
            t0, t1 = int(us[0]), int(ue[-1])
            lanes.append(Lane(str(p), int(d), None, t0, t1, int((ue - us).sum()),
                              int(sel.sum()), _buckets(us, ue, t0, t1, buckets)))
            gl = us[1:] - ue[:-1]
            for i in np.argsort(-gl, kind="stable")[:TOP_GAPS]:
                if gl[i] > 0:
                    gaps.append(IdleGap(str(p), int(d), int(ue[i]), int(gl[i])))
            for st in np.unique(stream[sel]):
                ss = sel & (stream == st)
                vs, ve = merge(s[ss], e[ss])
                lanes.append(Lane(str(p), int(d), int(st), t0, t1, int((ve - vs).sum()),
                                  int(ss.sum()), _buckets(vs, ve, t0, t1, buckets)))
    return BusyLanes(lanes, gaps, buckets)
