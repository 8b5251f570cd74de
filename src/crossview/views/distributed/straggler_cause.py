"""What a straggler rank was doing while the others waited for it.

The window of one late collective is [arrival − skew, arrival) on the straggler's own clock:
the time between the first rank arriving and this one. A plain function of one artifact's
store (like views/distributed/ranks.py), so it can run where that rank's store lives.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from crossview.intervals import merge, overlap
from crossview.store.store import Store
from crossview.units import duration


@dataclass
class Cause:
    kind: str  # gpu-compute | host | uncaptured
    text: str
    window_ns: int  # total length of the (merged) wait windows
    gpu_busy_share: float  # of the windows, covered by non-communication kernels
    top_kernels: list[tuple[str, int]]  # (kernel, ns inside the windows)
    top_host: list[tuple[str, int]]  # (host op, ~self ns inside the windows)


def _clipped(store: Store, sql: str, params: Mapping[str, object], ws: np.ndarray,
             we: np.ndarray, weight: bool) -> list[tuple[str, int]]:
    r = store.sql(sql, params).fetchnumpy()
    if len(r["s"]) == 0:
        return []
    s = np.asarray(r["s"], dtype=np.int64)
    e = np.asarray(r["e"], dtype=np.int64)
    ov = overlap(s, e, ws, we).astype(np.float64)
    if weight:  # host ops: the share of each op's time that is its own (not its children's)
        dur = np.maximum(e - s, 1)
        ov *= np.clip(np.asarray(r["self"], dtype=np.float64) / dur, 0.0, 1.0)
    tot: dict[str, float] = defaultdict(float)
    for n, t in zip(r["name"], ov, strict=True):
        if t > 0:
            tot[str(n)] += float(t)
    return [(n, int(t)) for n, t in sorted(tot.items(), key=lambda x: -x[1])[:3]]


def explain(store: Store, artifact_id: int, windows: list[tuple[int, int]], busy_share: float,
            scoped: bool = True) -> Cause:
    """What the rank did in the windows the others waited for it: its filter's ops (f_gpu /
    f_host), else all of them (`scoped=False`: a worker's own store)."""
    gpu_table, host_table = ("f_gpu", "f_host") if scoped else ("gpu_ops", "host_ops")
    ws, we = merge(np.array([w[0] for w in windows], dtype=np.int64),
                   np.array([w[1] for w in windows], dtype=np.int64))
    total = int((we - ws).sum())
    lo, hi = (int(ws[0]), int(we[-1])) if len(ws) else (0, 0)
    p = {"a": artifact_id, "lo": lo, "hi": hi}
    k = store.sql(
        f"SELECT start_ns, start_ns + dur_ns AS e FROM {gpu_table} WHERE artifact_id = $a AND"
        " kind = 'kernel' AND family <> 'comm' AND start_ns < $hi AND start_ns + dur_ns > $lo",
        p).fetchnumpy()
    ks, ke = merge(np.asarray(k["start_ns"], dtype=np.int64), np.asarray(k["e"], dtype=np.int64))
    busy = int(overlap(ws, we, ks, ke).sum()) if total else 0
    share = busy / total if total else 0.0
    kernels = _clipped(store, (
        f"SELECT name, start_ns AS s, start_ns + dur_ns AS e FROM {gpu_table} WHERE"
        " artifact_id = $a AND kind = 'kernel' AND family <> 'comm' AND start_ns < $hi AND"
        " start_ns + dur_ns > $lo"), p, ws, we, weight=False)
    host = _clipped(store, (
        f"SELECT name, start_ns AS s, start_ns + dur_ns AS e, self_ns AS self FROM {host_table}"
        " WHERE artifact_id = $a AND start_ns < $hi AND start_ns + dur_ns > $lo"),
        p, ws, we, weight=True)
    span = (f"the {duration(total)} the others waited for it (merged over its late "
            "collectives)")
    if total and share >= busy_share:
        names = ", ".join(f"{n[:60]} ({duration(t)})" for n, t in kernels)
        return Cause("gpu-compute", f"its GPU was still computing: non-communication kernels "
                     f"filled {100 * share:.0f}% of {span} (top: {names}) — more GPU work on "
                     "this rank than on the others", total, share, kernels, host)
    if host:
        names = ", ".join(f"{n[:60]} (~{duration(t)})" for n, t in host)
        return Cause("host", f"its GPU was idle {100 * (1 - share):.0f}% of {span} while its "
                     f"host ran {names}", total, share, kernels, host)
    return Cause("uncaptured", f"neither its GPU nor its host recorded work in {span} "
                 "(GPU idle, no host op: time outside the profiler's view — I/O, another "
                 "process, a blocked thread)", total, share, kernels, host)
