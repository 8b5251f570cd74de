"""Decision 0903: the Kineto reader's staging tables (`ev`, `_threads`, `_labels`, the SQL
path's `_host`) live in a compressed store's scratch catalog, and no checkpoint starts on
DuckDB's own write trigger while the read runs; the store is compacted at its end once enough
rows came in (store_compact_after_rows).
Real capture (hta_a100_16rank_training_graphs: 26 MB of JSON, 218 k events, far past the
16 MiB trigger), checked from inside the read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import SHARED_DATA, shared_file
from crossview.sources.kineto import host_table, reader
from crossview.store.store import COMPRESSED_DB, SCRATCH_DB, Store, scratch_of

TRACE = SHARED_DATA / "kineto" / "hta_a100_16rank_training_graphs.json.gz"
STAGING = {"ev", "_threads", "_labels", "_host"}


def _tables(store: Store) -> set[tuple[str, str]]:
    return {(d, t) for d, t in store.con.execute(
        "SELECT database_name, table_name FROM duckdb_tables()").fetchall()}


def _threshold(store: Store) -> str:
    return str(store.con.execute("SELECT current_setting('checkpoint_threshold')")
               .fetchall()[0][0])


@pytest.mark.parametrize("sort_rows", [0, 10**9])  # DuckDB's ORDER BY (`_host`), numpy's
def test_staging_tables_are_scratch_and_checkpoints_held(
        monkeypatch: pytest.MonkeyPatch, sort_rows: int) -> None:
    path = shared_file(TRACE)
    store = Store(threads=2)
    assert store.compressed
    default = _threshold(store)
    seen: dict[str, object] = {}
    build = host_table.build

    def spy(con, ns, dur, sort_rows_=None):  # type: ignore[no-untyped-def]
        out = build(con, ns, dur, sort_rows)
        seen["tables"] = _tables(store)
        seen["threshold"] = _threshold(store)
        return out

    monkeypatch.setattr(host_table, "build", spy)
    report = reader.read(path, store)
    assert report.status == "ok"
    inside = seen["tables"]
    assert isinstance(inside, set)
    staged = {t for d, t in inside if t in STAGING}
    assert staged >= {"ev", "_threads", "_labels"}
    assert ("_host" in staged) == (sort_rows == 0)
    # every staging table in the scratch catalog, none in the compressed one
    assert {(d, t) for d, t in inside if t in STAGING} == {(SCRATCH_DB, t) for t in staged}
    # no checkpoint on DuckDB's own trigger inside the read; its default back after it
    assert seen["threshold"] != default
    assert _threshold(store) == default
    after = _tables(store)
    assert not {t for _, t in after} & STAGING  # dropped
    # 67,216 op rows: under store_compact_after_rows (122,880), so this read leaves the
    # compaction to the analysis; a second rank file brings 134,432 and is compacted
    assert store._op_rows() == 67_216
    assert _unpacked_share(store) == 1.0
    reader.read(path, store)
    assert store._op_rows() == 134_432
    assert _unpacked_share(store) < 0.5


def _unpacked_share(store: Store) -> float:
    """Of host_ops' data segments, the share stored uncompressed (1.0: none compressed)."""
    n, raw = store.con.execute(
        f"SELECT count(*), count(*) FILTER (WHERE compression = 'Uncompressed') FROM"
        f" pragma_storage_info('{COMPRESSED_DB}.main.host_ops')"
        " WHERE segment_type <> 'VALIDITY'").fetchall()[0]
    return raw / n if n else 1.0

def test_scratch_of_follows_the_store_kind(tmp_path: Path) -> None:
    """Unqualified on a store kept on disk (no scratch catalog there)."""
    assert scratch_of(Store().con, "ev") == f"{SCRATCH_DB}.main.ev"
    assert scratch_of(Store(tmp_path / "s.duckdb").con, "ev") == "ev"


def test_a_refused_read_restores_the_threshold(tmp_path: Path) -> None:
    """A trace refused mid-read (no timed events: synthetic) leaves DuckDB's own checkpoint
    trigger as it was and no staging table behind; the store still reads the next file."""
    from crossview.errors import InputError

    bad = tmp_path / "empty_events.json"
    bad.write_text('{"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1}]}')
    store = Store(threads=2)
    default = _threshold(store)
    with pytest.raises(InputError, match="no timed"):
        reader.read(bad, store)
    assert _threshold(store) == default
    assert not {t for _, t in _tables(store)} & STAGING
    assert reader.read(shared_file(TRACE), store).status == "ok"
