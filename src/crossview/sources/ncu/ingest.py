"""Parsed ncu kernels → the store (profiled_kernels, kernel_metrics, kernel_rules, devices).

Rows are written only after the whole file parsed, so a rejected file leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import pyarrow as pa

from crossview.errors import InputError, UsageError
from crossview.kernels.families import classify_many
from crossview.knowledge import hardware
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.ncu.record import KernelRecord
from crossview.store.store import Store

_TABLES = ("profiled_kernels", "kernel_metrics", "kernel_rules")


def _cc_parts(cc: str | None) -> tuple[int | None, int | None]:
    try:
        major, _, minor = (cc or "").partition(".")
        return int(major), int(minor or 0)
    except ValueError:
        return None, None


def write(store: Store, path: Path, kind: str, records: Sequence[KernelRecord],
          problems: list[str]) -> ArtifactReport:
    if not records:
        raise InputError(path, "no profiled kernels in this Nsight Compute export (ncu matched "
                         "no kernel: check --kernel-name / --launch-skip / --launch-count)",
                         "empty")
    artifact_id = store.new_artifact_id()
    base = store.reserve_ops(len(records))
    families = classify_many([r.name for r in records])
    kernels: dict[str, list[object]] = {c: [] for c in (
        "artifact_id", "kernel_id", "ncu_id", "launch_key", "name", "family", "process", "pid",
        "host", "device", "device_name", "device_name_source", "cc", "sm_count", "mem_bytes",
        "context", "stream", "grid", "block")}
    metrics: dict[str, list[object]] = {c: [] for c in (
        "artifact_id", "kernel_id", "name", "family", "section", "metric", "value", "unit",
        "raw_value", "raw_unit")}
    rules: dict[str, list[object]] = {c: [] for c in (
        "artifact_id", "kernel_id", "section", "rule", "type", "title", "message",
        "speedup_type", "speedup_pct")}
    v: object  # one column's value: text, a number or None
    for i, (r, fam) in enumerate(zip(records, families, strict=True)):
        kid = base + i
        for c, v in (("artifact_id", artifact_id), ("kernel_id", kid), ("ncu_id", r.ncu_id),
                     ("launch_key", r.launch_key), ("name", r.name), ("family", fam),
                     ("process", r.process), ("pid", r.pid), ("host", r.host),
                     ("device", r.device), ("device_name", r.device_name),
                     ("device_name_source", "capture" if r.device_name else None),
                     ("cc", r.cc), ("sm_count", r.sm_count), ("mem_bytes", r.mem_bytes),
                     ("context", r.context), ("stream", r.stream), ("grid", r.grid),
                     ("block", r.block)):
            kernels[c].append(v)
        for m in r.metrics:
            for c, v in (("artifact_id", artifact_id), ("kernel_id", kid), ("name", r.name),
                         ("family", fam), ("section", m.section), ("metric", m.metric),
                         ("value", m.value), ("unit", m.unit), ("raw_value", m.raw_value),
                         ("raw_unit", m.raw_unit)):
                metrics[c].append(v)
        for u in r.rules:
            for c, v in (("artifact_id", artifact_id), ("kernel_id", kid),
                         ("section", u.section), ("rule", u.rule), ("type", u.type),
                         ("title", u.title), ("message", u.message),
                         ("speedup_type", u.speedup_type), ("speedup_pct", u.speedup_pct)):
                rules[c].append(v)
    try:
        store.append("profiled_kernels", pa.table(kernels, schema=_KERNEL_SCHEMA))
        store.append("kernel_metrics", pa.table(metrics, schema=_METRIC_SCHEMA))
        store.append("kernel_rules", pa.table(rules, schema=_RULE_SCHEMA))
        store.append("devices", _devices(artifact_id, records))
    except (duckdb.Error, pa.ArrowException) as e:
        for t in (*_TABLES, "devices"):
            store.con.execute(f"DELETE FROM {t} WHERE artifact_id = ?", [artifact_id])
        raise InputError(path, f"values cannot be stored: {str(e).splitlines()[0]}") from None
    # every problem an ncu reader reports is something lost (a row cut or malformed, a
    # result not loaded): read in part, said on stderr and in the recap
    status = "partial" if problems else "ok"
    store.add_artifact(artifact_id=artifact_id, path=str(path), kind=kind,
                       bytes=path.stat().st_size, status=status, problems=problems, rigor="L4",
                       events=len(records))
    return ArtifactReport(str(path), kind, status, problems, artifact_id)


_KERNEL_SCHEMA = pa.schema([
    ("artifact_id", pa.int32()), ("kernel_id", pa.int64()), ("ncu_id", pa.string()),
    ("launch_key", pa.string()), ("name", pa.string()), ("family", pa.string()),
    ("process", pa.string()), ("pid", pa.string()), ("host", pa.string()),
    ("device", pa.int32()), ("device_name", pa.string()), ("device_name_source", pa.string()),
    ("cc", pa.string()), ("sm_count", pa.int32()), ("mem_bytes", pa.int64()),
    ("context", pa.string()), ("stream", pa.int64()), ("grid", pa.string()),
    ("block", pa.string()),
])
_METRIC_SCHEMA = pa.schema([
    ("artifact_id", pa.int32()), ("kernel_id", pa.int64()), ("name", pa.string()),
    ("family", pa.string()), ("section", pa.string()), ("metric", pa.string()),
    ("value", pa.float64()), ("unit", pa.string()), ("raw_value", pa.string()),
    ("raw_unit", pa.string()),
])
_RULE_SCHEMA = pa.schema([
    ("artifact_id", pa.int32()), ("kernel_id", pa.int64()), ("section", pa.string()),
    ("rule", pa.string()), ("type", pa.string()), ("title", pa.string()),
    ("message", pa.string()), ("speedup_type", pa.string()), ("speedup_pct", pa.float64()),
])


def _devices(artifact_id: int, records: Sequence[KernelRecord]) -> pa.Table:
    seen: dict[int, KernelRecord] = {}
    for r in records:
        if r.device is not None and r.device not in seen:
            seen[r.device] = r
    cols: dict[str, list[object]] = {c: [] for c in (
        "artifact_id", "device", "name", "sm_count", "mem_bytes", "cc_major", "cc_minor")}
    for dev, r in sorted(seen.items()):
        major, minor = _cc_parts(r.cc)
        for c, v in (("artifact_id", artifact_id), ("device", dev), ("name", r.device_name),
                     ("sm_count", r.sm_count), ("mem_bytes", r.mem_bytes),
                     ("cc_major", major), ("cc_minor", minor)):
            cols[c].append(v)
    return pa.table(cols, schema=pa.schema([
        ("artifact_id", pa.int32()), ("device", pa.int32()), ("name", pa.string()),
        ("sm_count", pa.int32()), ("mem_bytes", pa.int64()), ("cc_major", pa.int32()),
        ("cc_minor", pa.int32())]))


def name_devices(store: Store, gpu: str, source: str = "--gpu") -> int:
    """Name the GPU of profiled kernels whose capture does not (ncu's details CSV carries
    only the device index and CC). The capture's own name always wins. `source`: who named
    it (device_name_source: --gpu, or bundle.yaml). Returns rows named."""
    spec = hardware.match(gpu)
    if spec is None:
        known = ", ".join(sorted(hardware.specs()))
        raise UsageError(f"--gpu {gpu!r}: not in {hardware.CEILINGS_FILE} (known: {known})")
    n = store.sql("SELECT count(*) FROM profiled_kernels WHERE device_name IS NULL"
                  ).fetchall()[0][0]
    store.sql("UPDATE profiled_kernels SET device_name = $g, device_name_source = $s"
              " WHERE device_name IS NULL", {"g": gpu, "s": source})
    store.sql("UPDATE devices SET name = $g WHERE name IS NULL AND artifact_id IN"
              " (SELECT artifact_id FROM profiled_kernels)", {"g": gpu})
    return int(n)
