"""Only the verdict decides a finding (issue 37): no code outside src/crossview/verdict/ builds
a Finding or assigns its severity, fix, title, observation or expected effect. Walks every
module's syntax tree; the walker itself is checked on a sample that does each forbidden thing."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "crossview"
DECIDED = {"severity", "fix", "title", "observation", "expected_effect"}


def offences(text: str, rel: str) -> list[str]:
    out = []
    for n in ast.walk(ast.parse(text)):
        targets: list[ast.expr] = []
        if isinstance(n, ast.Assign):
            targets = list(n.targets)
        elif isinstance(n, ast.AugAssign | ast.AnnAssign):
            targets = [n.target]
        for t in targets:
            for x in ast.walk(t):
                if isinstance(x, ast.Attribute) and x.attr in DECIDED:
                    out.append(f"{rel}:{n.lineno}: assigns .{x.attr}")
        if isinstance(n, ast.Call):
            name = n.func.id if isinstance(n.func, ast.Name) else (
                n.func.attr if isinstance(n.func, ast.Attribute) else "")
            if name == "Finding":
                out.append(f"{rel}:{n.lineno}: builds a Finding")
            if name == "replace" and any(k.arg in DECIDED for k in n.keywords):
                out.append(f"{rel}:{n.lineno}: replaces a decided field")
            if name == "setattr" and len(n.args) > 1 and isinstance(n.args[1], ast.Constant) \
                    and n.args[1].value in DECIDED:
                out.append(f"{rel}:{n.lineno}: setattr of a decided field")
    return out


def test_the_walker_finds_each_kind() -> None:
    sample = ("f.severity = 'red'\nf.fix += ' x'\nFinding(pattern='p')\n"
              "dataclasses.replace(f, title='t')\nsetattr(f, 'expected_effect', '')\n"
              "f.details['x'] = 1\n")
    got = offences(sample, "x.py")
    assert got == ["x.py:1: assigns .severity", "x.py:2: assigns .fix",
                   "x.py:3: builds a Finding", "x.py:4: replaces a decided field",
                   "x.py:5: setattr of a decided field"], got


def test_only_the_verdict_decides_a_finding() -> None:
    found = []
    for p in sorted(SRC.rglob("*.py")):
        rel = p.relative_to(SRC).as_posix()
        if rel.startswith("verdict/") or rel == "core/finding.py":
            continue
        found += offences(p.read_text(encoding="utf-8"), rel)
    assert not found, "\n".join(found)


def test_the_verdict_builds_each_finding_in_one_place() -> None:
    builders = [f"{p.relative_to(SRC).as_posix()}" for p in sorted((SRC / "verdict").glob("*.py"))
                if "builds a Finding" in " ".join(offences(p.read_text(encoding="utf-8"), ""))]
    assert builders == ["verdict/build.py"], builders
