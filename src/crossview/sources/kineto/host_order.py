"""The nesting order of host events, computed in numpy from the order they were read in.

`_host` is sorted (thread, start, longest first; label, correlation NULLS LAST and the
event's row in `ev` break ties). A Kineto trace writes each thread's events almost in start
order (a 334 MB trace: 63 descents in 0.7 M events), so a stable sort on one integer key
(thread, start) is a near-linear merge (numpy's timsort: 3 ms) where DuckDB's ORDER BY sorts
every row and its payload (~0.13 s on one core). Rows tied on (thread, start) are few; only
they are sorted on the remaining keys. docs/decisions/0600-kineto-host-sort-in-numpy.md
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]
_KEY_MAX = 1 << 62  # thread × span below this: the one-integer key cannot overflow


def host_order(thread: I64, start: I64, dur: I64, label: I64, corr: I64, no_corr: Flags,
               er: I64) -> I64:
    """Row order of `ORDER BY thread, start, dur DESC, label, correlation NULLS LAST, er`
    (`no_corr`: the correlation is NULL, `corr` then holds any value)."""
    n = len(start)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    corr = np.where(no_corr, 0, corr)  # NULLs tie with each other
    t0 = int(start.min())
    span = int(start.max()) - t0 + 1
    if (int(thread.max()) + 1) * span >= _KEY_MAX or int(thread.min()) < 0:
        return np.lexsort((er, corr, no_corr, label, -dur, start, thread))
    key = thread * span + (start - t0)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    same = ks[1:] == ks[:-1]
    if same.any():
        tied = np.zeros(n, dtype=bool)
        tied[1:] |= same
        tied[:-1] |= same
        at = np.flatnonzero(tied)  # runs of equal keys: sorted within, they stay in place
        sub = order[at]
        order[at] = sub[np.lexsort((er[sub], corr[sub], no_corr[sub], label[sub], -dur[sub],
                                    ks[at]))]
    return order
