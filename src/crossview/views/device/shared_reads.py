"""Reads that two time accounts of one analysis share (issue 38, decision 0913).

A multi-rank job computes two accounts for each rank's device. One is the account over the
steady steps (`Views.account`). The other is the account over the late-ranks segments
(`distributed/late_cause.rank_segments`). Both paint the device's idle gaps from the same
launching-thread host ops (`host_state.ops`), and both cut them at the same collective loops
(`collective_loops.windows`). So they are read once and kept for the analysis. On the 8-rank
Megatron job, the two accounts read them 16 and 16 times.

Only a job keeps them (`Views.shared_reads`). A single capture computes one account, and its
host ops are freed once painted (the box in `account._device`), which keeps a large capture's
peak memory down.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from crossview.store.store import Store
from crossview.views.device import host_state
from crossview.views.distributed import collective_loops

I64 = npt.NDArray[np.int64]


@dataclass
class SharedReads:
    # (artifact, device, the launch ops' digest) → the launching threads' host ops
    host_ops: dict[tuple[int, int, bytes], host_state.HostOps] = field(default_factory=dict)
    loops: dict[int, tuple[I64, I64]] = field(default_factory=dict)  # artifact → loop spans

    def ops(self, store: Store, a: int, d: int, launch_op: I64) -> host_state.HostOps:
        """`host_state.ops(store, a, d, launch_op)`, read once per device and launch ops.
        The ops are keyed by the launch ops they were read for; both accounts pass the same
        ones, namely the device's kernels in scope."""
        lop = np.ascontiguousarray(launch_op, dtype=np.int64)
        key = (a, d, hashlib.blake2b(lop.data, digest_size=16).digest())
        got = self.host_ops.get(key)
        if got is None:
            got = self.host_ops[key] = host_state.ops(store, a, d, lop)
        return got

    def loop_windows(self, store: Store, a: int) -> tuple[I64, I64]:
        """`collective_loops.windows(store, a)`, read once per artifact."""
        got = self.loops.get(a)
        if got is None:
            got = self.loops[a] = collective_loops.windows(store, a)
        return got
