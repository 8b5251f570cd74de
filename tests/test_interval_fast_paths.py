"""The interval arithmetic's shortcuts give what the general paths they skip give
(docs/decisions/0710): `overlap` against a single interval by clipping, and the GPU idle inside
host intervals measured from the side with fewer intervals, on real captures' kernel unions and
host calls and on random unions (the references below are the general code as it was)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA
from crossview import intervals
from crossview.analysis import analyze
from crossview.knowledge import api_roles
from crossview.scope import step_detect as steps
from crossview.store.host_calls import NamesMatching, RuntimeCalls
from crossview.store.store import Store
from crossview.views.device import account, activity_gaps, launch_queue, timeline

CAPTURES = [p for p in (SHARED_DATA / "kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz",
                        SHARED_DATA / "kineto/hta_a100_ddp_resnet_nccl.json.gz",
                        SHARED_DATA / "nsys/nvfuser_h200_nsys2025.1.sqlite") if p.exists()]
I64 = np.int64


def _overlap_ref(qs: np.ndarray, qe: np.ndarray, us: np.ndarray, ue: np.ndarray) -> np.ndarray:
    if len(us) == 0 or len(qs) == 0:
        return np.zeros(len(qs), dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(ue - us)])

    def covered_before(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(us, t, side="right")
        full = cum[np.maximum(i - 1, 0)]
        last_s = us[np.maximum(i - 1, 0)]
        last_e = ue[np.maximum(i - 1, 0)]
        part = np.clip(np.minimum(t, last_e) - last_s, 0, None)
        return np.where(i > 0, full + part, 0)

    return covered_before(qe) - covered_before(qs)


def _effect_ref(devices: list[intervals.DeviceIntervals], hs: np.ndarray, he: np.ndarray,
                artifact: np.ndarray) -> tuple[int, int, int, int]:
    host_ns = idle_in = opened = 0
    for dev in devices:
        sel = artifact == dev.artifact_id
        if not sel.any():
            continue
        ms, me = intervals.merge(hs[sel], he[sel])
        ms, me = np.clip(ms, dev.first, dev.last), np.clip(me, dev.first, dev.last)
        keep = me > ms
        ms, me = ms[keep], me[keep]
        if len(ms) == 0:
            continue
        host_ns += int((me - ms).sum())
        gs, ge = dev.idle_s, dev.idle_e
        idle_in += int(_overlap_ref(gs, ge, ms, me).sum())
        i = np.searchsorted(ms, gs, side="right") - 1
        inside = (i >= 0) & (gs < me[np.maximum(i, 0)])
        opened += int((ge - gs)[inside].sum())
    return host_ns, idle_in, opened, int(len(hs))


def _union(rng: np.random.Generator, n: int, span: int) -> tuple[np.ndarray, np.ndarray]:
    s = rng.integers(0, span, n).astype(I64)
    return intervals.merge(s, s + rng.integers(0, span // max(n, 1) * 3 + 1, n).astype(I64))


def test_overlap_shortcut_equals_the_search_on_random_unions() -> None:
    rng = np.random.default_rng(20)
    for n in (1, 2, 5, 200):
        us, ue = _union(rng, n, 10_000)
        qs = rng.integers(-500, 10_500, 2_000).astype(I64)
        qe = qs + rng.integers(-50, 3_000, 2_000).astype(I64)  # some end before they start
        assert np.array_equal(intervals.overlap(qs, qe, us, ue), _overlap_ref(qs, qe, us, ue))


def test_effect_from_the_fewer_side_equals_the_gap_side_on_random_unions() -> None:
    rng = np.random.default_rng(7)
    for k, h in ((300, 4), (300, 3_000), (2, 50), (1, 10)):
        us, ue = _union(rng, k, 100_000)
        dev = intervals.DeviceIntervals(1, 0, us, ue, int(us[0]), int(ue[-1]))
        hs = rng.integers(-1_000, 101_000, h).astype(I64)
        he = hs + rng.integers(0, 5_000, h).astype(I64)
        art = np.where(rng.random(h) < 0.9, 1, 2).astype(I64)
        got = timeline.host_window_effect([dev], hs, he, art)
        assert (got.host_ns, got.gpu_idle_inside_ns, got.gaps_opened_inside_ns,
                got.count) == _effect_ref([dev], hs, he, art)


@pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")
@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_interval_shortcuts_equal_the_general_paths_on_captures(path: Path) -> None:
    v = analyze([path]).views
    assert v is not None
    unions = v.device_union
    assert unions
    checked = 0
    for sel in (RuntimeCalls(tuple(api_roles.names_with_role("sync"))),
                RuntimeCalls(tuple(api_roles.names_with_role("launch"))),
                NamesMatching(contains="", pattern=".")):
        hs, he, art = timeline.host_intervals(v.store, sel)
        got = timeline.host_window_effect(unions, hs, he, art)
        want = _effect_ref(unions, hs, he, art)
        assert (got.host_ns, got.gpu_idle_inside_ns, got.gaps_opened_inside_ns,
                got.count) == want
        checked += want[1] > 0
        for u in unions:  # every host interval against one step-like window, and the union
            w = (np.array([u.first], dtype=I64), np.array([(u.first + u.last) // 2], dtype=I64))
            assert np.array_equal(intervals.overlap(hs, he, *w), _overlap_ref(hs, he, *w))
            assert np.array_equal(intervals.overlap(hs, he, u.busy_s, u.busy_e),
                                  _overlap_ref(hs, he, u.busy_s, u.busy_e))
    assert checked  # some host calls hold GPU idle time: the sums are not all zero


def _gap_host_ref(store: Store, gap: activity_gaps.Gap, aid: int) -> tuple[str | None, str | None]:
    """The query per gap that `_covering_ops` replaced (plus its op id tie-break)."""
    row = store.sql(
        "SELECT name, kind FROM f_host WHERE artifact_id = $a AND start_ns < $e"
        " AND start_ns + dur_ns > $s ORDER BY least(start_ns + dur_ns, $e)"
        " - greatest(start_ns, $s) DESC, depth DESC, op_id LIMIT 1",
        {"a": aid, "s": gap.start_ns, "e": gap.start_ns + gap.dur_ns}).fetchall()
    return (row[0][0], row[0][1]) if row else (None, None)


@pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")
@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_gap_hosts_in_one_query_equal_a_query_per_gap(path: Path) -> None:
    v = analyze([path]).views
    assert v is not None
    ids = dict(v.store.sql("SELECT path, artifact_id FROM artifacts").fetchall())
    res = activity_gaps.gaps(v, 1_000)  # 1 µs: 20 gaps named
    assert len(res.longest) == 20
    hosts = [(g.host, g.host_kind) for g in res.longest]
    assert hosts == [_gap_host_ref(v.store, g, ids[g.artifact]) for g in res.longest]
    assert any(h for h, _ in hosts)


@pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")
@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_launch_probe_by_sample_equals_the_join_on_every_thread(
        path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    v = analyze([path]).views
    assert v is not None
    threads = v.store.sql("SELECT DISTINCT artifact_id, pid, tid FROM f_host"
                          " WHERE pid IS NOT NULL AND tid IS NOT NULL").fetchall()
    got = [steps._launches(v.store, "f_gpu", *t) for t in threads]
    monkeypatch.setattr(steps, "_SAMPLE", 0)  # no sample: the join decides alone
    assert got == [steps._launches(v.store, "f_gpu", *t) for t in threads]
    assert any(got)


def _depth_ref(k: launch_queue.KernelLaunches) -> tuple[np.ndarray, np.ndarray]:
    """depth_at_launches as it was: the calls found by numpy's unique, every search done."""
    _, first = np.unique(k.op, return_index=True)
    ls = np.sort(k.hs[first], kind="stable")
    kl = np.sort(k.hs, kind="stable")
    ke = np.sort(k.ke, kind="stable")
    depth = np.searchsorted(kl, ls, side="left") - np.searchsorted(ke, ls, side="right")
    return ls, np.maximum(depth, 0)


