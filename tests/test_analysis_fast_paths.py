"""The analysis's read-once paths give what the SQL joins they replaced give, on real captures:
the launching threads' ops numbered from their frame nodes (host_state._by_node) against the
joins (host_state._joined), the GPU view summed in numpy from the kernel columns against its
SQL join, the kernel union and GPU activity from the kernel columns against their sorted
re-reads (docs/decisions/0620, 0622); op ids found by offset and the replayed artifact found by
probes against the searches and the join they replaced (0690)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA
from crossview import intervals
from crossview.analysis import analyze
from crossview.sources.registry import read_all
from crossview.store.kernel_rows import KernelRows
from crossview.store.store import Store
from crossview.views import replay_rows
from crossview.views.device import gpu_activity, host_state, idle_pieces, timeline
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
    got = intervals.union_by_device(k.art, k.dev, k.s, k.e)
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


def _search(keys: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The plain lookup `intervals.find` replaced: a binary search, -1 where x is no key."""
    if len(keys) == 0:
        return np.full(len(x), -1, dtype=np.int64)
    i = np.minimum(np.searchsorted(keys, x), len(keys) - 1)
    return np.where(keys[i] == x, i, -1)


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_find_by_offset_equals_the_search(path: Path) -> None:
    """Op ids of a real capture: one consecutive run per artifact (the offset path), and
    with every third op dropped (the search path); looked up with the kernels' launch op ids,
    the ops' parents, -1 and ids past either end."""
    v = analyze([path]).views
    assert v is not None
    ops = np.asarray(v.store.sql("SELECT op_id, coalesce(parent, -1) AS p FROM host_ops"
                                 " WHERE artifact_id = (SELECT min(artifact_id) FROM host_ops)"
                                 " ORDER BY op_id").fetchnumpy()["op_id"], dtype=np.int64)
    parents = np.asarray(v.store.sql("SELECT coalesce(parent, -1) AS p FROM host_ops")
                         .fetchnumpy()["p"], dtype=np.int64)
    launch = np.asarray(v.store.sql("SELECT coalesce(launch_op_id, -1) AS l FROM gpu_ops")
                        .fetchnumpy()["l"], dtype=np.int64)
    assert len(ops) > 1000 and int(ops[-1]) - int(ops[0]) == len(ops) - 1  # one block
    x = np.concatenate([launch, parents, np.array([-1, 0, int(ops[0]) - 1, int(ops[-1]),
                                                   int(ops[-1]) + 1, 1 << 40])])
    for keys in (ops, np.delete(ops, np.s_[::3]), ops[:1], ops[:0]):
        got = intervals.find(keys, x)
        assert np.array_equal(got, _search(keys, x))
    hits = intervals.find(ops, launch)
    assert (hits >= 0).sum() > 0 and np.array_equal(ops[hits[hits >= 0]], launch[hits >= 0])


def test_find_with_repeated_keys_takes_the_search() -> None:
    """Sorted keys with a repeat whose span still equals their count minus one: not a run of
    consecutive ids, so the search answers (the first of the repeats)."""
    keys = np.array([5, 6, 6, 8], dtype=np.int64)
    x = np.array([4, 5, 6, 7, 8, 9, -1], dtype=np.int64)
    assert intervals.find(keys, x).tolist() == [-1, 0, 1, -1, 3, -1, -1]
    assert intervals.find(keys, x).tolist() == _search(keys, x).tolist()


def _artifact_by_join(store: Store) -> int | None:
    """The query `views/replay_rows.replayable` (formerly replay/findings.py) replaced: every
    artifact id of gpu_ops joined to the runtime calls of host_ops."""
    rows = store.sql(
        "SELECT DISTINCT artifact_id FROM gpu_ops WHERE artifact_id IN (SELECT artifact_id "
        "FROM host_ops WHERE kind = 'runtime')").fetchall()
    return rows[0][0] if len(rows) == 1 else None


@pytest.mark.parametrize("paths", [[p] for p in CAPTURES] + [CAPTURES[:2]] + [
    [Path(__file__).resolve().parents[1] / "examples/cpu_tiny_decode.pt.trace.json.gz"]],
    ids=[p.name for p in CAPTURES] + ["two captures", "cpu only"])
def test_replayed_artifact_probe_equals_the_join(paths: list[Path]) -> None:
    """One capture with kernels: its id; two: none (no single timeline); CPU only: none."""
    store = Store()
    read_all(paths, store)
    want = _artifact_by_join(store)
    assert replay_rows.replayable(store) == want
    assert (want is not None) == (len(paths) == 1 and "cpu_tiny" not in paths[0].name)


