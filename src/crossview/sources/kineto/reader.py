"""PyTorch-profiler (Kineto) Chrome-trace reader: `.json` / `.json.gz`, modern and legacy schemas.

How it streams: msgspec locates the raw `traceEvents` array and decodes only the small top-level
metadata (deviceProperties, distributedInfo); DuckDB's C++ JSON reader then parses the events
straight into a columnar table with a fixed schema. No Python object is made per event. Nesting,
call-tree interning and kernel→launch linking are array/SQL operations (see nesting.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from crossview import progress
from crossview.errors import InputError
from crossview.kernels import families as kernel_families
from crossview.knowledge import api_roles
from crossview.sources import tempdirs, timeline_checks
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.kineto import categories as C
from crossview.sources.kineto import clock, host_table, staging, value_types
from crossview.sources.kineto.flows import link_by_flows
from crossview.sources.kineto.host_nesting import nest_host
from crossview.sources.kineto.launch_link import launch_table
from crossview.sources.nesting_batches import TooDeep
from crossview.store.store import Store, cursor_of, scratch_of

KIND = "kineto"
# Named pipes are faster but DuckDB buffers a pipe whole (peak memory +~200 MiB on 330 MB);
# temp files keep memory bounded. Measured in bench/README.md.
STREAM = False


def sniff(head: bytes, path: Path) -> bool:
    """Cheap content check on the first bytes (already gunzipped)."""
    return b'"traceEvents"' in head or (head.lstrip()[:1] == b"[" and b'"ph"' in head)


_EVENTS_SQL = (
    # a regular (not TEMP) table: the GPU insert reads it from a second connection; in the
    # store's scratch catalog (__EV__: store.scratch_of), which no checkpoint compresses.
    # `ph` is 'X' on every row kept: not stored
    f"CREATE OR REPLACE TABLE __EV__ AS SELECT * EXCLUDE (ph), {C.SIDE_SQL} AS side FROM read_json("
    f"$files, format='array', columns={C.COLUMNS}, maximum_object_size=16777216"
    "__EXTRA__) WHERE ph = 'X'"
)


def _events_sql(con: duckdb.DuckDBPyConnection, extra: str) -> str:
    return _EVENTS_SQL.replace("__EV__", scratch_of(con, "ev")).replace("__EXTRA__", extra)


def _parse_events(path: Path, con: duckdb.DuckDBPyConnection, tmpdir: str, threads: int
                  ) -> tuple[staging.TraceMeta, list[str]]:
    """Stage and parse the events into temp table `ev`; returns (metadata, problems).

    First try: fast locate, split, streamed, strict. Any failure → second try: exact locate,
    one piece, and a lenient parse that says what it skipped or why it cannot read.
    """
    staged = staging.stage(path, tmpdir, threads, exact=False, stream=STREAM)
    try:
        con.execute(_events_sql(con, ""), {"files": staged.files})
        return staged.meta, value_types.check(con, staged.files)
    except duckdb.Error:
        pass
    finally:
        staged.finish()
    for f in staged.files:
        with contextlib.suppress(OSError):
            os.unlink(f)
    staged = staging.stage(path, tmpdir, 1, exact=True, stream=False)
    try:
        con.execute(_events_sql(con, ""), {"files": staged.files})
        return staged.meta, value_types.check(con, staged.files)
    except duckdb.Error as e:
        return staged.meta, _parse_lenient(path, con, staged.files, e)


def _parse_lenient(path: Path, con: duckdb.DuckDBPyConnection, files: list[str],
                   error: duckdb.Error) -> list[str]:
    """The strict parse failed: say exactly why, or read what can be read and say so."""
    if isinstance(error, duckdb.OutOfMemoryException):
        raise error  # the memory limit, not the file: the CLI says so in one line
    first = str(error).splitlines()[0]
    if isinstance(error, duckdb.InvalidInputException | duckdb.ConversionException):
        if "Expected OBJECT" in first and "record/value 1:" in first:
            raise InputError(
                path, "not a PyTorch-profiler trace: traceEvents holds no event objects",
                "unsupported",
            ) from None
        try:
            con.execute(_events_sql(con, ", ignore_errors=true"),
                        {"files": files})
        except duckdb.OutOfMemoryException:
            raise
        except duckdb.Error as e2:
            raise InputError(path, f"invalid trace events: {str(e2).splitlines()[0]}") from None
        return [f"some events could not be read and were skipped ({first})",
                *value_types.check(con, files, ", ignore_errors=true")]
    raise InputError(path, f"invalid trace events: {first}")


_HEAD_BYTES = 1 << 20  # as the fast locate searches


def _refuse_early(path: Path) -> None:
    """A plain file handed over by its suffix alone (its head does not sniff as a trace):
    the exact locate says what it is — or finds the events after all — with no temp folder
    made and removed for it (2,000 such files: ~6 s of folder churn, issue 43)."""
    with open(path, "rb") as f:
        head = f.read(_HEAD_BYTES)
    if head[:2] == b"\x1f\x8b" or sniff(head, path):
        return
    data = staging.load(path)
    try:
        staging.locate_exact(path, data)
    finally:
        if hasattr(data, "close"):
            data.close()


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    _refuse_early(path)
    # no checkpoint of DuckDB's own inside; compacted at the end past store_compact_after_rows
    # new op rows, else by the analysis (decision 0903)
    with store.held_checkpoints():
        return _read(path, store)


def _read(path: Path, store: Store) -> ArtifactReport:
    con = store.con
    threads = int(con.execute("SELECT current_setting('threads')").fetchall()[0][0])
    tmpdir = tempdirs.make("kineto")  # swept by the next run if this one is killed
    cleanup: threading.Thread | None = None
    try:
        progress.current().phase("parsing JSON")
        meta, problems = _parse_events(path, con, tmpdir, threads)
        scan = _scan(con)  # counted, reported skips: never "GPU idle 100%"
        damaged = scan.problems
        problems += damaged
        # temp files can be hundreds of MB: free them while ingest runs
        cleanup = threading.Thread(target=shutil.rmtree, args=(tmpdir, True))
        cleanup.start()
        n_events, base_us = scan.events, scan.base_us
        if n_events == 0:
            con.execute("DROP TABLE ev")
            raise InputError(
                path, "traceEvents holds no timed (ph X) events: the profiler recorded "
                "nothing (was the schedule's active window reached?)", "empty",
            )
        artifact_id = store.new_artifact_id()
        progress.current().phase(f"nesting and linking {int(n_events):,} events")
        try:
            _ingest(store, artifact_id, float(base_us), scan)
        except TooDeep as e:  # refused alone, before any call tree is built over it
            con.execute("DROP TABLE IF EXISTS ev")
            store.discard(artifact_id)
            raise InputError(path, str(e)) from None
        except (duckdb.Error, OverflowError, ValueError) as e:
            # hostile values (a timestamp of 1e300, …) that survive parsing but not the
            # conversion to integer ns
            con.execute("DROP TABLE IF EXISTS ev")
            store.discard(artifact_id)
            raise InputError(path, "events cannot be normalized (timestamps or durations out "
                             f"of range?): {str(e).splitlines()[0]}") from None
        con.execute("DROP TABLE ev")
        if scan.need_flows:
            link_by_flows(store, artifact_id, path, float(base_us))
    finally:
        if cleanup is not None:
            cleanup.join()
        tempdirs.remove(tmpdir)
    bad_props = _devices(store, artifact_id, meta)
    damaged += bad_props
    problems += bad_props
    dist = meta.distributedInfo or staging.DistInfo()
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
    status = "partial" if problems else "ok"  # events skipped or values ignored
    problems += timeline_checks.doubts(store, artifact_id)  # all read, but times doubted
    store.add_artifact(
        artifact_id=artifact_id, path=str(path), kind=KIND, bytes=path.stat().st_size,
        status=status, problems=problems, rigor="L2", events=int(n_events),
        rank=dist.rank, world_size=dist.world_size, backend=dist.backend,
        trace_base_ns=int(base_us) * 1000,
        clock_epoch_ns=clock.epoch_base_ns(meta, int(base_us) * 1000),
        driver_cuda=clock.driver_cuda(meta),
    )
    return ArtifactReport(path=str(path), kind=KIND, status=status, problems=problems,
                          artifact_id=artifact_id)


# |ts| in µs past which ts × 1000 ns leaves int64 headroom (2^62 ns ≈ 146 years): a time
# that far out is damage, not a clock (Kineto writes µs since the epoch or since boot)
_TS_MAX_US = float(2**62) / 1000.0
# any event field op_args may keep (which host events keep one is decided at the insert)
_ARGS_PRESENT = ('(args."Input Dims" IS NOT NULL OR args."Input type" IS NOT NULL'
                 ' OR args."In msg nelems" IS NOT NULL OR args."Group size" IS NOT NULL'
                 " OR args.dtype IS NOT NULL)")


@dataclass(frozen=True)
class Scan:
    """What one pass over `ev` learns before ingest (counts over the events kept)."""
    problems: list[str]
    rows: int  # rows `ev` was made with: its rowids stay below this
    events: int
    base_us: float  # floor of the earliest ts kept (NaN when none is)
    need_flows: bool  # some GPU op has no correlation id
    has_stacks: bool  # some event carries a legacy "Call stack" (host ones read it)
    has_args: bool  # some event carries a recorded input (host ones keep them)


def _scan(con: duckdb.DuckDBPyConnection) -> Scan:
    """Events whose time cannot be true are taken out and counted, so the numbers computed
    from the rest stay right and the artifact says it was read in part: a `ts` missing,
    non-numeric, non-finite or out of range; a GPU event whose `dur` is missing, negative or
    non-finite. GPU events all of zero duration leave nothing to measure: said too. One
    aggregate pass also counts what ingest needs to know about the events kept."""
    ok_ts = f"(ts IS NOT NULL AND isfinite(ts) AND abs(ts) < {_TS_MAX_US!r})"
    bad_dur = "(dur IS NULL OR NOT isfinite(dur) OR dur < 0)"
    gpu = C.IS_GPU
    # flags computed once per row (g: never NULL, so `keep` is exactly "not deleted" below)
    flags = (f"SELECT ts, dur, {ok_ts} AS ok, {gpu} AS g, {bad_dur} AS bd,"
             " args.correlation IS NULL AS no_corr, args.\"Call stack\" AS stack,"
             f" {_ARGS_PRESENT} AS has_args FROM ev")
    keep = "(ok AND NOT (g AND bd))"
    (rows, bad_ts, bad_gpu, n_gpu, zero, events, base_us, no_corr, stacks, args
     ) = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE NOT ok),"
        " count(*) FILTER (WHERE ok AND g AND bd), count(*) FILTER (WHERE ok AND g),"
        " count(*) FILTER (WHERE ok AND g AND dur = 0),"
        f" count(*) FILTER (WHERE {keep}), floor(min(ts) FILTER (WHERE {keep})),"
        f" count(*) FILTER (WHERE {keep} AND g AND no_corr),"
        f" count(stack), count(*) FILTER (WHERE has_args) FROM ({flags})"
    ).fetchall()[0]
    out: list[str] = []
    if bad_ts:
        out.append(f"partial: {bad_ts:,} event(s) with a missing, non-numeric or out-of-range "
                   "`ts` were skipped")
    if bad_gpu:
        out.append(f"partial: {bad_gpu:,} of {n_gpu:,} GPU event(s) with a missing, negative "
                   "or non-finite `dur` were skipped (GPU busy time counts only the rest)")
    if zero and zero == n_gpu - bad_gpu:
        out.append(f"partial: all {zero:,} usable GPU event(s) have `dur` 0: no GPU time can "
                   "be measured from this trace")
    if bad_ts or bad_gpu:
        con.execute(f"DELETE FROM ev WHERE NOT {ok_ts} OR ({gpu} AND {bad_dur})")
    return Scan(out, int(rows), int(events), float("nan") if base_us is None else base_us,
                no_corr > 0, stacks > 0, args > 0)


def _devices(store: Store, artifact_id: int, top: staging.TraceMeta) -> list[str]:
    rows: dict[str, list[Any]] = {k: [] for k in (
        "artifact_id", "device", "name", "sm_count", "mem_bytes", "cc_major", "cc_minor")}
    for i, d in enumerate(top.deviceProperties or []):
        rows["artifact_id"].append(artifact_id)
        rows["device"].append(d.id if d.id is not None and 0 <= d.id < 1 << 31 else i)
        rows["name"].append(d.name or None)
        rows["sm_count"].append(_int(d.numSms, 1 << 31))
        rows["mem_bytes"].append(_int(d.totalGlobalMem, 1 << 63))
        rows["cc_major"].append(_int(d.computeMajor, 1 << 31))
        rows["cc_minor"].append(_int(d.computeMinor, 1 << 31))
    store.append("devices", pa.table(rows))
    props = top.deviceProperties or []
    given = sum(v is not None for d in props for v in (
        d.numSms, d.totalGlobalMem, d.computeMajor, d.computeMinor))
    kept = sum(v is not None for k in ("sm_count", "mem_bytes", "cc_major", "cc_minor")
               for v in rows[k])
    bad = given - kept + sum(d.id is not None and not 0 <= d.id < 1 << 31 for d in props)
    return [f"partial: {bad} deviceProperties value(s) out of range were ignored"] if bad else []


def _int(v: int | None, bound: int) -> int | None:
    """A deviceProperties number, or None when it cannot be one (beyond its column's range:
    a hostile 10**30 must not fail the whole trace)."""
    return v if v is not None and -bound <= v < bound else None


def _cores() -> int:
    """CPUs this process may run on (`taskset -c 0`: 1)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def _ingest(store: Store, artifact_id: int, base_us: float, scan: Scan) -> None:
    """ev → host_ops, frames, gpu_ops. With two cores or more the GPU insert runs on a
    second DuckDB connection while numpy nests the host events (DuckDB drops the GIL),
    overlapping the two; on one core they run one after the other (taking turns on one
    core, the two cost ~0.05 s more CPU and up to 0.3 s more wall on the 334 MB trace:
    docs/decisions/0604). The nesting goes batch by batch (host_nesting.py) so its memory
    is bounded."""
    con = store.con
    ns = f"CAST({int(base_us)} AS BIGINT) * 1000 + CAST(round((ts - {base_us!r}) * 1000) AS BIGINT)"
    dur = "CAST(round(greatest(coalesce(dur, 0), 0) * 1000) AS BIGINT)"
    host = host_table.build(con, ns, dur)
    op_base = store.reserve_ops(max(host.n, 1))
    gpu_base = store.reserve_ops(scan.rows + 1)  # gpu op id = gpu_base + its rowid in ev
    errors: list[BaseException] = []

    launch = (None if host.cols is None else
              launch_table(host, op_base, api_roles.names_with_role("graph_launch")))

    def gpu() -> None:
        try:
            _insert_gpu_ops(cursor_of(con), artifact_id, op_base, gpu_base, ns, dur, launch)
        except BaseException as e:  # re-raised on the calling thread
            errors.append(e)

    if _cores() > 1:
        worker = threading.Thread(target=gpu)
        worker.start()
        try:
            nest_host(store, artifact_id, op_base, host, scan.has_stacks)
        finally:
            worker.join()
    else:
        gpu()
        if not errors:
            nest_host(store, artifact_id, op_base, host, scan.has_stacks)
    if errors:
        raise errors[0]
    if scan.has_args:
        host_table.insert_args(con, artifact_id, op_base, host)
    host.drop(con)
    for t in ("_labels", "_threads"):
        con.execute(f"DROP TABLE {t}")