@pytest.mark.parametrize("calls,spread", [(5_000, 1), (2_000, 1), (5_000, 10**9), (1, 1)])
def test_launch_queue_shortcuts_equal_the_searches(calls: int, spread: int) -> None:
    """One kernel per call (every op once), several per call, sparse op ids, one call."""
    rng = np.random.default_rng(calls)
    n = 5_000
    op = (rng.permutation(n) if calls == n else rng.integers(0, calls, n)) * spread + 7
    # a call's rows share its start; distinct calls often start together (5 k in 20 k ns)
    hs = rng.integers(0, 20_000, op.max() // spread + 1)[(op - 7) // spread].astype(I64)
    k = launch_queue.KernelLaunches(hs + 5, hs + 5 + rng.integers(1, 900, n), op.astype(I64),
                                    hs, hs + 3)
    got, want = launch_queue.depth_at_launches(k), _depth_ref(k)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.skipif(not CAPTURES, reason="../shared/data not present")
@pytest.mark.parametrize("path", CAPTURES, ids=[p.name for p in CAPTURES])
def test_launch_queue_shortcuts_equal_the_searches_on_captures(path: Path) -> None:
    v = analyze([path]).views
    assert v is not None
    for a, d in v.store.sql("SELECT DISTINCT artifact_id, device FROM f_gpu"
                            " WHERE kind = 'kernel'").fetchall():
        k = launch_queue.kernel_launches(v.store, a, d)
        assert len(k.op)
        got, want = launch_queue.depth_at_launches(k), _depth_ref(k)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


@pytest.mark.parametrize("n,top", [(10_000, 5), (10_000, 1), (30, 5), (10_000, 0), (3, 5)])
def test_longest_gaps_equal_the_full_stable_sort(n: int, top: int) -> None:
    """Ties (few distinct lengths) keep index order, as the stable sort of every gap did."""
    rng = np.random.default_rng(n + top)
    for dur in (rng.integers(0, 50, n).astype(I64), rng.integers(0, 10**9, n).astype(I64),
                np.zeros(n, dtype=I64)):
        assert np.array_equal(account._longest(dur, top),
                              np.argsort(-dur, kind="stable")[:top])
