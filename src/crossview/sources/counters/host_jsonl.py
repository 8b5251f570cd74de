"""Host CPU samples as JSON lines — the format crossview's host sampler writes
(`python -m crossview.capture.host_sampler`, also part of `crossview capture`).

Line 1 (header): {"format": "crossview-host", "version": 1, "hostname": …, "interval_ms": …,
"cpus": N}; then {"ts_ns": <epoch ns>, "cpu_util_pct": …, "cpu_user_pct": …,
"cpu_system_pct": …, "cpu_iowait_pct": …, "mem_used_mib": …, "core_util_pct": [per core]}.
Per-core values become one `host_core_util` row per core (label core=N). Rows belong to no GPU
(device NULL, source "host"); names map through knowledge/host_metrics.yaml.
"""

from __future__ import annotations

from pathlib import Path

from crossview.knowledge.loader import load_yaml
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.counters.rows import MetricRows, commit, labels_json, problem_lines
from crossview.sources.textfile import json_objects, read_bytes
from crossview.store.store import Store

KIND = "host-jsonl"
FORMAT = "crossview-host"


def sniff(head: bytes, path: Path) -> bool:
    first = head.lstrip().split(b"\n", 1)[0]
    return first.startswith(b"{") and f'"{FORMAT}"'.encode() in first


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    rows = MetricRows()
    bad: list[tuple[int, str]] = []
    labels = labels_json({})
    host: dict[str, str] = {}
    names: dict[str, dict[str, str]] = load_yaml("host_metrics.yaml")["host"]
    seq = 0
    for lineno, obj in json_objects(read_bytes(path), bad):
        if obj.get("format") == FORMAT:
            host = {"hostname": str(obj.get("hostname") or "")} if obj.get("hostname") else {}
            if isinstance(obj.get("cpus"), int):
                host["cpus"] = str(obj["cpus"])
            labels = labels_json(host)
            continue
        ts = obj.get("ts_ns")
        if not isinstance(ts, int):
            bad.append((lineno, "sample lacks an integer ts_ns"))
            continue
        for key, value in obj.items():
            canon = names.get(key)
            if canon and canon.get("per_core") and isinstance(value, list):
                for core, v in enumerate(value):
                    if isinstance(v, int | float) and not isinstance(v, bool):
                        rows.add("host", None, canon["metric"], ts, float(v), canon["unit"],
                                 labels_json({**host, "core": str(core)}), key, "gauge", seq)
                continue
            if key == "ts_ns" or isinstance(value, bool) or not isinstance(value, int | float):
                continue
            metric, unit = (canon["metric"], canon["unit"]) if canon else (key, "")
            rows.add("host", None, metric, ts, float(value), unit, labels, key, "gauge", seq)
        seq += 1
    return commit(store, path, KIND, rows, problem_lines(bad, "host-sampler JSONL"),
                  "host CPU")
