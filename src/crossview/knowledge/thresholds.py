"""Thresholds as data (thresholds.yaml), typed for detectors (schema: thresholds_schema.py)."""

from __future__ import annotations

from crossview.knowledge.loader import load_typed
from crossview.knowledge.thresholds_schema import Thresholds

__all__ = ["Thresholds", "defaults"]


def defaults() -> Thresholds:
    """thresholds.yaml decoded strictly (cached by the loader)."""
    t: Thresholds = load_typed("thresholds.yaml")
    return t
