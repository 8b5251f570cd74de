"""Bounded-memory host nesting (sources/kineto/host_nesting.py, host_chunks.py, node_table.py).

The batched path must give exactly what one whole-column pass gives: on real traces from
../shared/data, host_ops (depth, parent, self time, node ids) and frames are compared between
(a) the old whole-column algorithm, recomputed here from the stored rows with `nest` +
`intern_paths` over all events at once, (b) the default batch size and (c) tiny batches that
force hundreds of cuts. The call-stack prefix case (legacy traces) has no public sample: it
uses the synthetic legacy trace of test_kineto_synthetic.py.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from conftest import SHARED_DATA
from crossview.knowledge.thresholds import defaults
from crossview.sources.kineto import host_nesting, host_table
from crossview.sources.kineto import reader as kineto
from crossview.sources.kineto.host_chunks import Chunk, cut_points, iter_chunks, pick, split_chunks
from crossview.sources.kineto.nesting import intern_paths, nest
from crossview.store.store import Store, cursor_of

KINETO = SHARED_DATA / "kineto"
REAL = ["hta_a100_ddp_resnet_nccl.json.gz", "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz",
        "tracelens_b200_vllm_eager_prefill_tp8.json.gz"]
HOST = "SELECT op_id, pid, tid, kind, name, start_ns, dur_ns, depth, parent, node_id, self_ns" \
       " FROM host_ops ORDER BY op_id"
FRAMES = "SELECT node_id, parent_node, name, kind, depth FROM frames ORDER BY node_id"


def ingest(path: Path, batch: int | None, monkeypatch: pytest.MonkeyPatch,
           sort_rows: int | None = None) -> Store:
    """`sort_rows` 0: `_host` sorted by DuckDB and read back in batches (iter_chunks), the
    path of traces past kineto_host_sort_rows; default: sorted in numpy (split_chunks)."""
    if batch is not None:
        t = msgspec.structs.replace(defaults(), kineto_nest_batch_rows=batch)
        monkeypatch.setattr(host_nesting, "defaults", lambda: t)
    if sort_rows is not None:
        s = msgspec.structs.replace(defaults(), kineto_host_sort_rows=sort_rows)
        monkeypatch.setattr(host_table, "defaults", lambda: s)
    store = Store(threads=2)
    kineto.read(path, store)
    monkeypatch.undo()
    return store


def real(name: str) -> Path:
    path = KINETO / name
    if not path.exists():
        pytest.skip(f"real trace {path} absent (../shared/data not mounted)")
    return path


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("sort_rows", [None, 0])
def test_tiny_batches_equal_default_batches(name: str, sort_rows: int | None,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny batches equal the default ones, with `_host` sorted by numpy (cut in memory) and
    by DuckDB (read back in batches) alike."""
    path = real(name)
    whole = ingest(path, None, monkeypatch)
    tiny = ingest(path, 64, monkeypatch, sort_rows)
    n = whole.sql("SELECT count(*) FROM host_ops").fetchall()[0][0]
    assert n > 10_000  # a real host timeline, far more than one tiny batch
    assert whole.sql(HOST).fetchall() == tiny.sql(HOST).fetchall()
    assert whole.sql(FRAMES).fetchall() == tiny.sql(FRAMES).fetchall()


