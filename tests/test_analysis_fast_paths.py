"""The analysis's read-once paths give what the SQL joins they replaced give, on real captures:
the launching threads' ops numbered from their frame nodes (host_state._by_node) against the
joins (host_state._joined), the GPU view summed in numpy from the kernel columns against its
SQL join, the kernel union and GPU activity from the kernel columns against their sorted
re-reads (docs/decisions/0620, 0622)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.views.device import gpu_activity, host_state, timeline
from crossview.views.device.kernel_rows import KernelRows
from crossview.views.host import calltree

CAPTURES = [p for p in (SHARED_DATA / "kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz",
                        SHARED_DATA / "kineto/hta_a100_ddp_resnet_nccl.json.gz",
                        SHARED_DATA / "nsys/nvfuser_h200_nsys2025.1.sqlite") if p.exists()]
pytestmark = pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")
FIELDS = ("op", "s", "e", "depth", "th", "eff", "frame", "call")


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_ops_by_frame_node_equal_the_joins(path: Path) -> None:
    v = analyze([path]).views
    assert v is not None
    devs = v.store.sql("SELECT DISTINCT artifact_id, device FROM f_gpu WHERE kind = 'kernel'"
                       " ORDER BY ALL").fetchall()
    assert devs
    for a, d in devs:
        lop = np.asarray(v.store.sql(
            "SELECT coalesce(launch_op_id, -1) AS l FROM f_gpu WHERE kind = 'kernel'"
            " AND artifact_id = $a AND device = $d", {"a": a, "d": d}).fetchnumpy()["l"],
            dtype=np.int64)
        rows = host_state._by_node(v.store, a, lop)
        assert rows is not None  # every op has its frame node: the fast path is taken
        fast = host_state._ops(*rows, True)
        joined = host_state._ops(*host_state._joined(v.store, a, d), True)
        assert len(fast.op) > 0 and fast.names == joined.names
        for f in FIELDS:
            assert np.array_equal(getattr(fast, f), getattr(joined, f)), f


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_gpu_view_rows_equal_the_sql_join(path: Path) -> None:
    v = analyze([path]).views
    assert v is not None
    got = calltree._rows_numpy(v.store, KernelRows(v.store, names=True))
    want = calltree._rows_sql(v.store)
    assert got is not None and want

    def key(r: tuple) -> tuple:
        return (-1 if r[0] is None else int(r[0]), str(r[1]))

    assert sorted(((*r[:3], int(r[3]), int(r[4])) for r in got), key=key) == \
        sorted(((*r[:3], int(r[3]), int(r[4])) for r in want), key=key)
    # the kernel time the view holds is every kernel's time (an independent sum)
    total = v.store.sql("SELECT sum(dur_ns) FROM f_gpu WHERE kind = 'kernel'").fetchall()[0][0]
    assert sum(r[3] for r in got) == int(total)


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_union_and_activity_from_kernel_columns_equal_the_reads(path: Path) -> None:
    v = analyze([path]).views
    assert v is not None
    k = KernelRows(v.store)
    got = timeline.union_by_device(k.art, k.dev, k.s, k.e)
    want = timeline.kernel_union(v.store)
    assert [(u.artifact_id, u.device, u.first, u.last) for u in got] == \
        [(u.artifact_id, u.device, u.first, u.last) for u in want]
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g.busy_s, w.busy_s) and np.array_equal(g.busy_e, w.busy_e)
    act_got = gpu_activity.activity(v.store, got)
    act_want = gpu_activity.activity(v.store)
    assert [(x.artifact_id, x.device) for x in act_got] == \
        [(x.artifact_id, x.device) for x in act_want]
    for g, w in zip(act_got, act_want, strict=True):
        assert np.array_equal(g.busy_s, w.busy_s) and np.array_equal(g.busy_e, w.busy_e)
