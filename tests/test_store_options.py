"""Store options: DuckDB threads (CROSSVIEW_THREADS, else the CPU affinity: taskset) and the
compressed in-memory store the MCP server uses."""

from __future__ import annotations

import os

import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.errors import UsageError
from crossview.render.json import as_dict
from crossview.store import store as store_mod
from crossview.store.store import Store, cursor_of


def _threads(s: Store) -> int:
    return int(s.sql("SELECT current_setting('threads')").fetchall()[0][0])


def test_env_sets_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CROSSVIEW_THREADS", "1")
    assert _threads(Store()) == 1
    assert _threads(Store(threads=2)) == 2  # an explicit count wins (lake workers)


@pytest.mark.parametrize("bad", ["x", "0", "-2"])
def test_env_bad_value_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    monkeypatch.setenv("CROSSVIEW_THREADS", bad)
    with pytest.raises(UsageError, match="CROSSVIEW_THREADS"):
        Store()


def test_affinity_narrower_than_the_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CROSSVIEW_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert store_mod.default_threads() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3}, raising=False)
    assert store_mod.default_threads() is None  # all cores: DuckDB's own default


KINETO = SHARED_DATA / "kineto"
MI300X = KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz"


@pytest.mark.skipif(not MI300X.exists(), reason="../shared/data absent")
def test_compressed_store_same_answers_and_cursors_see_it() -> None:
    """The MCP server's compressed in-memory store: the same recap as the plain one, and a
    cursor (a second connection: readers' threads, another filter) lands on its catalog."""
    plain = as_dict(analyze([MI300X], store=Store(compress=False)))
    comp_store = Store(compress=True)
    comp = as_dict(analyze([MI300X], store=comp_store))
    assert comp == plain
    assert plain["metrics"]["kernel_time_ns"] == 10_674_517  # hand-summed (test_mcp.py)
    cur = comp_store.cursor()
    assert cur.sql("SELECT current_database()").fetchall() == [("cv",)]
    assert cur.sql("SELECT count(*) FROM gpu_ops WHERE kind = 'kernel'").fetchall() == [(425,)]
    assert cursor_of(Store(compress=False).con).execute("SELECT current_database()").fetchall() == [
        ("memory",)]


DDP = KINETO / "hta_a100_ddp_resnet_nccl.json.gz"


def _int_compressions(store: Store) -> set[str]:
    return {r[0] for r in store.sql(
        "SELECT DISTINCT s.compression FROM pragma_storage_info('cv.main.host_ops') s"
        " JOIN duckdb_columns() c ON c.database_name = 'cv' AND c.table_name = 'host_ops'"
        " AND c.column_name = s.column_name"
        " WHERE c.data_type IN ('BIGINT', 'INTEGER') AND s.segment_type <> 'VALIDITY'"
    ).fetchall()}


@pytest.mark.skipif(not DDP.exists(), reason="../shared/data absent")
def test_compaction_leaves_small_stores_integers_unpacked(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Up to `store_bitpack_rows` op rows a compaction does not bit-pack integer columns (the
    bulk of its cost); past it, it does. Either way the recap is the same, strings are still
    dictionary-compressed, and the setting does not outlive the checkpoint."""
    import msgspec

    from crossview.knowledge import thresholds

    small = Store(compress=True)
    unpacked = as_dict(analyze([DDP], store=small))
    ops = small.sql("SELECT (SELECT count(*) FROM host_ops) + (SELECT count(*) FROM gpu_ops)"
                    ).fetchall()[0][0]
    assert 0 < ops <= thresholds.defaults().store_bitpack_rows
    assert "BitPacking" not in _int_compressions(small)
    assert small.sql("SELECT DISTINCT compression FROM pragma_storage_info('cv.main.host_ops')"
                     " WHERE column_name = 'name' AND segment_type <> 'VALIDITY'"
                     ).fetchall() != [("Uncompressed",)]
    assert small.sql("SELECT current_setting('disabled_compression_methods')").fetchall() == [
        ("",)]
    forced = msgspec.structs.replace(thresholds.defaults(), store_bitpack_rows=0)
    monkeypatch.setattr(thresholds, "defaults", lambda: forced)
    big = Store(compress=True)
    packed = as_dict(analyze([DDP], store=big))
    assert "BitPacking" in _int_compressions(big)
    assert packed == unpacked


# -- the connection opened ahead (store/connect_ahead.py, decision 0912) ----------------------

def test_store_takes_the_connection_opened_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    from crossview.store import connect_ahead

    monkeypatch.delenv("CROSSVIEW_THREADS", raising=False)
    opened: list[object] = []
    real = connect_ahead.duckdb.connect

    def connect(*a: object, **k: object) -> object:
        con = real(*a, **k)  # type: ignore[arg-type]
        opened.append(con)
        return con

    monkeypatch.setattr(connect_ahead.duckdb, "connect", connect)
    connect_ahead.start()
    connect_ahead.start()  # a second start while one is pending: still one connection
    s = Store()
    assert len(opened) == 1 and s.con is opened[0]
    assert s.sql("SELECT count(*) FROM gpu_ops").fetchall() == [(0,)]  # the store's tables
    assert Store().con is not s.con  # taken once: the next store connects itself
    assert connect_ahead.take(connect_ahead.config()) is None


def test_a_store_of_another_configuration_does_not_take_it(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    from crossview.store import connect_ahead

    monkeypatch.delenv("CROSSVIEW_THREADS", raising=False)
    connect_ahead.start()
    s = Store(threads=1)  # a lake task's store: its own thread count
    assert _threads(s) == 1
    assert connect_ahead.take(connect_ahead.config()) is None  # the other one was dropped


def test_a_failed_connect_ahead_leaves_store_to_connect(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    from crossview.store import connect_ahead

    def broken(*_a: object, **_k: object) -> object:
        raise connect_ahead.duckdb.IOException("synthetic: no database")

    monkeypatch.delenv("CROSSVIEW_THREADS", raising=False)
    real = connect_ahead.duckdb.connect
    monkeypatch.setattr(connect_ahead.duckdb, "connect", broken)
    connect_ahead.start()
    connect_ahead._pending[1].join()  # type: ignore[index]
    monkeypatch.setattr(connect_ahead.duckdb, "connect", real)
    assert connect_ahead.take(connect_ahead.config()) is None
    assert Store().sql("SELECT 1").fetchall() == [(1,)]


def test_a_bad_thread_count_starts_nothing_and_store_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from crossview.store import connect_ahead

    monkeypatch.setenv("CROSSVIEW_THREADS", "x")
    connect_ahead.start()
    assert connect_ahead._pending is None
    with pytest.raises(UsageError, match="CROSSVIEW_THREADS"):
        Store()
