"""The Context of the bundle a result file or capture sits in: `crossview capture` writes
bundle.yaml (model, GPU, hostname, GPU UUIDs…) at the bundle's root, up to three folders above
the files it holds. Read by the VERDICT gates (experiments/gates.py) and by capture trials
(experiments/capture_trials.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from crossview.errors import InputError
from crossview.sources import guard


def near_bundle(path: str) -> dict[str, Any]:
    """The Context of the bundle.yaml `crossview capture` writes above a trial file."""
    for d in list(Path(path).resolve().parents)[:3]:
        f = d / "bundle.yaml"
        if f.is_file():
            try:
                guard.check_open(f)  # the MCP server reads nothing outside its roots
                data = yaml.safe_load(f.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError, UnicodeDecodeError, InputError):
                return {}
            ctx = data.get("context") if isinstance(data, dict) else None
            return ctx if isinstance(ctx, dict) else {}
    return {}
