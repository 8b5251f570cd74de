"""Collect metric samples for one artifact, then write them (and the artifact row) at once.

Readers build every row in memory first, so a file that fails half-way leaves nothing behind.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa

from crossview.errors import InputError
from crossview.sources.artifact_report import ArtifactReport
from crossview.store.store import Store

MAX_PROBLEMS_LISTED = 5  # malformed lines named one by one; the rest counted


def labels_json(labels: dict[str, str]) -> str:
    return json.dumps(labels, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


_COLS = ("source", "device", "metric", "ts_ns", "value", "unit", "labels", "raw_name", "mtype",
         "seq")
_TYPES = {"source": pa.string(), "device": pa.int32(), "metric": pa.string(),
          "ts_ns": pa.int64(), "value": pa.float64(), "unit": pa.string(),
          "labels": pa.string(), "raw_name": pa.string(), "mtype": pa.string(),
          "seq": pa.int32()}
_REPEATED = ("source", "metric", "unit", "labels", "raw_name", "mtype")  # few distinct values
CHUNK_ROWS = 65_536  # rows kept as Python objects before they become Arrow columns


@dataclass
class MetricRows:
    """Samples as they are read: the last ≤ CHUNK_ROWS as Python lists, the rest as Arrow
    batches with the repeated strings dictionary-encoded — ~30 bytes a sample instead of
    ~150 in lists (a 57 MB nvidia-smi log: 1.6 GB peak before, issue 43)."""
    source: list[str] = field(default_factory=list)
    device: list[int | None] = field(default_factory=list)
    metric: list[str] = field(default_factory=list)
    ts_ns: list[int | None] = field(default_factory=list)
    value: list[float] = field(default_factory=list)
    unit: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    raw_name: list[str] = field(default_factory=list)
    mtype: list[str] = field(default_factory=list)
    seq: list[int] = field(default_factory=list)
    devices: dict[int, tuple[str, float | None]] = field(default_factory=dict)  # name, MiB
    sources: set[str] = field(default_factory=set)  # every source added
    timed: bool = False  # some sample has a timestamp
    _batches: list[pa.RecordBatch] = field(default_factory=list)
    _flushed: int = 0

    def add(self, source: str, device: int | None, metric: str, ts_ns: int | None,
            value: float, unit: str, labels: str, raw_name: str, mtype: str, seq: int) -> None:
        self.source.append(source)
        self.device.append(device)
        self.metric.append(metric)
        self.ts_ns.append(ts_ns)
        self.value.append(value)
        self.unit.append(unit)
        self.labels.append(labels)
        self.raw_name.append(raw_name)
        self.mtype.append(mtype)
        self.seq.append(seq)
        if len(self.metric) >= CHUNK_ROWS:
            self._flush()

    def _flush(self) -> None:
        if not self.metric:
            return
        self.sources.update(self.source)
        self.timed = self.timed or any(t is not None for t in self.ts_ns)
        cols = {}
        for c in _COLS:
            arr = pa.array(getattr(self, c), _TYPES[c])
            cols[c] = arr.dictionary_encode() if c in _REPEATED else arr
            getattr(self, c).clear()
        self._batches.append(pa.RecordBatch.from_pydict(cols))
        self._flushed += self._batches[-1].num_rows

    def __len__(self) -> int:
        return self._flushed + len(self.metric)

    def has_timestamps(self) -> bool:
        return self.timed or any(t is not None for t in self.ts_ns)

    def all_sources(self) -> set[str]:
        return self.sources | set(self.source)

    def note_device(self, device: int | None, name: str | None, mem_mib: float | None = None
                    ) -> None:
        if device is None or not name:
            return
        old = self.devices.get(device)
        if old is None or (old[1] is None and mem_mib is not None):
            self.devices[device] = (name, mem_mib)

    def _all(self) -> pa.Table:
        """Every row; the repeated strings stay dictionary-encoded (DuckDB stores them as
        the VARCHAR they stand for)."""
        self._flush()
        schema = pa.schema([(c, pa.dictionary(pa.int32(), _TYPES[c]) if c in _REPEATED
                             else _TYPES[c]) for c in _COLS])
        return pa.Table.from_batches(self._batches, schema=schema)

    def drop(self, keep: list[bool]) -> None:
        """Keep only the rows whose flag is True (used to drop legacy duplicates)."""
        t = self._all().filter(pa.array(keep, pa.bool_()))
        self._batches = t.to_batches()
        self._flushed = t.num_rows

    def table(self, artifact_id: int) -> pa.Table:
        t = self._all()
        return t.add_column(0, "artifact_id",
                            pa.array([artifact_id] * t.num_rows, pa.int32()))


def problem_lines(bad: list[tuple[int, str]], what: str) -> list[str]:
    """Malformed lines as problems of the artifact: the first few by number, then a count."""
    if not bad:
        return []
    shown = "; ".join(f"line {n}: {why}" for n, why in bad[:MAX_PROBLEMS_LISTED])
    more = f" (and {len(bad) - MAX_PROBLEMS_LISTED} more)" if len(bad) > MAX_PROBLEMS_LISTED else ""
    return [f"partial: {len(bad)} malformed {what} line(s) skipped — {shown}{more}"]


def commit(store: Store, path: Path, kind: str, rows: MetricRows, problems: list[str],
           what: str, driver_cuda: int | None = None) -> ArtifactReport:
    """Write the samples and the artifact row; an artifact without samples is rejected.
    driver_cuda: the CUDA version the driver reports (artifacts.driver_cuda), if it does."""
    if len(rows) == 0:
        detail = f" ({problems[0]})" if problems else ""
        raise InputError(path, f"no {what} samples could be read{detail}", "empty")
    artifact_id = store.new_artifact_id()
    store.append("metrics", rows.table(artifact_id))
    if rows.devices:
        store.append("devices", pa.table({
            "artifact_id": pa.array([artifact_id] * len(rows.devices), pa.int32()),
            "device": pa.array(list(rows.devices), pa.int32()),
            "name": pa.array([n for n, _ in rows.devices.values()], pa.string()),
            "mem_bytes": pa.array([int(m * 1048576) if m is not None else None
                                   for _, m in rows.devices.values()], pa.int64()),
        }))
    # malformed or cut lines were skipped: read in part, said (never a valid synthesis source)
    status = "partial" if any(p.startswith("partial:") for p in problems) else "ok"
    store.add_artifact(artifact_id=artifact_id, path=str(path), kind=kind,
                       bytes=path.stat().st_size, status=status, problems=problems, rigor="L3",
                       events=len(rows), driver_cuda=driver_cuda)
    return ArtifactReport(path=str(path), kind=kind, status=status, problems=problems,
                          artifact_id=artifact_id)
