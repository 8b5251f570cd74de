"""Every kernel of a GPU relation with its launch call's start, as numpy columns.

One scan of the kernels and one join to their launch calls, shared by the views that walk
kernels in numpy within one analysis: the idle gaps of trace_metrics and the steps' tail
and per-step facts (a 1 M-kernel nsys export paid this join once per view before).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crossview.store.store import Store

I64 = npt.NDArray[np.int64]
NULL = 1 << 62  # a NULL device / stream (sorts after every real one, as SQL's NULLS LAST)


class KernelRows:
    """Columns, one row per kernel of `gpu` (f_gpu, or a subquery over gpu_ops): artifact,
    device, stream (NULL as `NULL`), start, end, family as a code into the sorted names
    `families` (a NULL family is named "None"), and its launch call's start `ls` where
    `launched` (the launch call is in host_ops)."""

    def __init__(self, store: Store, gpu: str = "f_gpu") -> None:
        self.families = sorted(str(f) for (f,) in store.sql(
            f"SELECT DISTINCT coalesce(family, 'None') FROM {gpu} WHERE kind = 'kernel'"
        ).fetchall())
        k = store.sql(
            f"SELECT g.artifact_id, coalesce(g.device::BIGINT, {NULL}),"
            f" coalesce(g.stream, {NULL}), f.code, g.start_ns, g.start_ns + g.dur_ns,"
            " h.op_id IS NOT NULL, coalesce(h.start_ns, 0)"
            f" FROM {gpu} g JOIN (SELECT unnest($f) AS family, generate_subscripts($f, 1) - 1"
            " AS code) f ON f.family = coalesce(g.family, 'None') LEFT JOIN host_ops h"
            " ON h.op_id = g.launch_op_id AND h.artifact_id = g.artifact_id"
            " WHERE g.kind = 'kernel'", {"f": self.families},
        ).fetchnumpy()
        art, dev, stream, fam, s, e, launched, ls = (np.asarray(c) for c in k.values())
        self.art: I64 = art.astype(np.int64)
        self.dev: I64 = dev.astype(np.int64)
        self.stream: I64 = stream.astype(np.int64)
        self.fam: I64 = fam.astype(np.int64)
        self.s: I64 = s.astype(np.int64)
        self.e: I64 = e.astype(np.int64)
        self.launched = launched.astype(bool)
        self.ls: I64 = ls.astype(np.int64)

    def __len__(self) -> int:
        return len(self.s)


def key(v: int | np.integer) -> int | None:
    """A device / stream value as read: None for NULL."""
    return None if int(v) == NULL else int(v)
