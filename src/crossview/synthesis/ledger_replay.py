"""`crossview diff BEFORE AFTER --lever NAME --ledger L.json` (issue 39 item 5): the replay's
prediction, the measured twin and the error recorded on the ledger row of the lever's
finding. The row is the one whose finding the lever addresses (the pattern's Declaration
`About.levers`: dataloader-workers → `finding:dataloader-starved`) unless `row_id` names it.
A replay check is evidence beside the row (`replay_checks`, newest last); it never changes the
row's confidence — one capture per side is not an A/B (that is `crossview ab`, ≥ 3 per arm)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crossview.detectors import levers_by_pattern
from crossview.errors import UsageError
from crossview.experiments.lever_check import LeverCheck
from crossview.synthesis.ledger_update import read_ledger, rows_of


def _row_for(data: dict[str, Any], levers: list[str], row_id: str | None) -> dict[str, Any]:
    rows = rows_of(data)
    ids = ", ".join(str(r["id"]) for r in rows) or "none"
    if row_id is not None:
        row = next((r for r in rows if str(r["id"]) == row_id), None)
        if row is None:
            raise UsageError(f"--ledger-row {row_id!r}: no such lever row (ids: {ids})")
        return row
    names = {s.partition("=")[0] for s in levers}
    patterns = [p for p, lv in levers_by_pattern().items() if names & set(lv)]
    hits = [r for r in rows if str(r["id"]) in {f"finding:{p}" for p in patterns}]
    if len(hits) != 1:
        raise UsageError(f"--ledger: {'no' if not hits else 'more than one'} ledger row for "
                         f"--lever {', '.join(sorted(names))} (finding rows "
                         f"{', '.join('finding:' + p for p in patterns) or 'none'}); name it "
                         f"with --ledger-row ID (ids: {ids})")
    return hits[0]


def record(path: Path, check: LeverCheck, row_id: str | None = None) -> str:
    """Append the check to the row's `replay_checks`; returns the row's id."""
    data = read_ledger(path)
    row = _row_for(data, check.levers, row_id)
    entry = {k: v for k, v in check.to_dict().items()
             if k in ("levers", "before", "after", "units", "predicted_step_ns", "range_ns",
                      "unknowns", "measured_step_ns", "measured_all_steps_ns", "error_pct",
                      "measured_inside_range", "after_steady_steps")}
    row.setdefault("replay_checks", []).append(entry)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return str(row["id"])
