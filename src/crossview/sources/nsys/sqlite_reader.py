"""Nsight Systems SQLite export reader (`nsys export --type sqlite`), schemas 3.1 … 3.25.

Reads kernels, memcpy (copy kind, pageable vs pinned), memset, synchronization, CUDA
runtime/driver API calls (linked to their GPU ops by correlationId within a process), NVTX
ranges (`text` or `textId`), OS runtime calls, CPU sampling (COMPOSITE_EVENTS +
SAMPLING_CALLCHAINS), CUDA-graph node ids, TARGET_INFO_GPU and processes/threads (pid and tid
from globalTid). A table that is absent was not collected: the artifact says so in its notes,
it never reads as zero. Timestamps in the export are already integer ns.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa

from crossview import progress
from crossview.errors import InputError
from crossview.sources import timeline_checks
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.nesting_batches import TooDeep
from crossview.sources.nsys import callchains, fetch, gpu, host, name_check, native, sampling
from crossview.sources.nsys import clock as nsys_clock
from crossview.sources.nsys import schema_probe as sp
from crossview.sources.nsys.schema_probe import Probe, connect, probe
from crossview.store.store import Store

KIND = "nsys"
ALLOCATOR_FLUSH = "16MB"  # DuckDB returns freed memory above this to the system
NO_CUDA = ("no CUDA trace collected (CUPTI tables absent): only the host side can be judged; "
           "re-profile with `nsys profile --trace=cuda,nvtx,osrt` for the GPU side")


def sniff(head: bytes, path: Path) -> bool:
    return head.startswith(sp.SQLITE_MAGIC)


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    if path.stat().st_size == 0:
        raise InputError(path, "empty file (0 bytes)", "empty")
    src = connect(path)
    token = native.use(None)
    try:
        p = probe(path, src)
        native.use(native.connect(path))  # the Arrow path when installed (else sqlite3)
        artifact_id = store.new_artifact_id()
        try:
            report = _read(path, src, p, store, artifact_id)
        except sqlite3.DatabaseError as e:
            _cleanup(store, artifact_id)
            raise InputError(path, f"corrupt or truncated SQLite export: {e}") from None
        except TooDeep as e:
            _cleanup(store, artifact_id)
            raise InputError(path, str(e)) from None
        except Exception:
            _cleanup(store, artifact_id)
            raise
        return report
    finally:
        native.reset(token)
        src.close()


def _cleanup(store: Store, artifact_id: int) -> None:
    store.discard(artifact_id)
    gpu.drop(store.con)
    host.drop_staged(store.con)
    for t in ("_nsys_str", "_nsys_cc", "_nsys_hname", "_keylabel", "_nsys_samp",
              "_host", "_labels", "_threads", "_nestres"):
        store.con.execute(f"DROP TABLE IF EXISTS {t}")


def _read(path: Path, src: sqlite3.Connection, p: Probe, store: Store, artifact_id: int
          ) -> ArtifactReport:
    duck = store.con
    # DuckDB keeps up to 128 MiB (and a bulk free of up to 512 MiB) in its allocator's
    # caches after each task by default; the staging tables of a large export are freed in
    # bulk, so their memory was still held while the analysis ran (1 M kernels: ~600 → ~300
    # MiB after the read, bench/README.md)
    for setting in ("allocator_flush_threshold", "allocator_bulk_deallocation_flush_threshold"):
        duck.execute(f"SET {setting} = '{ALLOCATOR_FLUSH}'")
    notes = list(p.notes)
    skipped = fetch.collect_skipped()  # rows whose times cannot be true (fetch._TIME_OK)
    fetch.strings(src, duck)
    need_chains = p.has(sp.SAMPLES) or bool(p.col(sp.RUNTIME, "callchainId")) or p.has(sp.OSRT)
    if need_chains:
        callchains.stage(src, duck, p)
    bar = progress.current()  # phases of a large export (crossview.progress)
    # the kernel table through the second core while the host events are read and nested
    kernels = gpu.prefetch(path, src, store, p)
    try:
        bar.phase("host events")
        hc = host.stage(src, duck, p)
        notes.extend(hc.notes)
        n_host, launches = host.ingest(store, artifact_id)
        store.compact()  # host_ops compressed before the GPU rows pile up (5 M kernels' peak)
        bar.phase("GPU activity")
        gc = gpu.stage(src, duck, p, kernels)
    finally:
        if kernels is not None:
            kernels.close(duck)
    if any(p.has(t) for t in sp.CUPTI_TABLES if t != sp.RUNTIME):
        gpu.ingest(store, artifact_id, gc, launches)
    gpu.drop(duck)  # the launch link of the host phase too, when no GPU op was read
    n_samples = 0
    if p.has(sp.SAMPLES):
        bar.phase("CPU samples")
        staged = sampling.stage(src, duck, p)
        n_samples = sampling.ingest(store, artifact_id, _enum(src, p, "ENUM_SAMPLING_THREAD_STATE"))
        if staged > n_samples:
            notes.append(f"{staged - n_samples:,} CPU samples have no callchain: left out")
    duck.execute("DROP TABLE IF EXISTS _nsys_cc")
    duck.execute("DROP TABLE _nsys_str")
    _devices(src, p, store, artifact_id)
    notes.extend(_not_collected(p, hc, gc))
    events = n_host + gc.kernels + gc.memcpy + gc.memset + gc.sync + n_samples
    if events == 0:
        _cleanup(store, artifact_id)
        raise InputError(path, "Nsight Systems export holds no CUDA, NVTX, OS runtime or CPU "
                         "sampling events: nothing to analyze", "empty")
    base = duck.execute(
        "SELECT least((SELECT min(start_ns) FROM host_ops WHERE artifact_id = $a),"
        " (SELECT min(start_ns) FROM gpu_ops WHERE artifact_id = $a),"
        " (SELECT min(ts_ns) FROM samples WHERE artifact_id = $a))", {"a": artifact_id}
    ).fetchall()[0][0]
    problems = [f"partial: {n:,} row(s) of {t} skipped: start/end not stored as integers, "
                "end before start, or out of range" for t, n in sorted(skipped.items())]
    if p.views:  # never queried (schema_probe.table_names): what they stand for is missing
        shown = ", ".join(p.views[:3]) + (f" and {len(p.views) - 3} more" if len(p.views) > 3
                                          else "")
        problems.append(f"partial: {len(p.views)} view(s) not read ({shown}): an nsys export "
                        "holds tables only, and a view can run without end")
    if p.has(sp.KERNEL) and not p.cols(sp.KERNEL):
        problems.append(f"partial: {sp.KERNEL} has no columns (a view or a damaged table): "
                        "kernels not read")
    status = "partial" if problems else "ok"
    problems += timeline_checks.doubts(store, artifact_id)  # all read, but times doubted
    problems += name_check.unresolved(store, artifact_id)
    store.add_artifact(
        artifact_id=artifact_id, path=str(path), kind=KIND, bytes=path.stat().st_size,
        status=status, problems=problems, rigor="L2" if n_host + gc.kernels else "L1",
        events=events, trace_base_ns=base, notes=notes,
        clock_epoch_ns=nsys_clock.epoch_base_ns(src, p))
    return ArtifactReport(path=str(path), kind=KIND, status=status, problems=problems,
                          artifact_id=artifact_id, notes=notes)


def _not_collected(p: Probe, hc: host.HostCounts, gc: gpu.GpuCounts) -> list[str]:
    """Say what the capture did not collect (absent tables), never report it as zero."""
    out: list[str] = []
    if all(_absent(p, t) for t in sp.CUPTI_TABLES):
        out.append(NO_CUDA)
    else:
        if _absent(p, sp.KERNEL):
            out.append("no kernel ran in the capture (CUPTI_ACTIVITY_KIND_KERNEL absent)")
        if _absent(p, sp.RUNTIME):
            out.append("CUDA API calls not collected (CUPTI_ACTIVITY_KIND_RUNTIME absent): "
                       "kernels cannot be tied to their launches")
        if _absent(p, sp.MEMCPY):
            out.append("no memcpy recorded (CUPTI_ACTIVITY_KIND_MEMCPY absent)")
        if _absent(p, sp.MEMSET):
            out.append("no memset recorded (CUPTI_ACTIVITY_KIND_MEMSET absent)")
    if _absent(p, sp.NVTX):
        out.append("NVTX not collected (NVTX_EVENTS absent)")
    elif p.has(sp.NVTX) and hc.nvtx == 0:
        out.append("NVTX collected but no push/pop or start/end range recorded")
    if _absent(p, sp.OSRT):
        out.append("OS runtime calls not collected (OSRT_API absent)")
    if _absent(p, sp.SAMPLES) or _absent(p, sp.CALLCHAINS):
        out.append("CPU sampling not collected (COMPOSITE_EVENTS / SAMPLING_CALLCHAINS absent)")
    return out


def _absent(p: Probe, table: str) -> bool:
    """Not collected: neither a table nor a view (a view is not read, but it is not absent:
    its problem says so instead)."""
    return not p.has(table) and table not in p.views


def _enum(src: sqlite3.Connection, p: Probe, table: str) -> dict[int, str]:
    if not (p.col(table, "id") and p.col(table, "label")):
        return {}
    return {int(i): str(lab) for i, lab in src.execute(f"SELECT id, label FROM {table}")}


def _devices(src: sqlite3.Connection, p: Probe, store: Store, artifact_id: int) -> None:
    """TARGET_INFO_GPU: name, SMs, memory, bandwidth (B/s), clock (Hz), compute capability.
    The device number is the CUDA ordinal (`cuDevice`) where recorded, as in kernel rows."""
    if not p.has(sp.GPU_INFO):
        return
    g = sp.GPU_INFO
    want = {"device": p.col(g, "cuDevice", "id"), "name": p.col(g, "name"),
            "sm_count": p.col(g, "smCount"), "mem_bytes": p.col(g, "totalMemory"),
            "mem_bw_bytes_s": p.col(sp.GPU_INFO, "memoryBandwidth"),
            "clock_hz": p.col(sp.GPU_INFO, "clockRate"),
            "cc_major": p.col(sp.GPU_INFO, "computeMajor"),
            "cc_minor": p.col(sp.GPU_INFO, "computeMinor")}
    have = {k: v for k, v in want.items() if v}
    if "device" not in have:
        return
    rows = src.execute(
        f"SELECT DISTINCT {', '.join(have.values())} FROM {sp.GPU_INFO}").fetchall()
    seen: set[int] = set()
    data: dict[str, list[object]] = {"artifact_id": [], **{k: [] for k in have}}
    for r in rows:
        rec = dict(zip(have, r, strict=True))
        if not isinstance(rec["device"], int) or rec["device"] in seen:
            continue  # one row per device (several VMs / duplicates: first wins)
        seen.add(rec["device"])
        data["artifact_id"].append(artifact_id)
        for k in have:
            v = rec[k]
            data[k].append(v if k == "name" or isinstance(v, int) else None)
    types = {"name": pa.string(), "artifact_id": pa.int32(), "device": pa.int32(),
             "sm_count": pa.int32(), "cc_major": pa.int32(), "cc_minor": pa.int32()}
    store.append("devices", pa.table({k: pa.array(v, types.get(k, pa.int64()))
                                      for k, v in data.items()}))
