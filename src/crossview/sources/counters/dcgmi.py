"""`dcgmi dmon -e <fields> [-d ms]` logs.

Layout (DCGM user guide; docs/formats.md): a `#Entity  TAG1  TAG2 …` header, an `ID` line
(units on some versions), then one row per entity per tick: `GPU 0   0.984   0.970 …`; `N/A` on
the first sample after the host engine starts. The header may repeat; rows carry no clock, so
samples are ordered by tick (`seq`) and ts_ns stays NULL. Tags map to canonical metrics through
knowledge/gpu_metrics.yaml (profiling ratios 0–1 become %).
"""

from __future__ import annotations

from pathlib import Path

from crossview.errors import InputError
from crossview.knowledge import metric_names
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.counters.rows import MetricRows, commit, labels_json, problem_lines
from crossview.sources.textfile import read_text
from crossview.store.store import Store

KIND = "dcgmi-dmon"
_NA = {"N/A", "n/a", "-"}


def sniff(head: bytes, path: Path) -> bool:
    return head.lstrip().startswith(b"#Entity") or b"\n#Entity " in head


def read(path: Path, store: Store) -> ArtifactReport:
    path = Path(path)
    text = read_text(path)
    rows = MetricRows()
    bad: list[tuple[int, str]] = []
    tags: list[str] | None = None
    tick, seen = 0, set[tuple[str, int]]()
    for lineno, raw in enumerate(text.splitlines(), 1):
        parts = raw.split()
        if not parts:
            continue
        if parts[0] == "#Entity":
            tags = parts[1:]
            continue
        if parts[0] in ("ID", "Id") or parts[0].startswith("#"):
            continue
        if tags is None:
            bad.append((lineno, "row before any `#Entity` header"))
            continue
        if len(parts) != len(tags) + 2 or not parts[1].isdigit():
            bad.append((lineno, f"expected `<entity> <id>` and {len(tags)} values, "
                                f"got {len(parts)} fields"))
            continue
        entity, ent_id = parts[0], int(parts[1])
        if (entity, ent_id) in seen:  # this entity again: the next tick began
            tick, seen = tick + 1, set()
        seen.add((entity, ent_id))
        device = ent_id if entity == "GPU" else None
        labels = labels_json({"entity": f"{entity} {ent_id}"})
        for tag, tok in zip(tags, parts[2:], strict=True):
            if tok in _NA:
                continue
            try:
                value = float(tok)
            except ValueError:
                bad.append((lineno, f"{tag}: {tok[:30]!r} is not a number"))
                continue
            canon = metric_names.gpu_name("dcgmi", tag)
            if canon is not None:
                rows.add(KIND, device, canon.metric, None, value * canon.scale, canon.unit,
                         labels, tag, "gauge", tick)
            else:
                rows.add(KIND, device, tag, None, value, "", labels, tag, "gauge", tick)
    if tags is None:
        raise InputError(path, "no `#Entity` header: not a `dcgmi dmon` log", "invalid")
    # N/A is normal (no first sample yet), not a problem of the file: skipped silently
    problems = problem_lines(bad, "dcgmi dmon")
    return commit(store, path, KIND, rows, problems, "dcgmi dmon")
