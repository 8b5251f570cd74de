"""Findings whose time lies inside another finding's (knowledge/finding_relations.yaml).

Two lines of a recap are read as two savings. Where one finding's time is part of another's
(RMSNorm's memory-bound ops are one-op kernels the unfused-elementwise finding also counts; a
first call's setup is host time inside a launch-bound wait), the inner finding's expected
effect names the outer one, so nobody adds them. Applied once, to the final ranked findings:
info notes hold no saving, so they are never the outer finding.
"""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.knowledge.loader import load_yaml

_SAVING = ("red", "yellow")


def apply(findings: list[Finding]) -> list[Finding]:
    rules = load_yaml("finding_relations.yaml")
    present = {f.pattern: f for f in findings if f.severity in _SAVING}
    for f in findings:
        rule = rules.get(f.pattern)
        if rule is None or f.severity not in _SAVING or "within" in f.details:
            continue
        ops = f.details.get("ops")
        skip = set(rule.get("unless_op_families", []))
        if skip and isinstance(ops, list) and any(o.get("family") in skip for o in ops):
            continue
        outer = next((present[p] for p in rule["within"] if p in present), None)
        if outer is None:
            continue
        f.details["within"] = outer.pattern
        note = rule["text"].format(other=outer.pattern, title=outer.title)
        f.expected_effect = f"{f.expected_effect} {note}" if f.expected_effect else note
    return findings
