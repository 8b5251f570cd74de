"""The captured command line with a lever applied (issue 17): each arm's argv and the
difference between them as a two-line diff. What an arm changes per engine and lever template
is data (context_files.yaml `arm_commands`); a lever that changes code, not flags, leaves the
command identical and says so."""

from __future__ import annotations

import shlex
from typing import Any

from crossview.knowledge.loader import load_yaml


def _edit(argv: list[str], rule: dict[str, Any]) -> list[str]:
    out = list(argv)
    for opt in rule.get("remove", []):
        out = [a for a in out if a != opt and not a.startswith(opt + "=")]
    for opt, val in (rule.get("set") or {}).items():
        if opt in out:
            i = out.index(opt)
            out[i + 1:i + 2] = [str(val)]
        else:
            out = [a for a in out if not a.startswith(opt + "=")] + [opt, str(val)]
    for opt in rule.get("add", []):
        if opt not in out:
            out.append(opt)
    return out


def arms(argv: list[str], engine: str, template: str) -> tuple[list[str], list[str]] | None:
    """(baseline argv, variant argv), or None when the lever is not a command-line change."""
    rules = (load_yaml("context_files.yaml")["arm_commands"].get(engine) or {}).get(template)
    if not rules:
        return None
    return _edit(argv, rules.get("baseline") or {}), _edit(argv, rules.get("variant") or {})


def diff(base: list[str], var: list[str], change: str) -> list[str]:
    if base == var:
        return [f"  {shlex.join(base)}",
                f"  (command line identical in both arms; the variant changes: {change})"]
    return [f"- {shlex.join(base)}", f"+ {shlex.join(var)}"]
