"""`ncu --csv` (details page) and section exports: the long format, one metric per row.

A row with a Metric Name is a metric of its section (the label as shown in the UI, or the
metric's own name under "Command line profiler metrics"); a row with a Rule Name is one of
ncu's rule results (OPT / WRN / INF with its message and estimated speedup). Section
exports (`--section X --csv --print-details all`) add a "Body Item Label" column, kept as a
suffix of the section.
"""

from __future__ import annotations

from pathlib import Path

from crossview.errors import InputError
from crossview.sources.ncu.csv_common import Table, identity
from crossview.sources.ncu.record import KernelRecord, RuleRow
from crossview.sources.ncu.units import parse_number

REQUIRED = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")


def records(t: Table, path: Path) -> list[KernelRecord]:
    missing = [c for c in REQUIRED if c not in t.header]
    if missing:
        raise InputError(path, "ncu details CSV lacks column(s) " + ", ".join(missing))
    col = {h: i for i, h in enumerate(t.header)}
    out: dict[str, KernelRecord] = {}
    for row in t.rows:
        cells = {h: row[i] for h, i in col.items()}
        key = "|".join(cells.get(k, "") for k in ("Host Name", "Process ID", "ID"))
        rec = out.get(key)
        if rec is None:
            rec = out[key] = identity(cells, path)
        section = cells["Section Name"].strip()
        item = cells.get("Body Item Label", "").strip()
        if item:
            section = f"{section} › {item}"
        rule = cells.get("Rule Name", "").strip()
        metric = cells["Metric Name"].strip()
        if metric:
            rec.add_text_metric(section, metric, cells["Metric Value"], cells["Metric Unit"])
        elif rule:
            rec.rules.append(RuleRow(
                section=section, rule=rule, type=cells.get("Rule Type", "").strip(),
                title="", message=cells.get("Rule Description", "").strip(),
                speedup_type=cells.get("Estimated Speedup Type", "").strip(),
                speedup_pct=parse_number(cells.get("Estimated Speedup")),
            ))
    return list(out.values())
