"""Findings: what a detector concludes, with its numbers, evidence and fix."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Severity = Literal["red", "yellow", "info"]
Rigor = Literal["L1", "L2", "L3", "L4"]


@dataclass
class Evidence:
    """Where a number came from: artifact path and what was read."""

    artifact: str
    what: str

    def __str__(self) -> str:
        return f"{self.artifact}: {self.what}"


ShareOf = Literal["time", "kernel_time", "requests"]


@dataclass
class Finding:
    pattern: str  # stable id from conventions.md §2
    severity: Severity
    title: str
    observation: str
    fix: str
    share: float  # fraction (0..1) of the filtered time this finding accounts for
    evidence: list[Evidence]
    rigor: Rigor = "L2"
    confidence: str = "DRAFT"
    actionable: bool = True  # False: third-party/system frames; never takes a red
    expected_effect: str = ""
    details: dict[str, object] = field(default_factory=dict)
    # what `share` is a fraction of: "time" (the steady step, or the filtered wall time
    # without steps) or "kernel_time" (the kernel time in scope: op and kernel findings); the
    # ledger turns a share into time with the matching base
    share_of: ShareOf = "time"

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["evidence"] = [str(e) for e in self.evidence]
        return d
