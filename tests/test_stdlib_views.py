"""The store's named views (store/stdlib) and MCP `query` over them.

- Every view file's header names exactly the columns its SELECT returns (on an empty store
  and on a real capture), with a unit from the vocabulary; `ensure` is idempotent and
  replaces views made for another schema version.
- MCP `query` answers "top 5 kernels by time with their launching op" and "idle time per step
  by cause" in ONE statement each over the views, on the V100 ResNet-50 Kineto trace
  (../shared/data/kineto/kineto_v100_resnet50_workers0.pt.trace.json.gz), against numbers
  computed here from the raw JSON with tests/oracle.py (gzip + json, no crossview):
  kernel time per name, and the launching op as the innermost `Operator` event enclosing
  the kernel's runtime call (same pid/tid, matched by correlation id); per step, idle time =
  step wall − kernel union inside the step. The steps are the six `ProfilerStep#16..21`
  ranges start to start (the last to its own end), as crossview's steps say for back-to-back
  steps (checked by hand: 159,431,000 ns for step 16 = 16's start to 17's start).
- docs/views.md is what bench/views_reference.py writes.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import oracle
from conftest import REPO, SHARED_DATA, shared_file
from crossview.sources.registry import read_all
from crossview.store import stdlib
from crossview.store.store import Store

RESNET = SHARED_DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
UNITS = {"ns", "bytes", "bytes/s", "count", "index", "id", "text", "bool", "json", "value"}


def _columns(store: Store, view: str) -> list[str]:
    return [r[0] for r in store.sql(f"DESCRIBE {view}").fetchall()]


def test_headers_name_every_column_and_views_bind_on_an_empty_store() -> None:
    store = Store()
    assert stdlib.ensure(store) is True
    names = [v.name for v in stdlib.catalog()]
    assert len(names) == len(set(names)) >= 12
    for v in stdlib.catalog():
        assert v.summary and all(c.unit in UNITS and c.doc for c in v.columns), v.name
        if not v.computed:
            assert _columns(store, v.name) == [c.name for c in v.columns], v.name
    assert store.sql("SELECT count(*) FROM kernel_launches").fetchall() == [(0,)]


def test_ensure_once_and_again_for_another_schema_version() -> None:
    store = Store()
    assert stdlib.ensure(store) is True
    assert stdlib.ensure(store) is False
    assert stdlib.ensure(store.cursor()) is False  # one catalog for every connection
    store.sql(f"CREATE OR REPLACE VIEW {stdlib.MARKER} AS SELECT 0 AS store_schema_version,"
              " 'old' AS stdlib_digest")
    store.sql("CREATE OR REPLACE VIEW kernels AS SELECT 1 AS stale")
    assert stdlib.ensure(store) is True
    assert _columns(store, "kernels")[0] == "artifact_id"


def test_a_bad_header_is_refused() -> None:
    with pytest.raises(ValueError, match="bad.sql"):
        stdlib.parse("bad", "-- rows\n-- columns:\n-- x ns\nSELECT 1 AS x", False)
    with pytest.raises(ValueError, match="a SELECT"):
        stdlib.parse("bad", "-- rows\n-- columns:\n-- x  ns  the x\n", False)


def test_views_on_a_real_capture_match_the_raw_tables() -> None:
    store = Store(compress=True)
    read_all([shared_file(RESNET)], store)
    store.compact()
    stdlib.ensure(store)
    for v in stdlib.views():
        assert _columns(store, v.name) == [c.name for c in v.columns], v.name
    # the trace's 8,772 `Kernel` events (oracle.py), 12 memcpy + 312 memset events
    assert store.sql("SELECT count(*) FROM kernels").fetchall() == [(8772,)]
    assert store.sql("SELECT count(*) FROM kernel_launches").fetchall() == [(8772,)]
    assert store.sql("SELECT kind, count(*) FROM memory_copies GROUP BY 1 ORDER BY 1"
                     ).fetchall() == [("memcpy", 12), ("memset", 312)]
    # one kernel union per device: kernel span = busy + gaps
    busy, span, gaps = store.sql(
        "SELECT (SELECT sum(dur_ns) FROM kernels), (SELECT max(end_ns) - min(start_ns) FROM"
        " kernels), (SELECT sum(dur_ns) FROM idle_gaps)").fetchall()[0]
    ks = oracle.kernels(oracle.load_trace(RESNET))
    assert span == oracle.kernel_span_ns(ks)
    assert span - gaps == oracle.kernel_busy_ns(ks)
    assert busy == oracle.kernel_time_ns(ks)


def test_filtered_forms_read_the_filters_slice() -> None:
    """f_kernels / f_kernel_launches / f_idle_gaps are the views over the filter's f_gpu:
    under a time window, exactly the kernels that start in it (counted from the trace
    with oracle.py), their launch calls still named from the whole capture."""
    from crossview.scope.filter import Filter
    from crossview.scope.resolve import resolve

    store = Store(compress=True)
    read_all([shared_file(RESNET)], store)
    store.compact()
    resolve(store, Filter())
    assert {v.filtered_name for v in stdlib.filtered()} >= {
        "f_kernels", "f_kernel_launches", "f_idle_gaps", "f_host_op_tree"}
    for v in stdlib.filtered():
        assert _columns(store, v.filtered_name) == [c.name for c in v.columns], v.name
    assert store.sql("SELECT count(*) FROM f_kernels").fetchall() == [(8772,)]
    ks = oracle.kernels(oracle.load_trace(RESNET))
    t0 = min(k.start_ns for k in ks)
    lo, hi = t0 + 20_000_000, t0 + 60_000_000  # 20–60 ms after the first kernel
    want = sum(1 for k in ks if lo <= k.start_ns < hi)
    resolve(store, Filter(window_ns=(lo, hi)))
    got, named = store.sql("SELECT count(*), count(launch_call) FROM f_kernel_launches"
                           ).fetchall()[0]
    assert 0 < want < 8772 and got == want
    assert store.sql("SELECT count(*) FROM f_kernels").fetchall() == [(want,)]
    assert named == store.sql("SELECT count(launch_call) FROM kernel_launches WHERE "
                              "start_ns >= $lo AND start_ns < $hi", {"lo": lo, "hi": hi}
                              ).fetchall()[0][0]


def test_rows_in_steps_macros_read_the_slices() -> None:
    """f_host_in_steps / f_gpu_in_steps ($a, $s, $e: artifact ids, starts, ends) are the
    slice's rows starting inside those windows: on the ResNet trace, two 10 ms windows hold
    exactly the kernels oracle.py counts from the JSON starting in them."""
    from crossview.scope.filter import Filter
    from crossview.scope.resolve import resolve

    store = Store(compress=True)
    read_all([shared_file(RESNET)], store)
    resolve(store, Filter())
    ks = oracle.kernels(oracle.load_trace(RESNET))
    t0 = min(k.start_ns for k in ks)
    wins = [(t0, t0 + 10_000_000), (t0 + 50_000_000, t0 + 60_000_000)]
    want = sum(1 for k in ks for a, b in wins if a <= k.start_ns < b)
    p: dict[str, list[int]] = {"a": [], "s": [a for a, _ in wins], "e": [b for _, b in wins]}
    aid = store.sql("SELECT min(artifact_id) FROM artifacts").fetchall()[0][0]
    p["a"] = [aid, aid]
    assert want > 0 and store.sql("SELECT count(*) FROM f_gpu_in_steps($a, $s, $e) x WHERE "
                                  "x.kind = 'kernel'", p).fetchall() == [(want,)]
    hosts = store.sql("SELECT count(*) FROM f_host_in_steps($a, $s, $e) x", p).fetchall()[0][0]
    assert hosts == store.sql(
        "SELECT count(*) FROM host_ops WHERE (start_ns >= $s1 AND start_ns < $e1) OR"
        " (start_ns >= $s2 AND start_ns < $e2)", {"s1": wins[0][0], "e1": wins[0][1],
                                                   "s2": wins[1][0], "e2": wins[1][1]}
    ).fetchall()[0][0] > 0


@pytest.mark.parametrize(("trace", "want"), [
    ("hta_v100_ddp_training.json.gz", 2020),  # ncclKernel_AllReduce only (oracle.py)
    # one NCCL AllGather + 73 symmetric-memory all-reduce kernels with no "nccl" in the name
    ("tracelens_b200_vllm_eager_prefill_tp8.json.gz", 74)])
def test_collectives_are_the_comm_kernels(trace: str, want: int) -> None:
    path = shared_file(SHARED_DATA / "kineto" / trace)
    store = Store()
    read_all([path], store)
    stdlib.ensure(store)
    comm = [k for k in oracle.kernels(oracle.load_trace(path)) if oracle.is_comm(k.name)]
    assert len(comm) == want
    assert store.sql("SELECT count(*), sum(dur_ns) FROM collectives").fetchall() == [
        (want, oracle.kernel_time_ns(comm))]


# -- MCP query over the views ------------------------------------------------------------------
TOP5 = """
WITH per_op AS (
    SELECT kernel, launching_op, count(*) AS n, sum(dur_ns) AS ns
    FROM kernel_launches GROUP BY ALL)
