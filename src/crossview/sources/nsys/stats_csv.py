"""`nsys stats --format csv` reports (cuda_gpu_kern_sum, cuda_api_sum, cuda_gpu_mem_time_sum,
cuda_gpu_mem_size_sum, nvtx_sum, osrt_sum, cuda_gpu_sum and their pre-2023 names).

Summary-only evidence: totals per name, no timeline. It fills `summary_stats` only, never
gpu_ops/host_ops, so no busy %, gap or call tree is ever derived from it; the artifact's notes
and every output label it as such. Headers (formats.md): `Time (%),Total Time (ns),Instances,
Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name`; Time % is a share of the listed rows.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pyarrow as pa

from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.store.store import Store

KIND = "nsys-stats"
NOTE = ("summary-only evidence (nsys stats CSV): totals per name, no timeline — no busy %, "
        "gaps, call tree or timeline detector can use it")
# report names as `nsys stats` writes them into `<base>_<report>.csv`; legacy → current
REPORTS = ("cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum",
           "nvtx_sum", "osrt_sum", "cuda_gpu_sum", "cuda_kern_exec_sum", "nvtx_gpu_proj_sum",
           "cuda_gpu_trace", "cuda_api_trace")
LEGACY = {"gpukernsum": "cuda_gpu_kern_sum", "cudaapisum": "cuda_api_sum",
          "gpumemtimesum": "cuda_gpu_mem_time_sum", "gpumemsizesum": "cuda_gpu_mem_size_sum",
          "nvtxppsum": "nvtx_sum", "nvtxsum": "nvtx_sum", "osrtsum": "osrt_sum",
          "gpusum": "cuda_gpu_sum"}
# column → the headers nsys versions used for it
COLUMNS = {
    "time_pct": ("Time (%)", "Time(%)"),
    "total": ("Total Time (ns)", "Total Time", "Total (MB)"),
    "count": ("Instances", "Num Calls", "Count", "Calls"),
    "avg": ("Avg (ns)", "Average", "Average (ns)", "Avg (MB)"),
    "med": ("Med (ns)", "Median", "Med (MB)"),
    "min": ("Min (ns)", "Minimum", "Min (MB)"),
    "max": ("Max (ns)", "Maximum", "Max (MB)"),
    "stddev": ("StdDev (ns)", "StdDev", "StdDev (MB)"),
    "name": ("Name", "Operation", "Range"),
    "category": ("Category", "Style"),
}
_HEAD_LINES = 8


def _header_at(lines: list[str]) -> int | None:
    for i, line in enumerate(lines[:_HEAD_LINES]):
        if (("Total Time (ns)" in line or "Total (MB)" in line or "Total Time," in line)
                and any(n in line for n in ("Name", "Operation", "Range"))):
            return i
    return None


def sniff(head: bytes, path: Path) -> bool:
    text = head.decode("utf-8", "replace").lstrip("\ufeff")
    return _header_at(text.splitlines()) is not None


def report_of(path: Path, header: list[str]) -> str:
    stem = path.name.lower()
    for r in sorted(REPORTS, key=len, reverse=True):
        if r in stem:
            return r
    for old, new in LEGACY.items():
        if old in stem:
            return new
    if "Range" in header:
        return "nvtx_sum"
    if "Total (MB)" in header:
        return "cuda_gpu_mem_size_sum"
    if "Category" in header:
        return "cuda_gpu_sum"
    if "Operation" in header:
        return "cuda_gpu_mem_time_sum"
    if "Num Calls" in header:
        return "cuda_api_sum"  # or osrt_sum: the file name did not say
    return "cuda_gpu_kern_sum"


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, "not a text CSV (undecodable bytes)") from None
    if not text.strip():
        raise InputError(path, "empty file", "empty")
    lines = text.splitlines()
    at = _header_at(lines)
    if at is None:
        raise InputError(path, "not an `nsys stats` CSV report (no `Total Time (ns)` / "
                         "`Name` header)", "unsupported")
    try:
        rows = list(csv.reader(io.StringIO("\n".join(lines[at:]))))
    except csv.Error as e:  # e.g. a field past csv's limit (131,072 characters)
        raise InputError(path, f"malformed CSV: {e}") from None
    problems: list[str] = []
    if not text.endswith(("\n", "\r")) and len(rows) > 1:
        # nsys ends every report with a newline: without it the last row was cut short
        rows.pop()
        problems.append(f"partial: the last line ({len(lines)}) ends without a newline — cut "
                        "short: its row was left out")
    header = [h.strip() for h in rows[0]]
    idx = {col: next((header.index(h) for h in names if h in header), None)
           for col, names in COLUMNS.items()}
    if idx["total"] is None or idx["name"] is None:
        raise InputError(path, "nsys stats CSV lacks a total or a name column")
    report = report_of(path, header)
    unit = "MB" if "Total (MB)" in header else "ns"
    data: dict[str, list[object]] = {c: [] for c in COLUMNS}
    for n, row in enumerate(rows[1:], start=at + 2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(path, f"line {n}: {len(row)} fields, the header has "
                             f"{len(header)} (truncated or not a CSV report?)")
        for col in COLUMNS:
            i = idx[col]
            v = row[i].strip() if i is not None else None
            if col in ("name", "category"):
                data[col].append(v)
            else:
                data[col].append(_number(path, n, header[i] if i is not None else col, v))
    if not data["name"]:
        raise InputError(path, "nsys stats CSV has a header but no rows", "empty")
    artifact_id = store.new_artifact_id()
    store.append("summary_stats", pa.table({
        "artifact_id": pa.array([artifact_id] * len(data["name"]), pa.int32()),
        "report": pa.array([report] * len(data["name"]), pa.string()),
        "name": pa.array(data["name"], pa.string()),
        "category": pa.array(data["category"], pa.string()),
        **{c: pa.array(data[c], pa.float64())
           for c in ("time_pct", "total", "avg", "med", "min", "max", "stddev")},
        "count": pa.array([int(x) if isinstance(x, float) else None for x in data["count"]],
                          pa.int64()),
        "unit": pa.array([unit] * len(data["name"]), pa.string()),
    }))
    notes = [NOTE, f"report {report}: {len(data['name']):,} rows"]
    status = "partial" if problems else "ok"
    store.add_artifact(artifact_id=artifact_id, path=str(path), kind=KIND,
                       bytes=path.stat().st_size, status=status, problems=problems, rigor="L2",
                       events=len(data["name"]), notes=notes)
    return ArtifactReport(str(path), KIND, status, problems, artifact_id, notes)


_NUM = re.compile(r"^-?\d[\d,]*(\.\d+)?([eE][-+]?\d+)?$|^-?\.\d+$")


def _number(path: Path, line: int, column: str, v: str | None) -> float | None:
    if v is None or v == "" or v.lower() in ("n/a", "-"):
        return None
    if not _NUM.match(v):
        raise InputError(path, f"line {line}: {column} is not a number: {v[:40]!r}")
    return float(v.replace(",", ""))
