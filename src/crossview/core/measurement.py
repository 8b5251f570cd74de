"""Measurement: one number with its unit, its evidence and the context fields that matter.

conventions.md §5: a number without its context and evidence is not emitted, and two numbers
are compared only when their contexts match on everything but the lever under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crossview import units


@dataclass(frozen=True)
class Measurement:
    value: float
    unit: str  # ns | % | count | B | B/s | FLOP/s | x (ratio) | FLOP/B
    evidence: str  # artifact path relative to the bundle (+ what was read, after ": ")
    context: dict[str, str] = field(default_factory=dict)  # the fields that matter for it

    def text(self) -> str:
        """The value with its unit, as people read it."""
        v = self.value
        if self.unit == "ns":
            return units.duration(v)
        if self.unit == "%":
            return f"{v:.1f}%"
        if self.unit == "count":
            return f"{int(v):,}"
        if self.unit == "B":
            return units.size(v)
        if self.unit == "B/s":
            return units.bandwidth(v)
        if self.unit == "FLOP/s":
            return units.flop_rate(v)
        if self.unit == "x":
            return f"{v:.2f}×"
        return f"{v:,.3g} {self.unit}"

    def cited(self) -> str:
        return f"{self.text()} [{self.evidence}]"

    def to_dict(self) -> dict[str, object]:
        return {"value": self.value, "unit": self.unit, "text": self.text(),
                "evidence": self.evidence, "context": dict(sorted(self.context.items()))}


@dataclass(frozen=True)
class Comparison:
    """Whether two measurements may be compared; `refused` names the differing fields."""

    a: Measurement
    b: Measurement
    lever: tuple[str, ...]
    refused: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.refused

    def reason(self) -> str:
        a, b = self.a.context, self.b.context
        return "; ".join(f"{k}: {a.get(k, 'unknown')} vs {b.get(k, 'unknown')}"
                         for k in self.refused)


def compare(a: Measurement, b: Measurement, lever: tuple[str, ...] = ()) -> Comparison:
    """Refuse (name the fields) when the contexts differ on anything but `lever`.

    A field known on one side only is not a difference (unknown is not a value); it stays
    visible in each measurement's context."""
    keys = sorted((set(a.context) & set(b.context)) - set(lever))
    diff = tuple(k for k in keys if a.context[k] != b.context[k]
                 and "unknown" not in (a.context[k], b.context[k]))
    return Comparison(a, b, tuple(lever), diff)
