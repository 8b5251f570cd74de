"""nvidia-smi logs: `--query-gpu=… --format=csv` (and `--query-compute-apps`) and `dmon`.

A file may hold several blocks — a logging loop appends CSV rows, and a capture like the
nvidia_gpu_exporter ones holds idle and load sections, each with its own CSV and dmon output.
Blocks are found by their headers: a CSV header naming at least two known query fields, or a
`# gpu …` / `# Idx …` dmon legend (`pmon` legends, with a pid column, are skipped). A capture's
`# <phase> :: <what>` banner becomes the `section` label, so idle and load are never averaged
together. Text outside blocks (`-q` output, help) is ignored; a row inside a block that does not
fit its header is reported. Timestamps ("2026/07/14 08:12:53.353") carry no zone: read as UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from crossview.knowledge import metric_names
from crossview.knowledge.loader import load_yaml
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.counters.promtext import epoch_ns
from crossview.sources.counters.rows import MetricRows, commit, labels_json, problem_lines
from crossview.sources.textfile import read_text
from crossview.store.store import Store

KIND = "nvidia-smi"
# the driver's CUDA version, as `nvidia-smi` and `nvidia-smi --version` print it
_CUDA_VERSION = re.compile(r"CUDA Version\s*:\s*(\d{1,3})\.(\d{1,2})\b")
_SECTION = re.compile(r"^#\s*([A-Za-z][\w-]*)\s+::\s")
_FIELD_UNIT = re.compile(r"^(?P<name>[^\[]+?)\s*(?:\[(?P<unit>[^\]]*)\])?$")
_NUMBER = re.compile(r"^(?P<num>[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)(?:\s*(?P<unit>[^\d\s].*))?$")
_LABEL_FIELDS = {"name": "name", "gpu_name": "name", "uuid": "uuid", "gpu_uuid": "uuid",
                 "pci.bus_id": "pci_bus_id", "gpu_bus_id": "pci_bus_id", "pid": "pid",
                 "process_name": "process_name", "hostname": "hostname"}
_ID_FIELDS = {"timestamp", "index", "driver_version", "serial", "gpu_serial", "count"}


def _known_fields() -> set[str]:
    return set(load_yaml("gpu_metrics.yaml")["nvidia-smi"]) | set(_LABEL_FIELDS) | _ID_FIELDS


def sniff(head: bytes, path: Path) -> bool:
    if b"# $ nvidia-smi" in head or (b"# gpu" in head and b"# Idx" in head):
        return True
    first = head.lstrip().split(b"\n", 1)[0].decode("utf-8", "replace")
    if first.count(",") < 1:
        return False
    names = {m.group("name") for f in first.split(",") if (m := _FIELD_UNIT.match(f.strip()))}
    return len(names & _known_fields()) >= 2


def _ts(text: str) -> int | None:
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return epoch_ns(datetime.strptime(text.strip(), fmt).replace(tzinfo=UTC))
        except ValueError:
            continue
    return None


class _Reader:
    def __init__(self) -> None:
        self.rows = MetricRows()
        self.bad: list[tuple[int, str]] = []
        self.section = ""
        self.uuid_index: dict[str, int] = {}
        self.known = _known_fields()
        self.seq = 0

    # -- query CSV --------------------------------------------------------------------
    def csv_header(self, line: str) -> list[tuple[str, str]] | None:
        if "," not in line or line.startswith("#"):
            return None
        fields = []
        for f in line.split(","):
            m = _FIELD_UNIT.match(f.strip())
            if not m:
                return None
            fields.append((m.group("name"), m.group("unit") or ""))
        if len({n for n, _ in fields} & self.known) < 2:
            return None
        return fields

    def csv_row(self, lineno: int, header: list[tuple[str, str]], line: str) -> None:
        vals = [v.strip() for v in line.split(",")]
        if len(vals) != len(header):
            self.bad.append((lineno, f"{len(vals)} values for {len(header)} CSV columns"))
            return
        rec = {n: v for (n, _), v in zip(header, vals, strict=True)}
        labels = {lab: rec[f] for f, lab in _LABEL_FIELDS.items()
                  if rec.get(f) and not rec[f].startswith("[") and rec[f] != "N/A"}
        if self.section:
            labels["section"] = self.section
        device = int(rec["index"]) if rec.get("index", "").isdigit() else None
        if device is None and labels.get("uuid") in self.uuid_index:
            device = self.uuid_index[labels["uuid"]]
        if device is not None and labels.get("uuid"):
            self.uuid_index[labels["uuid"]] = device
        ts = _ts(rec["timestamp"]) if "timestamp" in rec else None
        lab = labels_json(labels)
        done: set[str] = set()
        pending: list[tuple[str, str, float]] = []
        for (name, unit), v in zip(header, vals, strict=True):
            m = _NUMBER.match(v)
            if not m or name in ("timestamp", "index", "pid") or v.startswith("0x"):
                continue
            value = float(m.group("num"))
            canon = metric_names.gpu_name("nvidia-smi", name)
            if canon is None:
                self.rows.add(KIND, device, name, ts, value, unit or (m.group("unit") or ""),
                              lab, name, "gauge", self.seq)
            elif canon.alias:
                pending.append((name, canon.metric, value))
            else:
                done.add(canon.metric)
                self.rows.add(KIND, device, canon.metric, ts, value * canon.scale, canon.unit,
                              lab, name, "gauge", self.seq)
        for name, metric, value in pending:  # power.draw.instant only when power.draw lacks
            if metric not in done:
                done.add(metric)
                canon = metric_names.gpu_name("nvidia-smi", name)
                self.rows.add(KIND, device, metric, ts, value, canon.unit if canon else "",
                              lab, name, "gauge", self.seq)
        mem = rec.get("memory.total", "")
        mm = _NUMBER.match(mem)
        self.rows.note_device(device, labels.get("name"), float(mm.group("num")) if mm else None)
        self.seq += 1

    # -- dmon -------------------------------------------------------------------------
    def dmon_row(self, lineno: int, cols: list[str], units: list[str], line: str) -> None:
        vals = line.split()
        if len(vals) != len(cols):
            self.bad.append((lineno, f"{len(vals)} values for {len(cols)} dmon columns"))
            return
        rec = dict(zip(cols, vals, strict=True))
        gpu = rec.get("gpu", "")
        if not gpu.isdigit():
            self.bad.append((lineno, f"gpu index {gpu[:20]!r} is not a number"))
            return
        ts = None
        if "Date" in rec and "Time" in rec:
            try:
                ts = epoch_ns(datetime.strptime(rec["Date"] + rec["Time"], "%Y%m%d%H:%M:%S")
                              .replace(tzinfo=UTC))
            except ValueError:
                ts = None
        labels = labels_json({"section": self.section} if self.section else {})
        for c, u in zip(cols, units, strict=False):
            if c in ("gpu", "Date", "Time"):
                continue
            v = rec[c]
            try:
                value = float(v)
            except ValueError:
                continue  # "-" = not available
            canon = metric_names.gpu_name("nvidia-smi-dmon", c)
            if canon is None:
                self.rows.add("nvidia-smi-dmon", int(gpu), c, ts, value, u, labels, c, "gauge",
                              self.seq)
            else:
                self.rows.add("nvidia-smi-dmon", int(gpu), canon.metric, ts,
                              value * canon.scale, canon.unit, labels, c, "gauge", self.seq)
        self.seq += 1

    def run(self, text: str) -> None:
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i].strip()
            sec = _SECTION.match(line)
            if sec:
                self.section = sec.group(1)
            header = self.csv_header(line)
            if header is not None:
                i += 1
                while i < len(lines) and lines[i].strip() and not lines[i].startswith("#"):
                    if self.csv_header(lines[i].strip()) is None:  # a repeated header: skip
                        self.csv_row(i + 1, header, lines[i].strip())
                    i += 1
                continue
            if line.startswith("#") and i + 1 < len(lines):
                cols = line.lstrip("#").split()
                nxt = lines[i + 1].strip()
                if cols[:1] in (["gpu"], ["Date"]) and nxt.startswith("#"):
                    units = nxt.lstrip("#").split()
                    per_process = "pid" in cols
                    i += 2
                    while i < len(lines) and lines[i].strip():
                        row = lines[i].strip()
                        if not row.startswith("#") and not per_process:
                            self.dmon_row(i + 1, cols, units, row)
                        i += 1
                    continue
            i += 1


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    text = read_text(path)
    r = _Reader()
    r.run(text)
    kind = KIND + (" dmon" if r.rows.all_sources() == {"nvidia-smi-dmon"} else "")
    problems = problem_lines(r.bad, "nvidia-smi")
    if text.strip() and not text.endswith(("\n", "\r")):
        problems.append("partial: the file ends without a newline (nvidia-smi always writes "
                        "one): cut short, its last line may be incomplete")
    cuda = _CUDA_VERSION.search(text)  # `nvidia-smi` / `--version`: "CUDA Version : 13.1"
    return commit(store, path, kind, r.rows, problems, "nvidia-smi query/dmon",
                  1000 * int(cuda.group(1)) + 10 * int(cuda.group(2)) if cuda else None)