SELECT kernel, sum(ns) AS kernel_ns, sum(n) AS launches,
       arg_max(launching_op, ns) FILTER (WHERE launching_op IS NOT NULL) AS launching_op,
       max(ns) FILTER (WHERE launching_op IS NOT NULL) AS launching_op_ns
FROM per_op GROUP BY kernel ORDER BY kernel_ns DESC, kernel LIMIT 5
"""

IDLE_BY_CAUSE = """
SELECT s.step, s.wall_ns, i.cause, i.idle_ns, i.step_idle_ns
FROM steps s JOIN step_idle i USING (artifact_id, step)
ORDER BY s.step, i.idle_ns DESC, i.cause
"""


@pytest.fixture(scope="module")
def tools():  # type: ignore[no-untyped-def]
    pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")
    from crossview.mcp.cache import AnalysisCache
    from crossview.mcp.safety import Roots
    from crossview.mcp.tools_unscoped import OtherTools

    shared_file(RESNET)
    return OtherTools(AnalysisCache(Roots([SHARED_DATA])))


@pytest.fixture(scope="module")
def raw() -> dict:
    return oracle.load_trace(shared_file(RESNET))


def _query(tools, sql: str) -> list[dict]:  # type: ignore[no-untyped-def]
    out = json.loads(tools.query([str(RESNET)], sql, max_rows=500))
    assert not out["truncated"]
    return [dict(zip(out["columns"], r, strict=True)) for r in out["rows"]]


def _innermost_op(ops: list[tuple[int, int, str]], call: dict) -> str | None:
    s = oracle.us_to_ns(call["ts"])
    e = s + oracle.us_to_ns(call.get("dur", 0))
    inside = [(os_, -oe, n) for os_, oe, n in ops if os_ <= s and oe >= e]
    return max(inside)[2] if inside else None


def test_top5_kernels_with_launching_op_in_one_statement(tools, raw: dict) -> None:  # type: ignore[no-untyped-def]
    got = _query(tools, TOP5)
    ks = oracle.kernels(raw)
    total: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for k in ks:
        total[k.name] += k.dur_ns
        count[k.name] += 1
    top = sorted(total, key=lambda n: (-total[n], n))[:5]
    launches = oracle.launch_events(raw)
    ops: dict[tuple[object, object], list[tuple[int, int, str]]] = defaultdict(list)
    for e in oracle.events(raw):
        if e.get("ph") == "X" and e.get("cat") in ("Operator", "cpu_op"):
            s = oracle.us_to_ns(e["ts"])
            ops[(e.get("pid"), e.get("tid"))].append(
                (s, s + oracle.us_to_ns(e.get("dur", 0)), str(e["name"])))
    by_op: dict[str, dict[str, int]] = {n: defaultdict(int) for n in top}
    for k in ks:
        if k.name in by_op and (calls := launches.get(k.correlation)):
            op = _innermost_op(ops[(calls[0].get("pid"), calls[0].get("tid"))], calls[0])
            if op is not None:
                by_op[k.name][op] += k.dur_ns
    want = [{"kernel": n, "kernel_ns": total[n], "launches": count[n],
             "launching_op": max(by_op[n].items(), key=lambda x: x[1])[0],
             "launching_op_ns": max(by_op[n].values())} for n in top]
    assert got == want
    # by hand: the cuDNN dgrad kernel, 80.683 ms over 162 launches, all under
    # aten::cudnn_convolution_backward_input; elementwise adds split across ops
    assert got[0]["kernel_ns"] == 80_683_000 and got[0]["launches"] == 162
    assert got[3]["launching_op"] == "aten::add_" and got[3]["launching_op_ns"] < \
        got[3]["kernel_ns"]


def test_idle_per_step_by_cause_in_one_statement(tools, raw: dict) -> None:  # type: ignore[no-untyped-def]
    rows = _query(tools, IDLE_BY_CAUSE)
    steps = sorted((oracle.us_to_ns(e["ts"]), oracle.us_to_ns(e["dur"]), str(e["name"]))
                   for e in oracle.events(raw)
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))
    assert len(steps) == 6
    ks = oracle.kernels(raw)
    dl = [(oracle.us_to_ns(e["ts"]), oracle.us_to_ns(e["ts"]) + oracle.us_to_ns(e["dur"]))
          for e in oracle.events(raw) if e.get("ph") == "X"
          and str(e.get("name", "")).startswith("enumerate(DataLoader)")]
    for i, (start, dur, name) in enumerate(steps):
        end = steps[i + 1][0] if i + 1 < len(steps) else start + dur
        busy = oracle.union_intervals((max(k.start_ns, start), min(k.end_ns, end))
                                      for k in ks if k.end_ns > start and k.start_ns < end)
        idle, at = [], start
        for s, e in busy:
            if s > at:
                idle.append((at, s))
            at = max(at, e)
        if at < end:
            idle.append((at, end))
        mine = [r for r in rows if r["step"] == int(name.split("#")[1])]
        assert mine and all(r["wall_ns"] == end - start for r in mine), name
        assert sum(r["idle_ns"] for r in mine) == sum(e - s for s, e in idle) \
            == mine[0]["step_idle_ns"], name
        # num_workers=0: the host loading the next batch is the largest cause every step,
        # at most the GPU idle time that lies inside DataLoader.__next__ (the rest of that
        # time goes to a more specific cause ranked above it: the batch's copies)
        assert mine[0]["cause"] == "data_loading", name
        inside = sum(max(0, min(e, de) - max(s, ds)) for s, e in idle for ds, de in dl)
        assert 0.95 * inside <= mine[0]["idle_ns"] <= inside, name


def test_query_names_in_literals_are_not_relations_and_writes_stay_refused(tools) -> None:  # type: ignore[no-untyped-def]
    from crossview.mcp.safety import Refused

    assert _query(tools, "SELECT 'steps' AS word, count(*) AS n FROM kernels") == [
        {"word": "steps", "n": 8772}]
    with pytest.raises(Refused, match="CREATE"):
        tools.query([str(RESNET)], "CREATE OR REPLACE VIEW kernels AS SELECT 1")


def test_query_reads_the_filtered_forms_under_its_filter(tools) -> None:  # type: ignore[no-untyped-def]
    """MCP `query` with a filter: f_kernels / f_collectives hold the filter's kernels, the
    plain views every kernel. hta_v100_ddp_training: 19,370 kernels, 2,020 of them (all
    ncclKernel_AllReduce) on stream 14, 357,343,000 ns in all (oracle.py from the raw
    JSON)."""
    from crossview.mcp.cache import FilterArg

    path = shared_file(SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz")
    ks = oracle.kernels(oracle.load_trace(path))
    on14 = [k for k in ks if k.stream == 14]
    assert len(ks) == 19370 and len(on14) == 2020
    out = json.loads(tools.query(
        [str(path)], "SELECT (SELECT count(*) FROM f_kernels), (SELECT sum(dur_ns) FROM "
        "f_kernels), (SELECT count(*) FROM f_collectives), (SELECT count(*) FROM kernels),"
        " (SELECT count(DISTINCT stream) FROM f_kernel_launches)", FilterArg(stream=14)))
    assert out["filter"] == {"stream": 14}
    assert out["rows"] == [[2020, oracle.kernel_time_ns(on14), 2020, 19370, 1]]
    assert oracle.kernel_time_ns(on14) == 357_343_000


def test_query_and_views_resource_name_the_filtered_forms() -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")
    from crossview.mcp.resources import views_catalog
    from crossview.mcp.tools_unscoped import OtherTools

    doc = json.loads(views_catalog())
    forms = {v["name"]: v["filtered_form"] for v in doc["views"]}
    assert forms["kernels"] == "f_kernels" and forms["device_counters"] is None
    assert "filtered_form" in doc["note"]
    import typing

    sql = typing.get_type_hints(OtherTools.query, include_extras=True)["sql"]
    text = sql.__metadata__[0].description
    assert all(v.filtered_name in text for v in stdlib.filtered())


def test_views_resource_lists_every_view_with_units(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")
    import anyio
    from mcp import Client

    from crossview.mcp.server import build

    async def read() -> str:
        async with Client(build([tmp_path])) as c:
            res = await c.read_resource("crossview://views")
            return str(res.contents[0].text)  # type: ignore[union-attr]

    doc = json.loads(anyio.run(read))
    by_name = {v["name"]: v for v in doc["views"]}
    assert set(by_name) == {v.name for v in stdlib.catalog()}
    assert by_name["step_idle"]["provided_by"].startswith("analysis")
    launch = {c["name"]: c["unit"] for c in by_name["kernel_launches"]["columns"]}
    assert launch["launch_lag_ns"] == "ns" and launch["launching_op"] == "text"


def test_generated_reference_is_current() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    import views_reference

    doc = Path(views_reference.DOC)
    assert doc.exists() and doc.read_text("utf-8") == views_reference.reference(), (
        "docs/views.md is stale: run .venv/bin/python bench/views_reference.py")


def test_views_are_made_when_a_statement_first_names_them() -> None:
    """After a filter is resolved, no named view or filtered form exists yet (decision 0847):
    a statement naming one (any case) makes it first, naming the marker runs `ensure` (every
    view, the marker), and `define_deferred` makes the rest (the MCP query tool's
    statements do not go through Store.sql). The shipped example capture."""
    from crossview.scope.filter import Filter
    from crossview.scope.resolve import resolve

    def made() -> set[str]:
        return {n for (n,) in store.con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal UNION ALL "
            "SELECT function_name FROM duckdb_functions() WHERE function_type = 'table_macro'"
            " AND NOT internal").fetchall()} - {"f_gpu", "f_host", "f_samples", "f_metrics",
                                                 "f_trials"}

    store = Store()
    read_all([REPO / "examples" / "cpu_tiny_decode.pt.trace.json.gz"], store)
    resolve(store, Filter())
    assert made() == set()
    n = store.sql("SELECT count(*) FROM F_Kernels").fetchall()[0][0]
    assert n == store.sql("SELECT count(*) FROM f_gpu WHERE kind = 'kernel'").fetchall()[0][0]
    assert made() == {"f_kernels"}
    store.sql("SELECT count(*) FROM f_host_in_steps([1], [0], [1])").fetchall()
    assert made() == {"f_kernels", "f_host_in_steps"}
    store.sql("SELECT count(*) FROM kernels").fetchall()
    assert made() == {"f_kernels", "f_host_in_steps", "kernels"}
    store.sql(f"SELECT * FROM {stdlib.MARKER}").fetchall()  # the marker: `ensure`, all views
    named = {v.name for v in stdlib.views()} | {stdlib.MARKER}
    assert made() == {"f_kernels", "f_host_in_steps"} | named
    assert stdlib.ensure(store) is False
    store.define_deferred()
    assert made() == named | {str(v.filtered_name) for v in stdlib.filtered()} | set(
        stdlib.STEP_MACROS)
