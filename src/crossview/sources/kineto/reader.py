"""PyTorch-profiler (Kineto) Chrome-trace reader: `.json` / `.json.gz`, modern and legacy schemas.

How it streams: msgspec locates the raw `traceEvents` array and decodes only the small top-level
metadata (deviceProperties, distributedInfo); DuckDB's C++ JSON reader then parses the events
straight into a columnar table with a fixed schema. No Python object is made per event. Nesting,
call-tree interning and kernel→launch linking are array/SQL operations (see nesting.py).
"""

from __future__ import annotations

import gzip
import mmap
import os
import tempfile
import zlib
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from crossview.errors import InputError
from crossview.knowledge import api_roles, kernel_families
from crossview.sources.kineto import categories as C
from crossview.sources.kineto.nesting import intern_paths, nest
from crossview.sources.report import ArtifactReport
from crossview.store.store import Store

KIND = "kineto"


class _DeviceProp(msgspec.Struct):
    id: int | None = None
    name: str | None = None
    totalGlobalMem: int | None = None  # noqa: N815 (field names as Kineto writes them)
    numSms: int | None = None  # noqa: N815
    computeMajor: int | None = None  # noqa: N815
    computeMinor: int | None = None  # noqa: N815


class _DistInfo(msgspec.Struct):
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None


class _Top(msgspec.Struct):
    traceEvents: msgspec.Raw = msgspec.Raw(b"")  # noqa: N815
    deviceProperties: list[_DeviceProp] | None = None  # noqa: N815
    distributedInfo: _DistInfo | None = None  # noqa: N815


def sniff(head: bytes, path: Path) -> bool:
    """Cheap content check on the first bytes (already gunzipped)."""
    return b'"traceEvents"' in head or (head.lstrip()[:1] == b"[" and b'"ph"' in head)


def _load_bytes(path: Path) -> bytes | mmap.mmap:
    try:
        size = path.stat().st_size
        if size == 0:
            raise InputError(path, "empty file (0 bytes): the capture wrote nothing", "empty")
        with open(path, "rb") as f:
            magic = f.read(2)
            f.seek(0)
            if magic == b"\x1f\x8b":
                try:
                    data = gzip.decompress(f.read())
                except (EOFError, OSError, zlib.error) as e:
                    raise InputError(path, f"corrupt or truncated gzip: {e}") from None
                if not data.strip():
                    raise InputError(path, "empty trace: the gzip holds no data", "empty")
                return data
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise InputError(path, f"cannot read: {e.strerror or e}") from None


def _locate(path: Path, data: bytes | mmap.mmap) -> tuple[_Top, memoryview]:
    first = bytes(data[:4096]).lstrip()
    try:
        if first[:1] == b"[":  # bare Chrome-trace array
            msgspec.json.decode(data, type=msgspec.Raw)  # validates JSON syntax
            return _Top(), memoryview(data)
        top = msgspec.json.decode(data, type=_Top)
    except msgspec.DecodeError as e:
        hint = "truncated" if "truncated" in str(e).lower() else "invalid"
        raise InputError(path, f"{hint} JSON: {e}") from None
    except msgspec.ValidationError as e:
        raise InputError(path, f"not a PyTorch-profiler trace: {e}", "unsupported") from None
    if len(top.traceEvents) == 0:
        raise InputError(
            path, "not a PyTorch-profiler trace: no 'traceEvents' array", "unsupported"
        )
    return top, memoryview(top.traceEvents)


