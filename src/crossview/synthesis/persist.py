"""Persistence: findings/synthesis-<UTC timestamp>.{md,json} inside the bundle, and the A/B
outcomes (VERDICT / tried-null, set by `crossview ab --ledger`) carried into a re-synthesis
by lever id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from crossview.errors import InputError
from crossview.schema import versioned
from crossview.sources import guard
from crossview.synthesis.bundle import OUTPUT_DIR

if TYPE_CHECKING:
    from crossview.synthesis.ledger import Lever

KEEP = ("VERDICT", "tried-null")


def _earlier(root: Path) -> list[Path]:
    return sorted((root / OUTPUT_DIR).glob("synthesis-*.json"))


def keep_outcomes(root: Path, levers: list[Lever], warnings: list[str] | None = None
                  ) -> list[str]:
    """Rows already VERDICT / tried-null keep that status and their `ab` record (newest
    synthesis first) — only when that record shows every VERDICT gate passed
    (experiments/gates.py); an outcome without it goes back to DRAFT, with a warning.
    Returns the ids kept."""
    outcome: dict[str, tuple[str, object]] = {}
    checks: dict[str, list[object]] = {}  # replay checks (`diff --lever --ledger`) by lever id
    for path in _earlier(root):
        try:
            guard.check_open(path)  # a regular file inside the MCP roots (issue 18)
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError, InputError):
            continue  # an unreadable earlier output never blocks a new synthesis
        for row in data.get("ledger", []) if isinstance(data, dict) else []:
            if isinstance(row, dict) and row.get("confidence") in KEEP and "id" in row:
                outcome[str(row["id"])] = (str(row["confidence"]), row.get("ab"))
            if isinstance(row, dict) and isinstance(row.get("replay_checks"), list):
                checks[str(row.get("id"))] = list(row["replay_checks"])
    kept = []
    for lv in levers:
        lv.replay_checks = list(checks.get(lv.id, []))
        ab_rec = outcome[lv.id][1] if lv.id in outcome else None
        if lv.id in outcome and not (isinstance(ab_rec, dict)
                                     and ab_rec.get("failed_gates") == []):
            if warnings is not None:
                warnings.append(f"lever {lv.id}: the earlier {outcome[lv.id][0]} has no "
                                "passed VERDICT-gate record — back to DRAFT; rerun `crossview "
                                "ab --ledger … --lever " + lv.id + "`")
            continue
        if lv.id in outcome:
            lv.confidence, ab = outcome[lv.id]
            lv.ab = ab if isinstance(ab, dict) else None
            kept.append(lv.id)
    return kept


def write(root: Path, stamp: str, doc: dict[str, object], markdown: str
          ) -> tuple[Path, Path]:
    """ROOT/findings/synthesis-<stamp>.md and .json (the synthesis as `Synthesis.to_dict`)."""
    out = root / OUTPUT_DIR
    out.mkdir(exist_ok=True)
    md = out / f"synthesis-{stamp}.md"
    js = out / f"synthesis-{stamp}.json"
    md.write_text(markdown, encoding="utf-8")
    js.write_text(json.dumps(versioned(doc), indent=2, sort_keys=False) + "\n",
                  encoding="utf-8")
    return md, js
