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
import re
import shutil
import tempfile
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import duckdb
import msgspec
import numpy as np
import pyarrow as pa

from crossview.errors import InputError
from crossview.knowledge import api_roles, kernel_families
from crossview.sources.kineto import categories as C
from crossview.sources.kineto.nesting import intern_paths, nest
from crossview.sources.report import ArtifactReport
from crossview.store.store import Store

KIND = "kineto"
_SPLIT_MIN_BYTES = 8 << 20  # below this, one part is as fast


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
    raw = memoryview(top.traceEvents)
    # keep the metadata, not the reference into the input buffer (so it can be released)
    return msgspec.structs.replace(top, traceEvents=msgspec.Raw(b"")), raw


_SPLIT = re.compile(rb"\}\s*,\s*\{")


def _split_points(raw: memoryview, parts: int) -> list[tuple[int, int]]:
    """Cut the events array into `parts` byte ranges at event boundaries (best effort).

    A candidate boundary is `}, {` near each cut; a wrong guess (inside a string) makes a part
    invalid JSON, which the caller detects and answers by reading the array whole.
    """
    n = len(raw)
    cuts: list[tuple[int, int]] = []  # (end of part i incl. '}', start of part i+1 at '{')
    for i in range(1, parts):
        at = n * i // parts
        m = _SPLIT.search(raw[at : at + (1 << 22)])
        if m is None:
            return []
        cuts.append((at + m.start() + 1, at + m.end() - 1))
    return cuts


def _write_parts(raw: memoryview, cuts: list[tuple[int, int]], tmpdir: str) -> list[str]:
    """Write the parts as standalone JSON arrays, in parallel threads (I/O drops the GIL)."""
    bounds = [0] + [c for pair in cuts for c in pair] + [len(raw)]
    ranges = [(bounds[2 * i], bounds[2 * i + 1]) for i in range(len(cuts) + 1)]
    paths: list[str] = []
    jobs = []
    for k, (a, b) in enumerate(ranges):
        fd, tmp = tempfile.mkstemp(suffix=".json", prefix="crossview-", dir=tmpdir)
        os.close(fd)
        paths.append(tmp)
        pieces = [b"[" if k else b"", raw[a:b], b"]" if k < len(ranges) - 1 else b""]
        jobs.append((tmp, pieces))

    def write(job: tuple[str, list[bytes | memoryview]]) -> None:
        with open(job[0], "wb") as f:
            for piece in job[1]:
                f.write(piece)

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        list(pool.map(write, jobs))
    return paths


def _stage(path: Path, tmpdir: str, parts: int) -> tuple[_Top, list[str]]:
    """Locate the events array and write it to `parts` JSON-array files; the input buffer
    (mmap or gunzipped bytes) is released before DuckDB parses, to bound peak memory."""
    data = _load_bytes(path)
    try:
        top, raw = _locate(path, data)
        cuts = _split_points(raw, parts) if len(raw) > _SPLIT_MIN_BYTES and parts > 1 else []
        files = _write_parts(raw, cuts, tmpdir)
        del raw
    finally:
        if isinstance(data, mmap.mmap):
            try:
                data.close()
            except BufferError:
                pass
        del data
    return top, files


def _join_parts(files: list[str], tmpdir: str) -> str:
    """Rebuild the whole array from its parts: drop the added brackets, rejoin with ','."""
    fd, whole = tempfile.mkstemp(suffix=".json", prefix="crossview-", dir=tmpdir)
    with os.fdopen(fd, "wb") as out:
        for k, f in enumerate(files):
            with open(f, "rb") as src:
                if k:
                    src.seek(1)
                    out.write(b",")
                size = os.fstat(src.fileno()).st_size - (1 if k else 0)
                if k < len(files) - 1:
                    size -= 1
                shutil.copyfileobj(_Limited(src, size), out, 1 << 22)
            os.unlink(f)
    return whole


class _Limited:
    def __init__(self, f: Any, n: int) -> None:
        self.f, self.n = f, n

    def read(self, k: int = -1) -> bytes:
        k = self.n if k < 0 else min(k, self.n)
        b = self.f.read(k)
        self.n -= len(b)
        return b


