"""Shared by the two ncu CSV layouts: find the header, split rows, read launch identity.

`ncu --csv` output captured from stdout often starts with `==PROF==` lines and the
application's own output; the table starts at the first line whose first cells are
"ID","Process ID". Everything before it is skipped (and said so when it is not ncu's).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from crossview.errors import InputError
from crossview.sources.ncu.record import KernelRecord, as_int, launch_key
from crossview.sources.textfile import read_bytes

HEADER = re.compile(r'^\ufeff?"?ID"?\s*,\s*"?Process ID"?\s*,', re.MULTILINE)
# launch-identity columns of both layouts; in the raw layout every other column is a metric
IDENTITY = ("ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time",
            "Context", "Stream", "Block Size", "Grid Size", "Device", "CC")
_MAX_SCAN = 200  # lines of preamble searched for the header


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    malformed: int  # rows with more cells than the header
    preamble: int  # lines before the header
    cut: bool = False  # the file ends inside a row (truncated)
    stray: int = 0  # non-table lines after the header (program output), skipped


def header_line(text: str) -> str | None:
    """The header line if `text` (a file's head) is an ncu CSV export, else None."""
    for i, line in enumerate(text.splitlines()):
        if i >= _MAX_SCAN:
            return None
        if HEADER.match(line):
            return line
    return None


def load(path: Path) -> Table:
    raw = read_bytes(path)
    if not raw.strip():
        raise InputError(path, "empty file", "empty")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(path, f"not UTF-8 text (byte {e.start}): not an ncu --csv export"
                         ) from None
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines[:_MAX_SCAN]) if HEADER.match(line)), None)
    if start is None:
        raise InputError(path, 'not an Nsight Compute CSV export: no "ID","Process ID",… '
                         "header line (expected `ncu --csv` or `ncu --page raw --csv` output)",
                         "unsupported")
    try:
        parsed = list(csv.reader(lines[start:]))
    except csv.Error as e:
        raise InputError(path, f"corrupt CSV: {e}") from None
    header = [h.strip() for h in parsed[0]]
    body = [r for r in parsed[1:] if any(c.strip() for c in r)]
    cut = bool(body) and not text.endswith(("\n", "\r"))
    if cut:
        body = body[:-1]  # ncu ends every row with a newline: the last one was cut
    # a one-cell line is not an ncu row: "==PROF== Disconnected …" or program output
    stray = sum(1 for r in body if len(r) == 1 and not r[0].lstrip().startswith("=="))
    body = [r for r in body if len(r) > 1]
    # metric rows of the details page stop after "Metric Value" (the rule cells are left
    # out), so short rows are padded; a row longer than the header is not ncu's
    good = [r + [""] * (len(header) - len(r)) for r in body if len(r) <= len(header)]
    return Table(header, good, len(body) - len(good), start, cut, stray)


def problems_of(t: Table) -> list[str]:
    out = []
    if t.cut:
        out.append("the file ends inside a row (no final newline): that row was dropped; "
                   "the export is truncated")
    if t.stray:
        out.append(f"{t.stray} line(s) after the header that are not table rows were skipped "
                   "(program output mixed into the export)")
    if t.malformed:
        out.append(f"{t.malformed} row(s) with more cells than the header were skipped "
                   "(edited file?)")
    return out


def identity(cells: dict[str, str], path: Path) -> KernelRecord:
    """A KernelRecord carrying the launch identity columns of one row."""
    ncu_id = cells.get("ID", "").strip()
    name = cells.get("Kernel Name", "").strip()
    if not ncu_id or not name:
        raise InputError(path, "a kernel row lacks its ID or Kernel Name: not a valid ncu export")
    g = {k: (cells.get(k) or "").strip() or None for k in IDENTITY}
    return KernelRecord(
        ncu_id=ncu_id, name=name,
        launch_key=launch_key(g["Host Name"], g["Process ID"], ncu_id, g["Context"],
                              g["Stream"], g["Grid Size"], g["Block Size"], name),
        process=g["Process Name"], pid=g["Process ID"], host=g["Host Name"],
        device=as_int(g["Device"]), cc=g["CC"], context=g["Context"],
        stream=as_int(g["Stream"]), grid=g["Grid Size"], block=g["Block Size"],
    )
