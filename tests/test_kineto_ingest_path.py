"""The Kineto reader's fast ingest path (issue 20): staged parts copied in the kernel, the
parsed table `ev` in file order with its `side` flag, the integer `_host` table, and the
table-based interning, each checked against an independent computation.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SHARED_DATA, shared_file
from crossview.sources.kineto import categories as C
from crossview.sources.kineto import reader, staging
from crossview.sources.kineto.host_order import host_order
from crossview.sources.kineto.nesting import _unique_inverse
from crossview.store.store import Store

# 1.4 MB gzip, 25.8 MB of JSON: large enough to be split in two parts (staging cuts ≥ 8 MiB)
TRACE = SHARED_DATA / "kineto" / "hta_a100_16rank_training_graphs.json.gz"


def _parts(path: Path, tmp: Path, copy: bool, monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    if not copy:
        monkeypatch.setattr(staging, "_copy_parts", lambda *a: None)
    staged = staging.stage(path, str(tmp), 2, exact=False, stream=False)
    monkeypatch.undo()
    return [Path(f).read_bytes() for f in staged.files]


def test_copied_parts_equal_written_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    path = shared_file(TRACE)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    copied = _parts(path, tmp_path / "a", True, monkeypatch)
    written = _parts(path, tmp_path / "b", False, monkeypatch)
    assert len(copied) == 2
    assert copied == written
    # each part is a JSON array of whole events; together, every event of the trace
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    assert sum(len(json.loads(p)) for p in copied) == len(events)


def test_copied_parts_from_a_plain_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(shared_file(TRACE).read_bytes()))
    assert staging.plain_source(plain, str(tmp_path)) == plain
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert (_parts(plain, tmp_path / "a", True, monkeypatch)
            == _parts(plain, tmp_path / "b", False, monkeypatch))


def test_ev_is_in_file_order_with_its_side(tmp_path: Path) -> None:
    """Two parts parsed in parallel still give `ev` in the file's order (gpu op ids are
    rowids), and `side` says host / GPU exactly as the category lists do."""
    path = shared_file(TRACE)
    store = Store(threads=2)
    reader._parse_events(path, store.con, str(tmp_path), 2)
    got = store.sql("SELECT ts, name, cat, side FROM ev ORDER BY rowid").fetchall()
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
              if e.get("ph") == "X"]
    assert len(got) == len(events) == 67217
    assert [(t, n) for t, n, _, _ in got] == [(float(e["ts"]), e["name"]) for e in events]
    side = {**dict.fromkeys(C.HOST_KINDS, C.HOST_SIDE), **dict.fromkeys(C.GPU_KINDS, C.GPU_SIDE)}
    assert [s for *_, s in got] == [side.get(e.get("cat"), 0) for e in events]


@pytest.mark.parametrize("sort_rows", [0, 10**9])  # DuckDB's ORDER BY, then numpy's order
def test_host_table_order_and_ids(tmp_path: Path, sort_rows: int) -> None:
    """`_host`: one row per host event, sorted (thread, start, longest first, label,
    correlation, file order), thread and label ids dense ranks of (pid, tid) and (kind, name).
    Either path; the numpy one also keeps the sorted columns the nesting reads (and `_host`
    is an Arrow table registered on the connection there)."""
    path = shared_file(TRACE)
    store = Store(threads=2)
    con = store.con
    reader._parse_events(path, con, str(tmp_path), 2)
    scan = reader._scan(con)
    base = scan.base_us
    ns = f"CAST({int(base)} AS BIGINT) * 1000 + CAST(round((ts - {base!r}) * 1000) AS BIGINT)"
    dur = "CAST(round(greatest(coalesce(dur, 0), 0) * 1000) AS BIGINT)"
    host = reader.host_table.build(con, ns, dur, sort_rows=sort_rows)
    rows = con.execute("SELECT thread, label, start_ns, dur_ns, correlation, er FROM"
                       f" {host.rows_sql} ORDER BY hr").fetchall()
    if sort_rows:
        c = host.cols
        assert c is not None
        assert [list(a) for a in (c.thread, c.label, c.start, c.dur)] == [
            [r[k] for r in rows] for k in range(4)]
    else:
        assert host.cols is None
    ev = con.execute(f"SELECT rowid, coalesce(pid, ''), coalesce(tid, ''), {C.HOST_KIND_SQL},"
                     f" coalesce(name, ''), {ns}, {dur} FROM ev WHERE {C.IS_HOST}").fetchall()
    assert host.n == len(rows) == len(ev)
    threads = sorted({(p, t) for _, p, t, *_ in ev})
    labels = sorted({(k, nm) for _, _, _, k, nm, *_ in ev})
    assert host.threads == threads and host.labels == labels
    by_er = {r[0]: r for r in ev}
    for th, lab, start, d, _, er in rows:
        _, p, t, k, nm, s0, d0 = by_er[er]
        assert (threads[th], labels[lab], start, d) == ((p, t), (k, nm), s0, d0)
    keys = [(th, start, -d, lab, corr is None, corr or 0, er)
            for th, lab, start, d, corr, er in rows]
    assert keys == sorted(keys)


@pytest.mark.parametrize("seed", range(4))
def test_host_order_equals_lexsort(seed: int) -> None:
    """host_order = np.lexsort on the full key (thread, start, dur desc, label, correlation
    NULLS LAST, row), on nearly sorted rows with many ties, as a trace has them; and on keys
    too wide for its one-integer (thread, start) key."""
    rng = np.random.default_rng(seed)
    n = 5000
    thread = rng.integers(0, 3, n)
    start = np.sort(rng.integers(0, 400, n))  # ~12 rows per instant: ties everywhere
    swap = rng.integers(0, n - 1, 40)
    start[swap], start[swap + 1] = start[swap + 1], start[swap]  # a few out of order
    dur = rng.integers(0, 3, n)
    label = rng.integers(0, 4, n)
    corr = rng.integers(0, 3, n)
    no_corr = rng.random(n) < 0.3
    er = rng.permutation(n)
    nulls_last = np.where(no_corr, 1, 0)
    ref = np.lexsort((er, np.where(no_corr, 0, corr), nulls_last, label, -dur, start, thread))
    got = host_order(thread, start, dur, label, corr, no_corr, er)
    assert np.array_equal(got, ref)
    wide = start * (1 << 52)  # thread × span past 2^62: the lexsort path
    assert np.array_equal(host_order(thread, wide, dur, label, corr, no_corr, er), ref)
    empty = np.zeros(0, dtype=np.int64)
    assert len(host_order(empty, empty, empty, empty, empty, empty.astype(bool), empty)) == 0


@pytest.mark.parametrize("bound", [50, 10**9])  # the table branch, then np.unique's
def test_unique_inverse_equals_numpy(bound: int) -> None:
    key = np.random.default_rng(7).integers(0, min(bound, 10**6), 4000).astype(np.int64)
    uniq, inv = _unique_inverse(key, bound)
    ref_u, ref_i = np.unique(key, return_inverse=True)
    assert np.array_equal(uniq, ref_u) and np.array_equal(inv, ref_i.reshape(-1))
    assert np.array_equal(uniq[inv], key)


def test_one_core_ingest_equals_overlapped(monkeypatch: pytest.MonkeyPatch) -> None:
    """On one core the GPU insert runs before the host nesting instead of beside it: the
    same rows either way (every column of gpu_ops, host_ops and frames)."""
    path = shared_file(TRACE)
    tables = {}
    for cores in (2, 1):
        monkeypatch.setattr(reader, "_cores", lambda n=cores: n)
        store = Store(threads=2)
        reader.read(path, store)
        tables[cores] = [store.sql(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
                         for t in ("gpu_ops", "host_ops", "frames")]
    gpu, host, frames = tables[1]
    assert len(gpu) > 5_000 and len(host) > 10_000 and frames
    assert tables[1] == tables[2]