def _parse(path: Path, con: duckdb.DuckDBPyConnection, files: list[str], tmpdir: str
           ) -> list[str]:
    """Parse the staged files into temp table `ev` (in parallel when split); returns
    problems (skipped records). A split not at an event boundary is re-read whole."""
    problems: list[str] = []
    query = (
        "CREATE OR REPLACE TEMP TABLE ev AS SELECT * FROM read_json("
        f"$files, format='array', columns={C.COLUMNS}, maximum_object_size=268435456"
        "__EXTRA__) WHERE ph IN ('X', 's', 'f')"
    )
    if len(files) > 1:
        try:
            con.execute(query.replace("__EXTRA__", ""), {"files": files})
            return problems
        except duckdb.Error:
            files = [_join_parts(files, tmpdir)]  # a cut inside a string, or a bad record
    try:
        con.execute(query.replace("__EXTRA__", ""), {"files": files})
    except (duckdb.InvalidInputException, duckdb.ConversionException) as e:
        first = str(e).splitlines()[0]
        if "Expected OBJECT" in first and "record/value 1:" in first:
            raise InputError(
                path, "not a PyTorch-profiler trace: traceEvents holds no event objects",
                "unsupported",
            ) from None
        try:
            con.execute(query.replace("__EXTRA__", ", ignore_errors=true"), {"files": files})
        except duckdb.Error as e2:
            raise InputError(path, f"invalid trace events: {str(e2).splitlines()[0]}") from None
        problems.append(f"some events could not be read and were skipped ({first})")
    except duckdb.Error as e:
        msg = str(e).splitlines()[0]
        raise InputError(path, f"invalid trace events: {msg}") from None
    return problems


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    con = store.con
    threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
    tmpdir = tempfile.mkdtemp(prefix="crossview-")
    try:
        top, files = _stage(path, tmpdir, threads)
        problems = _parse(path, con, files, tmpdir)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    n_events, n_timed = con.execute(
        "SELECT count(*), count(*) FILTER (ts IS NOT NULL) FROM ev"
    ).fetchall()[0]
    if n_events == 0:
        con.execute("DROP TABLE ev")
        raise InputError(
            path, "traceEvents holds no timed events (X/s/f): the profiler recorded nothing "
            "(was the schedule's active window reached?)", "empty",
        )
    if n_timed == 0:
        con.execute("DROP TABLE ev")
        raise InputError(path, "no timed events: not a PyTorch-profiler trace", "unsupported")
    artifact_id = store.new_artifact_id()
    base_us = con.execute("SELECT floor(min(ts)) FROM ev WHERE ts IS NOT NULL").fetchall()[0][0]
    _ingest(store, artifact_id, float(base_us))
    con.execute("DROP TABLE ev")
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
    # Host events stay in DuckDB (strings never become Python objects); only four integer
    # columns go to numpy for nesting, and the results come back joined by position.
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _host AS
        SELECT coalesce(pid, '') AS pid, coalesce(tid, '') AS tid,
               {C.HOST_KIND_SQL} AS kind, coalesce(name, '') AS name,
               {ns} AS start_ns, {dur} AS dur_ns,
               TRY_CAST(args.correlation AS BIGINT) AS correlation,
               args."Call stack" AS call_stack
        FROM ev
        WHERE ph = 'X' AND ts IS NOT NULL AND cat IN {C.HOST_CATS}
        ORDER BY pid, tid, start_ns, dur_ns DESC
        """
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE _labels AS SELECT kind, name,"
        " CAST(row_number() OVER (ORDER BY kind, name) - 1 AS BIGINT) AS label"
        " FROM (SELECT DISTINCT kind, name FROM _host)"
    )
    cols = con.execute(
        "SELECT CAST(dense_rank() OVER (ORDER BY h.pid, h.tid) AS BIGINT) AS thread,"
        " h.start_ns, h.dur_ns, l.label FROM _host h JOIN _labels l USING (kind, name)"
        " ORDER BY h.rowid"
    ).fetchnumpy()
    thread = np.asarray(cols["thread"], dtype=np.int64)
    start = np.asarray(cols["start_ns"], dtype=np.int64)
    durs = np.asarray(cols["dur_ns"], dtype=np.int64)
    labels = np.asarray(cols["label"], dtype=np.int64)
    del cols
    n = len(start)
    nested = nest(thread, start, durs)
    del thread, start

    label_rows = con.execute("SELECT kind, name FROM _labels ORDER BY label").fetchall()
    stacks = con.execute(
        "SELECT rowid, call_stack FROM _host WHERE call_stack IS NOT NULL AND call_stack <> ''"
    ).fetchall()
    root_parent, prefix = _call_stack_prefixes(stacks, nested.depth, len(label_rows), store)
    label_rows.extend(prefix["labels"])
    first_node = store.reserve_nodes(0)
    node, node_parent, node_label = intern_paths(
        nested.depth, nested.parent, labels, root_parent, first_node
    )
    store.reserve_nodes(len(node_parent))
    _append_frames(store, prefix, node_parent, node_label, label_rows, first_node)

    op_base = store.reserve_ops(max(n, 1))
    parent = np.where(nested.parent >= 0, nested.parent + op_base, -1)
    res = pa.table({
        "depth": pa.array(nested.depth),
        "parent": pa.array(parent, mask=parent < 0),
        "node_id": pa.array(node), "self_ns": pa.array(nested.self_ns),
    })
    del nested, parent, node, durs, labels
    con.register("_nest", res)
    con.execute(
        f"""
        INSERT INTO host_ops (artifact_id, op_id, pid, tid, kind, name, start_ns, dur_ns,
                              depth, parent, correlation, node_id, self_ns)
        SELECT {artifact_id}, {op_base} + h.rid, h.pid, h.tid, h.kind, h.name, h.start_ns,
               h.dur_ns, r.depth, r.parent, h.correlation, r.node_id, r.self_ns
        FROM (SELECT rowid AS rid, * FROM _host ORDER BY rowid) h POSITIONAL JOIN _nest r
        """
    )
    con.unregister("_nest")
    del res
    con.execute("DROP TABLE _host")
    con.execute("DROP TABLE _labels")

    # GPU ops: one SQL pass; kernel families from the (few) distinct names
    names = [r[0] for r in con.execute(
        f"SELECT DISTINCT coalesce(name, '') FROM ev WHERE ph = 'X' AND cat IN {C.GPU_CATS}"
    ).fetchall()]
    fam = pa.table({"fname": pa.array(names, pa.string()),
                    "family": pa.array(kernel_families.classify_many(names), pa.string())})
    con.register("_families", fam)
    gpu_base = store.reserve_ops(0)
    graph_names = api_roles.names_with_role("graph_launch")
    con.execute(
        f"""
        CREATE OR REPLACE TEMP TABLE _gpu_src AS
        SELECT {C.DEVICE_SQL} AS device, {C.STREAM_SQL} AS stream, {C.GPU_KIND_SQL} AS kind,
               coalesce(name, '') AS name, {ns} AS start_ns, {dur} AS dur_ns,
               TRY_CAST(args.correlation AS BIGINT) AS correlation,
               TRY_CAST(args.bytes AS BIGINT) AS bytes,
               CASE WHEN cat IN {C.COPY_CATS} THEN nullif(regexp_extract(
                   name, 'Memcpy (\\w+)', 1), '') END AS copy_kind,
               CASE WHEN cat IN {C.COPY_CATS} THEN nullif(regexp_extract(
                   name, '\\(([^)]*)\\)', 1), '') END AS mem_kinds,
               args.grid AS grid, args.block AS block,
               TRY_CAST(args."registers per thread" AS INTEGER) AS regs,
               args."Collective name" AS collective, pid, tid, ts
        FROM ev
        WHERE ph = 'X' AND ts IS NOT NULL AND cat IN {C.GPU_CATS}
        """
    )
    m = con.execute("SELECT count(*) FROM _gpu_src").fetchall()[0][0]
    store.reserve_ops(max(m, 1))
    con.execute(
        f"""
        INSERT INTO gpu_ops (artifact_id, gpu_op_id, device, stream, kind, name, family,
            start_ns, dur_ns, correlation, launch_op_id, via_graph, bytes, copy_kind, mem_kinds,
            grid, block, regs, collective)
        WITH launch AS (
            SELECT correlation, min(op_id) AS op_id, arg_min(name, op_id) AS name
            FROM host_ops
            WHERE artifact_id = $a AND kind = 'runtime' AND correlation IS NOT NULL
            GROUP BY correlation
        ), flowlink AS ({C.FLOW_LINK_SQL.replace("__GPU_BASE__", str(gpu_base))})
        SELECT $a, g.gpu_op_id, g.device, g.stream, g.kind, g.name,
               CASE WHEN g.kind = 'kernel' THEN f.family ELSE 'memory' END,
               g.start_ns, g.dur_ns, g.correlation, coalesce(l.op_id, fl.op_id),
               coalesce(coalesce(l.name, fl.name) IN (SELECT unnest($graph)), false),
               g.bytes, g.copy_kind, g.mem_kinds, g.grid, g.block, g.regs, g.collective
        FROM (SELECT {gpu_base} + rowid AS gpu_op_id, * FROM _gpu_src) g
        LEFT JOIN _families f ON f.fname = g.name
        LEFT JOIN launch l ON l.correlation = g.correlation
        LEFT JOIN flowlink fl ON fl.gpu_op_id = g.gpu_op_id
        ORDER BY g.device, g.stream, g.start_ns
        """,
        {"a": artifact_id, "graph": graph_names, "base": base_us},
    )
    con.execute("DROP TABLE _gpu_src")
    con.unregister("_families")


def _call_stack_prefixes(
    stacks: list[tuple[int, str]], depth: np.ndarray, first_label: int, store: Store
) -> tuple[np.ndarray | None, dict[str, list[Any]]]:
    """Legacy traces carry python frames as args["Call stack"] on operators (innermost
    first, ';'-separated). Root events with one hang under the chain of those frames."""
    out: dict[str, list[Any]] = {"labels": [], "node": [], "parent": [], "label": []}
    if not stacks:
        return None, out
    root_parent = np.full(len(depth), -1, dtype=np.int64)
    chain_node: dict[tuple[str, ...], int] = {}
    label_ids: dict[str, int] = {}
    for i, s in stacks:
        if depth[i] != 0:
            continue
        frames = tuple(f.strip() for f in reversed(s.split(";")) if f.strip())
        parent = -1
        for k in range(1, len(frames) + 1):
            path = frames[:k]
            if path not in chain_node:
                if frames[k - 1] not in label_ids:
                    label_ids[frames[k - 1]] = first_label + len(out["labels"])
                    out["labels"].append(("python", frames[k - 1]))
                nid = store.reserve_nodes(1)
                chain_node[path] = nid
                out["node"].append(nid)
                out["parent"].append(parent)
                out["label"].append(label_ids[frames[k - 1]])
            parent = chain_node[path]
        root_parent[i] = parent
    return root_parent, out


def _append_frames(
    store: Store,
    prefix: dict[str, list[Any]],
    node_parent: np.ndarray,
    node_label: np.ndarray,
    label_rows: list[tuple[str, str]],
    first_node: int,
) -> None:
    ids = np.concatenate([np.array(prefix["node"], dtype=np.int64),
                          np.arange(first_node, first_node + len(node_parent), dtype=np.int64)])
    parents = np.concatenate([np.array(prefix["parent"], dtype=np.int64), node_parent])
    labels = np.concatenate([np.array(prefix["label"], dtype=np.int64), node_label])
    if len(ids) == 0:
        return
    take = pa.array(labels)
    kind = pa.array([k for k, _ in label_rows], pa.string()).take(take)
    name = pa.array([nm for _, nm in label_rows], pa.string()).take(take)
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
