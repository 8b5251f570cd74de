"""NVML samples as JSON lines — the format crossview's own sampler writes
(`python -m crossview.capture.nvml_sampler`; spec in docs/input-formats.md).

Line 1 (header): {"format": "crossview-nvml", "version": 1, "hostname": …, "interval_ms": …,
"devices": [{"index": 0, "name": …, "uuid": …, "mem_total_mib": …}]}
Then one object per device per tick: {"ts_ns": <epoch ns>, "gpu": <index>, "gpu_util_pct": …,
"mem_util_pct": …, "mem_used_mib": …, "power_w": …, "sm_clock_mhz": …, "mem_clock_mhz": …,
"temp_c": …, "pcie_tx_bytes_per_s": …, "pcie_rx_bytes_per_s": …} — any key may be missing or
null (not supported on that GPU). Unknown numeric keys are kept under their own name.
"""

from __future__ import annotations

from pathlib import Path

from crossview.knowledge import metric_names
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.counters.rows import MetricRows, commit, labels_json, problem_lines
from crossview.sources.textfile import json_objects, read_bytes
from crossview.store.store import Store

KIND = "nvml-jsonl"
FORMAT = "crossview-nvml"
_RESERVED = {"ts_ns", "gpu", "labels"}


def sniff(head: bytes, path: Path) -> bool:
    first = head.lstrip().split(b"\n", 1)[0]
    return first.startswith(b"{") and (f'"{FORMAT}"'.encode() in first
                                       or (b'"ts_ns"' in first and b'"gpu"' in first))


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    data = read_bytes(path)
    rows = MetricRows()
    bad: list[tuple[int, str]] = []
    host = ""
    names: dict[int, str] = {}
    seq = 0
    for lineno, obj in json_objects(data, bad):
        if obj.get("format") == FORMAT:
            host = str(obj.get("hostname") or "")
            for d in obj.get("devices") or []:
                if isinstance(d, dict) and isinstance(d.get("index"), int):
                    names[d["index"]] = str(d.get("name") or "")
                    mem = d.get("mem_total_mib")
                    rows.note_device(d["index"], names[d["index"]],
                                     float(mem) if isinstance(mem, int | float) else None)
            continue
        ts, gpu = obj.get("ts_ns"), obj.get("gpu")
        if not isinstance(ts, int) or not isinstance(gpu, int):
            bad.append((lineno, "sample lacks integer ts_ns and gpu"))
            continue
        given = obj.get("labels")
        extra = given if isinstance(given, dict) else {}
        labels = {k: str(v) for k, v in extra.items()}
        if host:
            labels.setdefault("hostname", host)
        if gpu in names:
            labels.setdefault("name", names[gpu])
        lab = labels_json(labels)
        for key, value in obj.items():
            if key in _RESERVED or value is None or isinstance(value, bool):
                continue
            if not isinstance(value, int | float):
                continue
            canon = metric_names.gpu_name("nvml", key)
            if canon is None:
                rows.add("nvml", gpu, key, ts, float(value), "", lab, key, "gauge", seq)
            else:
                rows.add("nvml", gpu, canon.metric, ts, float(value) * canon.scale, canon.unit,
                         lab, key, "gauge", seq)
        seq += 1
    return commit(store, path, KIND, rows, problem_lines(bad, "NVML JSONL"), "NVML")
