"""`ncu --page raw --csv`: the wide format, one row per kernel launch.

Row 1 names the columns (launch identity, then one column per metric: `gpu__time_duration.sum`,
`device__attribute_display_name`, …); row 2 gives each metric's unit (its identity cells are
empty); every later row is one kernel. No public sample exists; the layout follows the ncu
CLI documentation (see docs/formats.md) and the tests build fixtures from it.
"""

from __future__ import annotations

from pathlib import Path

from crossview.errors import InputError
from crossview.sources.ncu.csv_common import IDENTITY, Table, identity
from crossview.sources.ncu.record import KernelRecord, as_int
from crossview.sources.ncu.units import normalize, parse_number

SECTION = "raw"
# device facts ncu records as metrics: they name the device for the ceilings lookup
_NAME = "device__attribute_display_name"
_SMS = "device__attribute_multiprocessor_count"
_MEM = "device__attribute_total_memory"


def records(t: Table, path: Path) -> list[KernelRecord]:
    if "Kernel Name" not in t.header:
        raise InputError(path, "ncu raw CSV lacks the Kernel Name column")
    rows = t.rows
    units = [""] * len(t.header)
    if rows and not rows[0][t.header.index("ID")].strip():
        units, rows = rows[0], rows[1:]  # the unit row
    metric_cols = [(i, h) for i, h in enumerate(t.header) if h and h not in IDENTITY]
    out: list[KernelRecord] = []
    for row in rows:
        cells = dict(zip(t.header, row, strict=True))
        rec = identity(cells, path)
        for i, name in metric_cols:
            text = row[i]
            if name == _NAME:
                rec.device_name = text.strip() or None
            elif name == _SMS:
                rec.sm_count = as_int(text)
            elif name == _MEM:  # auto-scaled ("Gbyte") like any size
                v, _ = normalize(parse_number(text), units[i])
                rec.mem_bytes = int(v) if v is not None else None
            if text.strip():
                rec.add_text_metric(SECTION, name, text, units[i])
        out.append(rec)
    return out