def _insert_gpu_args(cur: duckdb.DuckDBPyConnection, artifact_id: int, gpu_base: int) -> None:
    """op_args ← a collective kernel's recorded sizes (gpu_op_id as _insert_gpu_ops makes it)."""
    cur.execute(
        f"""
        INSERT INTO op_args (artifact_id, op_id, on_gpu, in_nelems, out_nelems, group_size,
            dtype)
        SELECT $a, {gpu_base} + rowid, true, TRY_CAST(args."In msg nelems" AS BIGINT),
               TRY_CAST(args."Out msg nelems" AS BIGINT),
               TRY_CAST(args."Group size" AS INTEGER), args.dtype
        FROM ev WHERE {C.IS_GPU} AND (args."In msg nelems" IS NOT NULL
            OR args."Group size" IS NOT NULL OR args.dtype IS NOT NULL)
        """,
        {"a": artifact_id},
    )


# each correlation id's launching call when DuckDB sorted `_host` (else launch_link.py)
_LAUNCH_SQL = """
    SELECT h.correlation, {op_base} + min(h.rowid) AS op_id,
           bool_or(l.name IN (SELECT unnest($graph))) AS graph
    FROM _host h JOIN _labels l USING (label)
    WHERE l.kind = 'runtime' AND h.correlation IS NOT NULL
    GROUP BY h.correlation"""


