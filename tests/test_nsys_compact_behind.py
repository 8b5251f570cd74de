"""Checkpoints on a second thread give the same store (sources/nsys/compact_behind.py).

On a small export (kernel table prefetched) the nsys reader compresses host_ops and each gpu_ops
batch on a second thread while it prepares the next rows. On the real exports in
../shared/data/nsys, read with tiny gpu_ops batches (several checkpoints overlapping numpy
work), every table equals the read with every checkpoint inline, and the overlapped path was
really taken; a checkpoint that fails surfaces as the read's error, with the artifact's rows
removed. Independent numbers: the kernel count and summed kernel time (ns) from `sqlite3`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from crossview.sources.nsys import compact_behind, gpu, prefetch
from crossview.sources.registry import read_all
from crossview.store.store import Store
from test_nsys_native import REAL, TABLES, kernel_truth, kernels, real


def rows(path: Path, behind: bool, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[dict[str, list[tuple[object, ...]]], list[bool]]:
    ons: list[bool] = []
    real_init = compact_behind.Behind.__init__

    def spy(self: compact_behind.Behind, store: Store, on: bool) -> None:
        real_init(self, store, on and behind)
        ons.append(self.on)

    with monkeypatch.context() as m:
        m.setattr(compact_behind.Behind, "__init__", spy)
        m.setattr(prefetch, "MIN_THREADS", 1)  # prefetch (and so overlap) on one thread too
        m.setattr(gpu, "INSERT_ROWS", 5)  # 18 kernels + copies: several batches
        store = Store(threads=1)  # one thread: DuckDB's parallel sort may swap exact ties
        (rep,) = read_all([path], store)
    assert rep.status == "ok", rep
    got = {t: store.sql(f"SELECT * {'' if t == 'frames' else 'EXCLUDE (artifact_id)'}"
                        f" FROM {t} ORDER BY {key}").fetchall() for t, key in TABLES.items()}
    return got, ons


@pytest.mark.parametrize("name", REAL[:2])
def test_overlapped_checkpoints_give_the_same_store(name: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    path = real(name)
    inline, ons = rows(path, False, monkeypatch)
    assert ons == [False]
    overlapped, ons = rows(path, True, monkeypatch)
    assert ons == [True]  # the kernel table was prefetched: checkpoints on the thread
    for t in TABLES:
        assert overlapped[t] == inline[t], t
    assert kernels(overlapped) == kernel_truth(path)


def test_failed_checkpoint_is_the_reads_error(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("adbc_driver_sqlite")
    path = real(REAL[0])
    real_compact = Store.compact

    def broken(self: Store) -> None:
        if self.con is not store.con:  # the thread's cursor
            raise RuntimeError("checkpoint failed")
        real_compact(self)

    monkeypatch.setattr(prefetch, "MIN_THREADS", 1)
    monkeypatch.setattr(Store, "compact", broken)
    store = Store(threads=1)
    with pytest.raises(RuntimeError, match="checkpoint failed"):
        read_all([path], store)
    assert store.sql("SELECT count(*) FROM gpu_ops").fetchall() == [(0,)]
    assert store.sql("SELECT count(*) FROM host_ops").fetchall() == [(0,)]
