"""The per-artifact tasks ingest fans out: hash a file; read one file into Parquet.

Both are plain top-level functions over small picklable dataclasses, so a process pool or a
Dask cluster runs them alike (lake/fanout.py). A task never raises for bad input: the
problem comes back in its result and the rest of the batch goes on.
"""

from __future__ import annotations

import hashlib
import os
import resource
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from crossview.errors import InputError
from crossview.lake.columns import columns
from crossview.lake.manifest import ID_SHIFT
from crossview.sources import guard
from crossview.sources.registry import read_all
from crossview.store.schema import TABLES
from crossview.store.store import Store

# Id columns offset per artifact (manifest.ID_SHIFT). tests/test_lake.py fails when a new
# BIGINT id-like column appears in TABLES without being classified here or in NOT_IDS.
ID_COLUMNS: dict[str, tuple[str, ...]] = {
    "gpu_ops": ("gpu_op_id", "launch_op_id"),
    "host_ops": ("op_id", "parent", "node_id"),
    "frames": ("node_id", "parent_node"),
    "samples": ("node_id",),
    "profiled_kernels": ("kernel_id",),
    "kernel_metrics": ("kernel_id",),
    "kernel_rules": ("kernel_id",),
    "op_args": ("op_id",),
}
# per-artifact values that only ever join within one artifact_id: kept as read
NOT_IDS = frozenset({"correlation", "trial", "request", "seq"})
_CHUNK = 1 << 20

if TYPE_CHECKING:
    from crossview.store.store import Store


@dataclass(frozen=True)
class HashTask:
    path: str


@dataclass
class HashResult:
    path: str
    sha256: str | None
    bytes: int
    problem: str | None = None


def hash_file(task: HashTask) -> HashResult:
    h = hashlib.sha256()
    try:
        guard.check_open(task.path)  # a FIFO or a device is refused before it is opened
    except InputError as e:
        return HashResult(task.path, None, 0, e.problem)
    try:
        with open(task.path, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        return HashResult(task.path, h.hexdigest(), os.path.getsize(task.path))
    except OSError as e:
        return HashResult(task.path, None, 0, f"cannot read: {e.strerror or e}")


@dataclass(frozen=True)
class IngestTask:
    path: str
    sha256: str
    artifact_id: int  # lake-wide, allocated by the parent before fan-out
    lake: str
    campaign: str
    run: str
    threads: int = 1  # DuckDB threads in this worker
    memory_limit: str | None = None  # DuckDB memory_limit in this worker ("2GB"); spills past it


@dataclass
class IngestResult:
    path: str
    sha256: str
    artifact_id: int
    kind: str
    status: str  # ok | empty | invalid | unsupported | error
    problems: list[str] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    peak_rss_kib: int = 0  # the worker process's peak so far (ru_maxrss)
    pid: int = 0


def _select(table: str, artifact_id: int) -> str:
    key = artifact_id << ID_SHIFT
    ids = ID_COLUMNS.get(table, ())
    out = []
    for c, _ in columns(table):
        if c == "artifact_id":
            out.append(f"CAST({artifact_id} AS INTEGER) AS artifact_id")
        elif c in ids:
            out.append(f'"{c}" + {key} AS "{c}"')
        else:
            out.append(f'"{c}"')
    return ", ".join(out)


def ingest_file(task: IngestTask) -> IngestResult:
    """Read one artifact into its own store and write each non-empty table as Parquet."""
    res = IngestResult(task.path, task.sha256, task.artifact_id, "unknown", "error",
                       pid=os.getpid())
    # past the limit the store spills to its temp folder instead of failing (bounded memory)
    store = Store(threads=task.threads, memory_limit=task.memory_limit)
    try:
        reports = read_all([Path(task.path)], store)
        rep = reports[0] if reports else None
        if rep is None:
            res.problems = ["no input read"]
            return res
        res.kind, res.status, res.problems = rep.kind, rep.status, list(rep.problems)
        if rep.status != "ok":
            return res
        _write(store, task, res)
    except Exception as e:  # noqa: BLE001 — one artifact's bug must not sink the batch
        res.status, res.problems = "error", [f"internal error: {type(e).__name__}: {e}"]
    finally:
        store.close()
        res.peak_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return res


def _q(path: Path | str) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _write(store: Store, task: IngestTask, res: IngestResult) -> None:
    lake = Path(task.lake)
    for table in TABLES:
        n = store.sql(f"SELECT count(*) FROM {table}").fetchall()[0][0]
        if not n:
            continue
        rel = (f"{table}/campaign={task.campaign}/run={task.run}/source={res.kind}/"
               f"{task.sha256}.parquet")
        dest = lake / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(f".{dest.name}.{os.getpid()}.part")
        # DuckDB streams the query into the file row group by row group
        store.sql(f"COPY (SELECT {_select(table, task.artifact_id)} FROM {table}) "
                  f"TO {_q(part)} (FORMAT parquet, COMPRESSION zstd)")
        os.replace(part, dest)  # atomic: a reader never sees half a file
        res.rows[table], res.files[table] = int(n), rel