def _insert_gpu_ops(cur: duckdb.DuckDBPyConnection, artifact_id: int, op_base: int,
                    gpu_base: int, ns: str, dur: str, launch: pa.Table | None = None) -> None:
    """GPU ops in one SQL pass: kernel families and copy kinds from the (few) distinct names;
    ids from rowid; the launching call by correlation (op id = op_base + its row in _host):
    from `launch` (launch_link.launch_table) when given, else from `_host` in SQL."""
    names = [r[0] for r in cur.execute(
        f"SELECT DISTINCT coalesce(name, '') FROM ev WHERE {C.IS_GPU}"
    ).fetchall()]
    fam = pa.table({"fname": pa.array(names, pa.string()),
                    "family": pa.array(kernel_families.classify_many(names), pa.string())})
    cur.register("_families", fam)
    params: dict[str, Any] = {"a": artifact_id}
    if launch is None:
        launch_sql = _LAUNCH_SQL.replace("{op_base}", str(op_base))
        params["graph"] = api_roles.names_with_role("graph_launch")
    else:
        cur.register("_launch", launch)
        launch_sql = "SELECT correlation, op_id, graph FROM _launch"
    cur.execute(
        f"""
        INSERT INTO gpu_ops (artifact_id, gpu_op_id, device, stream, kind, name, family,
            start_ns, dur_ns, correlation, launch_op_id, via_graph, bytes, copy_kind, mem_kinds,
            grid, block, regs, collective, process_group, coll_seq)
        WITH launch AS ({launch_sql}
        ), f AS (
            -- a copy's direction and memory kinds, matched once per distinct name
            SELECT fname, family, nullif(regexp_extract(fname, 'Memcpy (\\w+)', 1), '')
                       AS copy_kind,
                   nullif(regexp_extract(fname, '\\(([^)]*)\\)', 1), '') AS mem_kinds
            FROM _families
        ), g AS (
            SELECT {gpu_base} + rowid AS gpu_op_id, *,
                   TRY_CAST(args.correlation AS BIGINT) AS corr
            FROM ev WHERE {C.IS_GPU}
        )
        SELECT $a, g.gpu_op_id, {C.DEVICE_SQL}, {C.STREAM_SQL}, {C.GPU_KIND_SQL},
               coalesce(g.name, ''),
               CASE WHEN g.cat IN {C.COPY_CATS} THEN 'memory' ELSE f.family END,
               {ns}, {dur}, g.corr, l.op_id, coalesce(l.graph, false),
               TRY_CAST(args.bytes AS BIGINT),
               CASE WHEN g.cat IN {C.COPY_CATS} THEN f.copy_kind END,
               CASE WHEN g.cat IN {C.COPY_CATS} THEN f.mem_kinds END,
               args.grid, args.block, TRY_CAST(args."registers per thread" AS INTEGER),
               args."Collective name", args."Process Group Name",
               TRY_CAST(args."Seq" AS BIGINT)
        FROM g
        LEFT JOIN f ON f.fname = coalesce(g.name, '')
        LEFT JOIN launch l ON l.correlation = g.corr
        """,
        params,
    )
    cur.unregister("_families")
    if launch is not None:
        cur.unregister("_launch")
    _insert_gpu_args(cur, artifact_id, gpu_base)
    cur.close()