@pytest.mark.parametrize("name", REAL[:2])
def test_batched_equals_whole_column_pass(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pre-batching algorithm, by hand: sort key (thread, start, longest first), thread and
    label ids as dense ranks of (pid, tid) and (kind, name), one `nest` + `intern_paths` over
    every event. These traces have no legacy call stacks, so nodes start at the first id."""
    store = ingest(real(name), 97, monkeypatch)
    rows = store.sql(
        "SELECT op_id, dense_rank() OVER (ORDER BY pid, tid) - 1,"
        " dense_rank() OVER (ORDER BY kind, name) - 1, start_ns, dur_ns, depth,"
        " coalesce(parent, -1), node_id, self_ns FROM host_ops ORDER BY op_id"
    ).fetchnumpy()
    op = rows["op_id"]
    cols = list(rows.values())
    thread, label, start, dur = (np.asarray(c, dtype=np.int64) for c in cols[1:5])
    assert np.all(np.diff(op) == 1)
    ref = nest(thread, start, dur)
    first = int(store.sql("SELECT min(node_id) FROM frames").fetchall()[0][0])
    node, node_parent, node_label = intern_paths(ref.depth, ref.parent, label, None, first)
    assert np.array_equal(np.asarray(cols[5]), ref.depth)
    assert np.array_equal(np.asarray(cols[6]), np.where(ref.parent >= 0, ref.parent + op[0], -1))
    assert np.array_equal(np.asarray(cols[7]), node)
    assert np.array_equal(np.asarray(cols[8]), ref.self_ns)
    n_frames = store.sql("SELECT count(*) FROM frames").fetchall()[0][0]
    assert n_frames == len(node_parent)
    assert int(ref.depth.max()) > 3  # a real call tree, not a flat list


def test_call_stack_prefixes_batched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Synthetic (no public legacy trace): "Call stack" prefix nodes are shared across batches
    and numbered as in one pass."""
    from test_kineto_synthetic import legacy_events, write_trace

    path = write_trace(tmp_path / "legacy.pt.trace.json", legacy_events())
    whole = ingest(path, None, monkeypatch)
    tiny = ingest(path, 1, monkeypatch)
    assert whole.sql("SELECT count(*) FROM frames WHERE kind = 'python'").fetchall()[0][0] > 0
    assert whole.sql(HOST).fetchall() == tiny.sql(HOST).fetchall()
    assert whole.sql(FRAMES).fetchall() == tiny.sql(FRAMES).fetchall()


def test_cut_points_only_where_no_event_is_open() -> None:
    i64 = lambda *v: np.asarray(v, dtype=np.int64)  # noqa: E731
    # thread 0: [0,10) holds [2,5); [10,12) starts as [0,10) ends (touching: a valid cut);
    # the zero-length event at 11 is inside [10,12), so no cut before it
    assert cut_points(i64(0, 0, 0, 0), i64(0, 2, 10, 11), i64(10, 3, 2, 0)).tolist() == [2]
    # one event spans all: no cut inside the thread
    assert cut_points(i64(0, 0, 0), i64(0, 2, 4), i64(10, 1, 1)).tolist() == []
    # a new thread is always a cut; a thread's open events do not leak into the next one
    assert cut_points(i64(0, 1, 1), i64(0, 0, 1), i64(10, 10, 1)).tolist() == [1]
    assert cut_points(i64(0, 1, 1), i64(0, 0, 20), i64(100, 10, 1)).tolist() == [1, 2]
    # pick: the last point within the limit, else the first beyond it
    pts = i64(3, 5, 9)
    assert (pick(pts, 0, 6), pick(pts, 5, 2), pick(pts, 5, 4), pick(pts, 9, 5)) == (5, 9, 9, 0)


def test_chunks_cover_all_rows_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """`_host` in batches of 500 rows, streamed from DuckDB or cut from columns in memory:
    chunks are contiguous, cover every row, and each ends at a new thread or where its
    thread's open events have all ended."""
    store = ingest(real(REAL[0]), None, monkeypatch)
    con = store.con
    con.execute(
        "CREATE TABLE _host AS SELECT dense_rank() OVER (ORDER BY pid, tid) - 1 AS thread,"
        " 0::BIGINT AS label, start_ns, dur_ns FROM host_ops ORDER BY op_id"
    )
    n = con.execute("SELECT count(*) FROM _host").fetchall()[0][0]
    streamed = list(iter_chunks(cursor_of(con), 500))
    cols = con.execute("SELECT thread, start_ns, dur_ns, label FROM _host ORDER BY rowid"
                       ).fetchnumpy()
    in_memory = list(split_chunks(*(np.asarray(cols[k]) for k in cols), 500))
    for chunks in (streamed, in_memory):
        _check_chunks(chunks, n)


def _check_chunks(chunks: list[Chunk], n: int) -> None:
    assert sum(len(c) for c in chunks) == n
    assert [c.offset for c in chunks] == list(np.cumsum([0] + [len(c) for c in chunks[:-1]]))
    assert len(chunks) > 10
    sizes = sorted(len(c) for c in chunks)
    assert sizes[len(sizes) // 2] <= 500 and sizes[-1] < n // 4  # bounded by the batch
    for a, b in zip(chunks, chunks[1:], strict=False):
        same = a.thread == b.thread[0]
        assert a.thread[-1] != b.thread[0] or (a.start + a.dur)[same].max() <= b.start[0]
