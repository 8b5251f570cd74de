"""Optional inputs of the report beside the analysis: the synthesis ledger
(`findings/synthesis-*.json` in an input folder, written by `crossview synthesize`) and an
A/B result (`crossview ab --format json`). Read and checked here; rendered by ledger_tables.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossview.errors import InputError

LEDGER_KEYS = ("rank", "lever", "type", "expected_effect", "evidence_artifacts", "source_refs",
               "sol_rigor", "confidence",
               "measured_effect")  # issue 17: the A/B's measured change on VERDICT rows


@dataclass
class Synthesis:
    path: Path
    ledger: list[dict[str, Any]]
    contradictions: list[Any] = field(default_factory=list)
    experiments: list[Any] = field(default_factory=list)
    frontier: list[Any] = field(default_factory=list)


def _load(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(str(path), f"cannot read ({e.strerror or e})") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "not UTF-8 text (expected JSON)") from None
    if not text.strip():
        raise InputError(str(path), "empty file (expected JSON)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(str(path), f"not valid JSON ({e.msg} at line {e.lineno})") from None


def _list(d: dict[str, Any], key: str, path: Path) -> list[Any]:
    v = d.get(key) or []
    if not isinstance(v, list):
        raise InputError(str(path), f"`{key}` is not a list")
    return v


def synthesis_files(paths: list[Path]) -> list[Path]:
    """The newest synthesis file (by name: they carry a timestamp) of each input folder."""
    out: list[Path] = []
    for p in paths:
        found = sorted((p / "findings").glob("synthesis-*.json")) if p.is_dir() else []
        if found:
            out.append(found[-1])
    return out


def read_synthesis(path: Path) -> Synthesis:
    d = _load(path)
    if not isinstance(d, dict) or "ledger" not in d:
        raise InputError(str(path), "not a synthesis file (no `ledger` key)")
    rows = _list(d, "ledger", path)
    if not all(isinstance(r, dict) for r in rows):
        raise InputError(str(path), "`ledger` rows must be objects")
    return Synthesis(path, rows, _list(d, "contradictions", path),
                     _list(d, "experiments", path), _list(d, "frontier", path))


def read_ab(path: Path) -> dict[str, Any]:
    d = _load(path)
    if not isinstance(d, dict) or not isinstance(d.get("metrics"), list):
        raise InputError(str(path), "not an A/B result (expected `crossview ab --format json`"
                         " output with a `metrics` list)")
    if not all(isinstance(m, dict) and "metric" in m for m in d["metrics"]):
        raise InputError(str(path), "A/B `metrics` rows must be objects with a `metric`")
    return d
