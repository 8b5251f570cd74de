"""The lever ledger (conventions.md §6) as far as `crossview ab` needs it: read the JSON, set
one lever's `confidence` and `ab` from an A/B result, write it back. Every other field and
every other lever is kept exactly as read (docs/input-formats.md "Ledger JSON")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from crossview.errors import InputError, UsageError
from crossview.experiments.ab import ABResult


def read_ledger(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(path, f"cannot read ledger: {e.strerror or e}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(path, f"ledger is not valid JSON: {e}") from None
    # a synthesis JSON (crossview synthesize) keeps its rows under "ledger"
    key = "levers" if isinstance(data, dict) and "levers" in data else "ledger"
    if not isinstance(data, dict) or not isinstance(data.get(key), list) or not all(
            isinstance(r, dict) and "id" in r for r in data[key]):
        raise InputError(path, 'not a ledger: expected {"levers": [{"id": …, …}, …]} or a '
                         'synthesis JSON {"ledger": [{"id": …, …}, …]}')
    return data


def rows_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    return data["levers"] if "levers" in data else data["ledger"]


def lever_outcome(res: ABResult) -> tuple[str, str, str]:
    """(confidence, ab verdict, reason) for the lever from all compared metrics."""
    if res.refusals:
        return "DRAFT", "refused", "; ".join(res.refusals)
    vs = {m.verdict for m in res.metrics}
    if "win" in vs and "loss" in vs:
        return "VERDICT", "mixed", "some metrics win, others lose"
    for v in ("win", "loss"):
        if v in vs:
            return "VERDICT", v, ", ".join(m.metric for m in res.metrics if m.verdict == v)
    if "null" in vs:
        return "tried-null", "null", "no metric changed beyond noise"
    why = "; ".join(f"{m.metric}: {m.reason}" for m in res.metrics) or "no metric compared"
    return "DRAFT", "insufficient", why


def update_ledger(path: Path, lever_id: str, res: ABResult, ab_json: dict[str, Any]) -> str:
    """Record the A/B on lever `lever_id`; returns the new confidence."""
    data = read_ledger(path)
    row = next((r for r in rows_of(data) if str(r["id"]) == lever_id), None)
    if row is None:
        ids = ", ".join(str(r["id"]) for r in rows_of(data)) or "none"
        raise UsageError(f"--lever {lever_id!r}: no such lever in {path} (ids: {ids})")
    confidence, verdict, reason = lever_outcome(res)
    row["confidence"] = confidence
    row["ab"] = {"verdict": verdict, "reason": reason,
                 "baseline": res.baseline.paths, "variant": res.variant.paths, **ab_json}
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return confidence
