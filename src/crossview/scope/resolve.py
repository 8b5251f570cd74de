"""Resolve a Filter once against the store and materialize the filtered tables.

Every view reads `f_gpu` (GPU ops in scope) and `f_host` (host ops in scope); nothing
downstream re-applies the filter, so the GPU view, CPU view and metrics share one slice.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from crossview.errors import UsageError
from crossview.scope import exists
from crossview.scope import samples as sample_scope
from crossview.scope import steps as step_scope
from crossview.scope.filter import Filter, ResolvedFilter
from crossview.store import stdlib
from crossview.store.store import Store


def _choices(store: Store, sql: str) -> list[Any]:  # DuckDB values, untyped
    return [r[0] for r in store.sql(sql).fetchall()]


def _require(store: Store, option: str, value: object, what: str, column: str, table: str
             ) -> None:
    """A requested value must exist in the data; else one line listing what does."""
    have = _choices(store, f"SELECT DISTINCT {column} FROM {table} ORDER BY 1")
    if value not in have:
        raise UsageError(f"--{option} {value}: no such {what} in the data (have: {have})")


def resolve(store: Store, flt: Filter) -> ResolvedFilter:
    """Check each requested value exists, build f_gpu / f_host, return what was selected."""
    arts = store.sql(
        "SELECT artifact_id, path FROM artifacts WHERE status = 'ok' ORDER BY artifact_id"
    ).fetchall()
    ids = [a for a, _ in arts]
    notes: list[str] = []
    if flt.artifact is not None:
        ids = [a for a, p in arts if p == flt.artifact or p.endswith("/" + flt.artifact)]
        if not ids:
            raise UsageError(
                f"--artifact {flt.artifact}: no such artifact (have: "
                + ", ".join(p for _, p in arts) + ")"
            )
    id_list = ",".join(str(i) for i in ids) or "NULL"
    gpu_where = [f"g.artifact_id IN ({id_list})"]
    host_where = [f"h.artifact_id IN ({id_list})"]
    if flt.device is not None:
        # a device seen by a trace or by metric counters (DCGM/NVML/nvidia-smi)
        _require(store, "device", flt.device, "device", "device",
                 "(SELECT device FROM gpu_ops UNION SELECT device FROM metrics"
                 " WHERE device IS NOT NULL)")
        gpu_where.append(f"g.device = {int(flt.device)}")
    if flt.stream is not None:
        _require(store, "stream", flt.stream, "stream", "stream", "gpu_ops")
        gpu_where.append(f"g.stream = {int(flt.stream)}")
    params: dict[str, object] = {}
    if flt.pid is not None:
        _require(store, "pid", flt.pid, "process", "pid", sample_scope.PIDS)
        host_where.append("h.pid = $pid")
        params["pid"] = flt.pid
    if flt.tid is not None:
        _require(store, "tid", flt.tid, "thread", "tid", sample_scope.TIDS)
        host_where.append("h.tid = $tid")
        params["tid"] = flt.tid
    # an old-format `ProfilerStep#N` is an op, not an annotation: --annotation selects that
    # step as --step N does (scope/exists.py); else the annotation must exist
    ann_step = (exists.annotation_step(store, ids, flt.annotation)
                if flt.annotation is not None else None)
    if ann_step is not None and flt.step is not None:
        raise UsageError(f"--annotation {flt.annotation} is step {ann_step} of this trace: "
                         "give it or --step, not both")
    step = flt.step if ann_step is None else ann_step
    if step is not None:  # a step range is a window (scope/step_detect.py)
        win, note = step_scope.window(store, ids, step, flt.window_ns)
        flt_window: tuple[int, int] | None = win
        notes.append(note if ann_step is None else
                     f"--annotation {flt.annotation}: a step recorded as an operator event "
                     f"(older profiler format), selected as `--step {ann_step}` does: "
                     + note.split(": ", 1)[1])
    else:
        flt_window = flt.window_ns
    if flt_window is not None:
        a, b = flt_window
        if b <= a:
            raise UsageError(f"--window {a}:{b}: the end must be after the start")
        if step is None:  # a step window lies inside the capture by construction
            exists.check_window(store, ids, (a, b))
        gpu_where.append(f"g.start_ns >= {int(a)} AND g.start_ns < {int(b)}")
        host_where.append(f"h.start_ns >= {int(a)} AND h.start_ns < {int(b)}")
    if flt.annotation is not None and ann_step is None:
        params["ann"] = flt.annotation
        host_where.append(
            "EXISTS (SELECT 1 FROM host_ops a WHERE a.kind = 'annotation' AND a.name = $ann"
            " AND a.artifact_id = h.artifact_id AND a.pid = h.pid AND a.tid = h.tid"
            " AND h.start_ns >= a.start_ns AND h.start_ns + h.dur_ns <= a.start_ns + a.dur_ns)"
        )
    host_sql = "SELECT h.* FROM host_ops h WHERE " + " AND ".join(host_where)
    store.scoped_relation("f_host", host_sql, params)
    # f_samples: sampled stacks, same filter (notes: untimed stack files a window leaves out)
    # samples: the step's window stands for an old-format step annotation
    notes.extend(sample_scope.resolve_samples(
        store, ids, flt if ann_step is None else replace(flt, annotation=None,
                                                         window_ns=flt_window)))
    host_scoped = (flt.pid is not None or flt.tid is not None
                   or (flt.annotation is not None and ann_step is None))
    if host_scoped:
        # kernels follow the host slice: those launched from an op in scope
        gpu_where.append("g.launch_op_id IN (SELECT op_id FROM f_host)")
        notes.append("GPU ops limited to those launched from the selected host slice")
    gpu_sql = "SELECT g.* FROM gpu_ops g WHERE " + " AND ".join(gpu_where)
    store.scoped_relation("f_gpu", gpu_sql)
    stdlib.ensure_filtered(store)  # f_kernels, f_kernel_launches, … over the slices
    devs = store.sql(  # the kernels' devices first, then their names (not a join per kernel)
        "SELECT DISTINCT f.artifact_id, f.device, coalesce(d.name, '') FROM (SELECT DISTINCT"
        " artifact_id, device FROM f_gpu WHERE kind = 'kernel') f"
        " LEFT JOIN devices d USING (artifact_id, device) ORDER BY 1, 2"
    ).fetchall()
    streams = _choices(store, "SELECT DISTINCT stream FROM f_gpu ORDER BY 1")
    ext = store.sql(
        "SELECT min(start_ns), max(start_ns + dur_ns) FROM f_gpu WHERE kind = 'kernel'"
    ).fetchall()[0]
    # the capture has GPU work but the filter selects none of it: the selection is GPU-idle,
    # not a CPU-only capture (render/markdown.py says which)
    elsewhere = not devs and bool(store.sql(
        f"SELECT EXISTS (SELECT 1 FROM gpu_ops WHERE artifact_id IN ({id_list}))"
    ).fetchall()[0][0])
    if elsewhere:
        notes.append("no GPU op of the capture is in this selection (its GPU ops lie outside "
                     "it): the GPU did no traced work here")
    paths = dict(arts)
    return ResolvedFilter(
        requested=flt,
        artifacts=tuple(paths[i] for i in ids),
        devices=tuple(
            f"{paths[a].rsplit('/', 1)[-1]}#{d}" + (f" ({nm})" if nm else "") for a, d, nm in devs
        ),
        streams=tuple(int(s) for s in streams if s is not None),
        window_ns=(int(ext[0]), int(ext[1])) if ext[0] is not None else None,
        notes=tuple(notes),
        gpu_elsewhere=elsewhere,
    )
