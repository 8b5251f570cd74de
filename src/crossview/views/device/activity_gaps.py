"""The GPU activity's (views/device/gpu_activity.py) nsys-rule reads: `gaps`, stretches
with no GPU op on a device longer than a threshold, each with the host op that covers most of
it (the cross-view: what the host was doing meanwhile); `chunks`, the device's GPU-op span cut
into equal chunks, each with its busy share."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crossview.intervals import overlap
from crossview.store.store import Store
from crossview.views import captures
from crossview.views.views import Views


@dataclass
class Gap:
    artifact: str
    device: int
    start_ns: int
    dur_ns: int
    host: str | None  # the host op covering most of the gap (innermost on ties), if any
    host_kind: str | None
    host_ns: int = 0  # how much of the gap that op covers


@dataclass
class Chunks:
    artifact: str
    device: int
    first_ns: int
    chunk_ns: int
    busy: list[float]  # busy share of each chunk, 0..1


@dataclass
class Gaps:
    count: int  # gaps over the threshold, all devices
    total_ns: int
    longest: list[Gap]  # the longest ones, longest first, each with its covering host op


def gaps(v: Views, min_ns: int, named: int = 20) -> Gaps:
    """Gaps over ``min_ns`` in the GPU activity (Views.device_activity); the ``named``
    longest get their host op (one query for all)."""
    store, acts = v.store, v.device_activity
    paths = captures.paths(store)
    found: list[tuple[int, int, int, int]] = []  # (dur, start, artifact, device)
    count = total = 0
    for act in acts:
        gs, ge = act.busy_e[:-1], act.busy_s[1:]
        long = np.nonzero(ge - gs > min_ns)[0]
        count += len(long)
        total += int((ge[long] - gs[long]).sum())
        top = long[np.argsort(gs[long] - ge[long], kind="stable")[:named]]
        found.extend((int(ge[i] - gs[i]), int(gs[i]), act.artifact_id, act.device)
                     for i in top.tolist())
    found.sort(key=lambda g: (-g[0], g[1]))
    host = _covering_ops(store, found[:named])
    out = [Gap(paths[aid], dev, s, dur, *host.get(i, (None, None, 0)))
           for i, (dur, s, aid, dev) in enumerate(found[:named])]
    return Gaps(count, total, out)


def _covering_ops(store: Store, gaps: list[tuple[int, int, int, int]]
                  ) -> dict[int, tuple[str, str, int]]:
    """Per gap (dur, start, artifact, device), by its index: the name and kind of the host op
    of its artifact sharing the most time with it (the deepest among equals, then the first
    op id), gaps with none left out. One scan of the host ops for every gap (1 M nsys ops:
    20 queries 60 ms → 7 ms)."""
    if not gaps:
        return {}
    rows = store.sql(
        "WITH g AS (SELECT unnest($i) AS i, unnest($a) AS a, unnest($s) AS s,"
        " unnest($e) AS e) SELECT i, name, kind, c FROM (SELECT g.i, h.name, h.kind,"
        " least(h.start_ns + h.dur_ns, g.e) - greatest(h.start_ns, g.s) AS c,"
        " row_number() OVER (PARTITION BY g.i ORDER BY least(h.start_ns + h.dur_ns, g.e)"
        " - greatest(h.start_ns, g.s) DESC, h.depth DESC, h.op_id) AS r FROM g JOIN f_host h"
        " ON h.artifact_id = g.a AND h.start_ns < g.e AND h.start_ns + h.dur_ns > g.s)"
        " WHERE r = 1",
        {"i": list(range(len(gaps))), "a": [a for _, _, a, _ in gaps],
         "s": [s for _, s, _, _ in gaps], "e": [s + d for d, s, _, _ in gaps]}).fetchall()
    return {int(i): (n, k, int(c)) for i, n, k, c in rows}


def chunks(v: Views, n: int) -> list[Chunks]:
    """Each device's GPU-op span (Views.device_activity) cut into `n` equal chunks."""
    store, acts = v.store, v.device_activity
    paths = captures.paths(store)
    out: list[Chunks] = []
    for act in acts:
        span = act.last - act.first
        if span <= 0 or n <= 0:
            continue
        edges = act.first + (np.arange(n + 1, dtype=np.int64) * span) // n
        busy = overlap(edges[:-1], edges[1:], act.busy_s, act.busy_e)
        width = np.maximum(np.diff(edges), 1)
        out.append(Chunks(paths[act.artifact_id], act.device, act.first, span // n,
                          (busy / width).round(6).tolist()))
    return out