def _cuts_by_search(gs: np.ndarray, ge: np.ndarray, inner: np.ndarray) -> tuple:
    """The cuts as `idle_pieces._cuts` built them before: each inner bound's gap searched
    among the gap starts, then counted."""
    inner = np.unique(inner)
    gi = np.searchsorted(gs, inner, side="right") - 1
    g = len(gs)
    cnt = np.bincount(gi, minlength=g)
    at_gs = 2 * np.arange(g, dtype=np.int64) + (np.cumsum(cnt) - cnt)
    at_ge = at_gs + cnt + 1
    cuts = np.empty(2 * g + len(inner), dtype=np.int64)
    cuts[at_gs], cuts[at_ge] = gs, ge
    cuts[np.arange(len(inner), dtype=np.int64) + 2 * gi + 1] = inner
    start = np.ones(len(cuts), dtype=bool)
    start[at_ge] = False
    return cuts, np.nonzero(start)[0], np.repeat(np.arange(g, dtype=np.int64), cnt + 1)


@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_cuts_by_gap_runs_equal_the_search(path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    """Every call the account makes on a real capture: the cuts, piece starts and piece gaps
    equal those of the per-bound search."""
    seen: list[tuple] = []
    real = idle_pieces._cuts

    def spy(gs: np.ndarray, ge: np.ndarray, inner: np.ndarray) -> tuple:
        got = real(gs, ge, inner)
        seen.append((len(gs), len(inner)))
        want = _cuts_by_search(gs, ge, inner)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)
        return got

    monkeypatch.setattr(idle_pieces, "_cuts", spy)
    v = analyze([path]).views
    assert v is not None and v.account is not None
    assert seen and sum(n for _, n in seen) > 1000  # real gaps with many inner bounds


def test_block_offsets_put_rows_in_op_id_order() -> None:
    """Ids filling a consecutive block in any order go to their places (as a sort would put
    them); a gap or a repeat is no block (the sort answers)."""
    rng = np.random.default_rng(7)
    ids = rng.permutation(np.arange(100, 1100, dtype=np.int64))
    at = host_state._block_offsets(ids)
    assert at is not None
    vals = ids * 3 + 1
    assert np.array_equal(host_state._scatter(vals, at), np.sort(ids) * 3 + 1)
    assert host_state._block_offsets(ids[ids != 500]) is None  # a gap inside
    assert host_state._block_offsets(ids[ids != 1099]) is not None  # the end: still a block


def test_block_offsets_refuse_gaps_and_repeats() -> None:
    assert host_state._block_offsets(np.array([3, 1, 4], dtype=np.int64)) is None  # gap (2)
    assert host_state._block_offsets(np.array([2, 1, 2, 4], dtype=np.int64)) is None  # repeat
    assert host_state._block_offsets(np.array([], dtype=np.int64)) is None
    assert host_state._block_offsets(np.array([5], dtype=np.int64)).tolist() == [0]


def test_nsys_ops_read_unsorted_take_the_block_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The nsys reader's batched SQL path (past `nsys_host_in_memory_rows` host events) stores
    its host ops thread by thread: not in op id order, but one block, so `_by_node` reads them
    unsorted and puts them in place (checked against the joins by
    test_ops_by_frame_node_equal_the_joins). The in-memory path (this export's size) stores
    them in op id order."""
    import msgspec

    from crossview.knowledge.thresholds import defaults
    from crossview.sources.nsys import host

    nsys = [p for p in CAPTURES if p.suffix == ".sqlite"]
    if not nsys:
        pytest.skip("the nsys capture is absent")

    def op_ids() -> np.ndarray:
        v = analyze(nsys).views
        assert v is not None
        return np.asarray(v.store.sql("SELECT op_id FROM f_host WHERE artifact_id = 1")
                          .fetchnumpy()["op_id"], dtype=np.int64)

    assert bool((np.diff(op_ids()) > 0).all())  # the arrays path: in op id order
    batched = msgspec.structs.replace(defaults(), nsys_host_in_memory_rows=-1)
    monkeypatch.setattr(host, "defaults", lambda: batched)
    ids = op_ids()
    assert not bool((ids[1:] >= ids[:-1]).all())
    assert host_state._block_offsets(ids) is not None