def _events_to_duckdb(path: Path, con: duckdb.DuckDBPyConnection, raw: memoryview) -> list[str]:
    """Parse the events array into temp table `ev`; returns problems (skipped records)."""
    problems: list[str] = []
    fd, tmp = tempfile.mkstemp(suffix=".json", prefix="crossview-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        del raw
        query = (
            "CREATE OR REPLACE TEMP TABLE ev AS SELECT * FROM read_json("
            f"?, format='array', columns={C.COLUMNS}, maximum_object_size=268435456"
            "__EXTRA__)"
        )
        try:
            con.execute(query.replace("__EXTRA__", ""), [tmp])
        except (duckdb.InvalidInputException, duckdb.ConversionException) as e:
            first = str(e).splitlines()[0]
            if "Expected OBJECT" in first and "record/value 1:" in first:
                raise InputError(
                    path, "not a PyTorch-profiler trace: traceEvents holds no event objects",
                    "unsupported",
                ) from None
            con.execute(query.replace("__EXTRA__", ", ignore_errors=true"), [tmp])
            problems.append(f"some events could not be read and were skipped ({first})")
        except duckdb.Error as e:
            msg = str(e).splitlines()[0]
            raise InputError(path, f"invalid trace events: {msg}") from None
    finally:
        os.unlink(tmp)
    return problems


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    data = _load_bytes(path)
    try:
        top, raw = _locate(path, data)
        con = store.con
        problems = _events_to_duckdb(path, con, raw)
        del raw
    finally:
        if isinstance(data, mmap.mmap):
            try:
                data.close()
            except BufferError:
                pass
    n_events, n_timed = con.execute(
        "SELECT count(*), count(*) FILTER (ts IS NOT NULL) FROM ev"
    ).fetchall()[0]
    if n_events == 0:
        raise InputError(
            path, "traceEvents is empty: the profiler recorded no events "
            "(was the schedule's active window reached?)", "empty",
        )
    if n_timed == 0:
        raise InputError(path, "no timed events: not a PyTorch-profiler trace", "unsupported")
    artifact_id = store.new_artifact_id()
    base_us = con.execute("SELECT floor(min(ts)) FROM ev WHERE ts IS NOT NULL").fetchall()[0][0]
    _ingest(store, artifact_id, float(base_us))
    _devices(store, artifact_id, top)
    dist = top.distributedInfo or _DistInfo()
    n_gpu, n_host = con.execute(
        "SELECT (SELECT count(*) FROM gpu_ops WHERE artifact_id=$a),"
        " (SELECT count(*) FROM host_ops WHERE artifact_id=$a)",
        {"a": artifact_id},
    ).fetchall()[0]
    if n_gpu == 0 and n_host == 0:
        raise InputError(
            path, "no host or GPU activity events (X) in traceEvents: nothing to analyze",
            "empty",
        )
    con.execute("DROP TABLE ev")
    store.add_artifact(
        artifact_id=artifact_id, path=str(path), kind=KIND, bytes=path.stat().st_size,
        status="ok", problems=problems, rigor="L2", events=int(n_events),
        rank=dist.rank, world_size=dist.world_size, backend=dist.backend,
        trace_base_ns=int(base_us) * 1000,
    )
    return ArtifactReport(path=str(path), kind=KIND, status="ok", problems=problems,
                          artifact_id=artifact_id)


def _devices(store: Store, artifact_id: int, top: _Top) -> None:
    rows: dict[str, list[Any]] = {k: [] for k in (
        "artifact_id", "device", "name", "sm_count", "mem_bytes", "cc_major", "cc_minor")}
    for i, d in enumerate(top.deviceProperties or []):
        rows["artifact_id"].append(artifact_id)
        rows["device"].append(d.id if d.id is not None else i)
        rows["name"].append(d.name or None)
        rows["sm_count"].append(d.numSms)
        rows["mem_bytes"].append(d.totalGlobalMem)
        rows["cc_major"].append(d.computeMajor)
        rows["cc_minor"].append(d.computeMinor)
    store.append("devices", pa.table(rows))


def _ingest(store: Store, artifact_id: int, base_us: float) -> None:
    con = store.con
    ns = f"CAST({int(base_us)} AS BIGINT) * 1000 + CAST(round((ts - {base_us!r}) * 1000) AS BIGINT)"
    dur = "CAST(round(greatest(coalesce(dur, 0), 0) * 1000) AS BIGINT)"
    host = con.sql(
        f"""
        SELECT coalesce(pid, '') AS pid, coalesce(tid, '') AS tid,
               {C.HOST_KIND_SQL} AS kind, coalesce(name, '') AS name,
               {ns} AS start_ns, {dur} AS dur_ns,
               TRY_CAST(args.correlation AS BIGINT) AS correlation,
               args."Call stack" AS call_stack
        FROM ev
        WHERE ph = 'X' AND ts IS NOT NULL AND cat IN {C.HOST_CATS}
        ORDER BY pid, tid, start_ns, dur_ns DESC
        """
    ).to_arrow_table()
    n = host.num_rows
    op_base = store.reserve_ops(max(n, 1))
    thread = _dense_ids(host.column("pid"), host.column("tid"))
    start = host.column("start_ns").to_numpy()
    durs = host.column("dur_ns").to_numpy()
    nested = nest(thread, start, durs)

    # labels: one id per distinct (kind, name); legacy "Call stack" prefixes root events
    kind_name = pc.binary_join_element_wise(
        host.column("kind"), host.column("name"), "\x1f"
    )
    enc = kind_name.combine_chunks().dictionary_encode() if n else pa.array([], pa.string())
    labels = (enc.indices.to_numpy(zero_copy_only=False).astype(np.int64) if n
              else np.zeros(0, dtype=np.int64))
    label_text = enc.dictionary.to_pylist() if n else []
    root_parent, prefix_nodes = _call_stack_prefixes(
        host.column("call_stack"), nested.depth, len(label_text), store
    )
    label_text.extend(prefix_nodes["labels"])
    first_node = store.reserve_nodes(0)
    node, node_parent, node_label = intern_paths(
        nested.depth, nested.parent, labels, root_parent, first_node
    )
    store.reserve_nodes(len(node_parent))
    _append_frames(store, prefix_nodes, node_parent, node_label, label_text, first_node)

    parent = np.where(nested.parent >= 0, nested.parent + op_base, -1)
    host_tbl = pa.table({
        "artifact_id": pa.array(np.full(n, artifact_id, dtype=np.int32)),
        "op_id": pa.array(np.arange(op_base, op_base + n, dtype=np.int64)),
        "pid": host.column("pid"), "tid": host.column("tid"),
        "kind": host.column("kind"), "name": host.column("name"),
        "start_ns": host.column("start_ns"), "dur_ns": host.column("dur_ns"),
        "depth": pa.array(nested.depth),
        "parent": pa.array(parent, mask=parent < 0),
        "correlation": host.column("correlation"),
        "node_id": pa.array(node), "self_ns": pa.array(nested.self_ns),
    })
    store.append("host_ops", host_tbl)

    gpu = con.sql(
        f"""
        SELECT {C.DEVICE_SQL} AS device, {C.STREAM_SQL} AS stream, {C.GPU_KIND_SQL} AS kind,
               coalesce(name, '') AS name, {ns} AS start_ns, {dur} AS dur_ns,
               TRY_CAST(args.correlation AS BIGINT) AS correlation,
               TRY_CAST(args.bytes AS BIGINT) AS bytes,
               regexp_extract(name, 'Memcpy (\\w+)', 1) AS copy_kind,
               regexp_extract(name, '\\(([^)]*)\\)', 1) AS mem_kinds,
               args.grid AS grid, args.block AS block,
               TRY_CAST(args."registers per thread" AS INTEGER) AS regs,
               args."Collective name" AS collective, pid, tid, ts
        FROM ev
        WHERE ph = 'X' AND ts IS NOT NULL AND cat IN {C.GPU_CATS}
        ORDER BY device, stream, start_ns
        """
    ).to_arrow_table()
    m = gpu.num_rows
    names = gpu.column("name").to_pylist() if m else []
    uniq = sorted(set(names))
    fam_of = dict(zip(uniq, kernel_families.classify_many(uniq), strict=True))
    kinds = gpu.column("kind").to_pylist()
    family = [fam_of[nm] if k == "kernel" else "memory" for nm, k in zip(names, kinds, strict=True)]
    gpu_base = store.reserve_ops(max(m, 1))
    con.register("_gpu_src", gpu.append_column("family", pa.array(family, pa.string()))
                 .append_column("gpu_op_id", pa.array(np.arange(gpu_base, gpu_base + m))))
    graph_names = api_roles.names_with_role("graph_launch")
    con.execute(
        f"""
        INSERT INTO gpu_ops (artifact_id, gpu_op_id, device, stream, kind, name, family,
            start_ns, dur_ns, correlation, launch_op_id, via_graph, bytes, copy_kind, mem_kinds,
            grid, block, regs, collective)
        WITH launch AS (
            SELECT correlation, arg_min(op_id, op_id) AS op_id, arg_min(name, op_id) AS name
            FROM host_ops
            WHERE artifact_id = $a AND kind = 'runtime' AND correlation IS NOT NULL
            GROUP BY correlation
        ), flowlink AS ({C.FLOW_LINK_SQL})
        SELECT $a, g.gpu_op_id, g.device, g.stream, g.kind, g.name, g.family,
               g.start_ns, g.dur_ns, g.correlation, coalesce(l.op_id, fl.op_id),
               coalesce(l.name, fl.name) IN (SELECT unnest($graph)),
               g.bytes, nullif(g.copy_kind, ''), nullif(g.mem_kinds, ''), g.grid, g.block,
               g.regs, g.collective
        FROM _gpu_src g
        LEFT JOIN launch l ON l.correlation = g.correlation
        LEFT JOIN flowlink fl ON fl.gpu_op_id = g.gpu_op_id AND l.op_id IS NULL
        """,
        {"a": artifact_id, "graph": graph_names, "base": base_us},
    )
    con.unregister("_gpu_src")


def _dense_ids(pid: pa.ChunkedArray, tid: pa.ChunkedArray) -> np.ndarray:
    if len(pid) == 0:
        return np.zeros(0, dtype=np.int64)
    key = pc.binary_join_element_wise(pid, tid, "\x1f").combine_chunks()
    return key.dictionary_encode().indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _call_stack_prefixes(
    call_stack: pa.ChunkedArray, depth: np.ndarray, first_label: int, store: Store
) -> tuple[np.ndarray | None, dict[str, list[Any]]]:
    """Legacy traces carry python frames as args["Call stack"] on operators (innermost
    first, ';'-separated). Root events with one hang under the chain of those frames."""
    out: dict[str, list[Any]] = {"labels": [], "node": [], "parent": [], "label": []}
    if call_stack.null_count == len(call_stack):
        return None, out
    stacks = call_stack.to_pylist()
    root_parent = np.full(len(stacks), -1, dtype=np.int64)
    chain_node: dict[tuple[str, ...], int] = {}
    label_ids: dict[str, int] = {}
    for i in np.nonzero(depth == 0)[0]:
        s = stacks[i]
        if not s:
            continue
        frames = tuple(f.strip() for f in reversed(s.split(";")) if f.strip())
        parent = -1
        for k in range(1, len(frames) + 1):
            path = frames[:k]
            if path not in chain_node:
                text = "python\x1f" + frames[k - 1]
                if text not in label_ids:
                    label_ids[text] = first_label + len(out["labels"])
                    out["labels"].append(text)
                nid = store.reserve_nodes(1)
                chain_node[path] = nid
                out["node"].append(nid)
                out["parent"].append(parent)
                out["label"].append(label_ids[text])
            parent = chain_node[path]
        root_parent[i] = parent
    return root_parent, out


def _append_frames(
    store: Store,
    prefix: dict[str, list[Any]],
    node_parent: np.ndarray,
    node_label: np.ndarray,
    label_text: list[str],
    first_node: int,
) -> None:
    ids = np.concatenate([np.array(prefix["node"], dtype=np.int64),
                          np.arange(first_node, first_node + len(node_parent), dtype=np.int64)])
    parents = np.concatenate([np.array(prefix["parent"], dtype=np.int64), node_parent])
    labels = np.concatenate([np.array(prefix["label"], dtype=np.int64), node_label])
    if len(ids) == 0:
        return
    text = pa.array(label_text, pa.string()).take(pa.array(labels))
    parts = pc.split_pattern(text, "\x1f", max_splits=1)
    kind = pc.list_element(parts, 0)
    name = pc.list_element(parts, 1)
    # depth of a node = depth of its parent + 1; parents always precede children in `ids`
    pos = {int(v): i for i, v in enumerate(ids)}
    depth = np.zeros(len(ids), dtype=np.int32)
    for i, p in enumerate(parents):
        if p >= 0:
            depth[i] = depth[pos[int(p)]] + 1
    store.append("frames", pa.table({
        "node_id": pa.array(ids), "parent_node": pa.array(parents, mask=parents < 0),
        "name": name, "kind": kind, "depth": pa.array(depth),
    }))
