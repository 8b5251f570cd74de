"""Synthesis tables (synthesis.yaml): source kinds, capture fixes, thresholds, templates."""

from __future__ import annotations

from typing import Any

from crossview.knowledge.loader import load_yaml

_FILE = "synthesis.yaml"


def table(key: str) -> Any:
    return load_yaml(_FILE)[key]


def capture_fix(problem: str, source: str) -> str:
    fixes = table("capture_fixes")[problem]
    return " ".join(str(fixes.get(source) or fixes["default"]).split())


def one_line(text: str) -> str:
    """YAML folded scalars keep single spaces only."""
    return " ".join(str(text).split())
