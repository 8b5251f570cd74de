"""The time account does not depend on how its idle pieces are cut into passes
(views/device/idle_pieces.CHUNK_GAPS gaps per pass, account._PIECES_PER_PASS pieces per sum):
on real captures, tiny passes (a few gaps, spans of host ops reaching across many passes, a
sync's gap rule at every pass boundary) give the same account, field for field, as one pass
over the whole device."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.views.device import account, idle_pieces

CAPTURES = [p for p in (SHARED_DATA / "kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz",
                        SHARED_DATA / "nsys/nvfuser_h200_nsys2025.1.sqlite") if p.exists()]
pytestmark = pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_account_same_for_any_pass_size(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = analyze([path]).views
    assert v is not None
    monkeypatch.setattr(idle_pieces, "CHUNK_GAPS", 1 << 30)
    monkeypatch.setattr(account, "_PIECES_PER_PASS", 1 << 30)
    whole = account.compute(v.store, v.steps)
    assert whole is not None and any(s.idle_by_cause for d in whole.per_device
                                     for s in d.steps)
    monkeypatch.setattr(idle_pieces, "CHUNK_GAPS", 61)
    monkeypatch.setattr(account, "_PIECES_PER_PASS", 37)
    small = account.compute(v.store, v.steps)
    assert small is not None
    assert small.to_dict() == whole.to_dict()


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_launches_found_among_host_ops_equal_the_sql_join(path: Path) -> None:
    """launch_queue.from_ops (a search among the host ops read once) gives the rows of
    launch_queue.kernel_launches (the SQL join), as a set, on every device."""
    import numpy as np

    from crossview.views.device import host_state, launch_queue

    v = analyze([path]).views
    assert v is not None
    devs = v.store.sql("SELECT DISTINCT artifact_id, device FROM f_gpu WHERE kind = 'kernel'"
                       " ORDER BY ALL").fetchall()
    for a, d in devs:
        host = host_state.ops(v.store, a, d)
        assert host.complete
        k = v.store.sql("SELECT start_ns, start_ns + dur_ns AS e, coalesce(launch_op_id, -1)"
                        " AS lop FROM f_gpu WHERE kind = 'kernel' AND artifact_id = $a"
                        " AND device = $d", {"a": a, "d": d}).fetchnumpy()
        got = launch_queue.from_ops(k["start_ns"], k["e"], k["lop"], host.op, host.s, host.e)
        want = launch_queue.kernel_launches(v.store, a, d)
        assert len(want.ks) > 0

        def rows(x: launch_queue.KernelLaunches) -> np.ndarray:
            m = np.c_[x.ks, x.ke, x.op, x.hs, x.he]
            return m[np.lexsort(m.T[::-1])]

        assert np.array_equal(rows(got), rows(want))


def test_account_same_when_launches_come_from_the_sql_join(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A host filter leaves launch calls out of the scope: the account then joins them in
    SQL (launch_queue.kernel_launches); on a whole capture both ways give the same account."""
    import dataclasses

    from crossview.views.device import host_state

    v = analyze([CAPTURES[-1]]).views
    assert v is not None
    fast = account.compute(v.store, v.steps)
    ops = host_state.ops
    monkeypatch.setattr(host_state, "ops", lambda *a: dataclasses.replace(ops(*a),
                                                                          complete=False))
    joined = account.compute(v.store, v.steps)
    assert fast is not None and joined is not None
    assert joined.to_dict() == fast.to_dict()
