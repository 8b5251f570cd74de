"""Small shared helpers for detectors: severity cut-offs and unit formatting."""

from __future__ import annotations

from crossview.model.finding import Evidence, Severity
from crossview.units import duration
from crossview.views.views import Views


def severity(share: float, red: float, yellow: float) -> Severity | None:
    if share >= red:
        return "red"
    if share >= yellow:
        return "yellow"
    return None


ms = duration  # nanoseconds with their unit


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def evidence(v: Views, what: str) -> list[Evidence]:
    return [Evidence(a, what) for a in v.filter.artifacts]


def short(name: str, limit: int = 90) -> str:
    """Shorten a recorded name with an ellipsis only (never paraphrase)."""
    return name if len(name) <= limit else name[: limit - 1] + "…"
