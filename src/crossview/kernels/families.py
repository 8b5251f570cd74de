"""Kernel-family classifier: maps a raw GPU kernel name to a coarse family id.

The rules live in ``kernel_families.yaml`` (ordered, first match wins); this module only
loads and applies them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from crossview.knowledge.loader import load_yaml

FAMILIES: tuple[str, ...] = (
    "gemm",
    "attention",
    "moe",
    "comm",
    "norm",
    "activation",
    "rope",
    "kv-cache",
    "sampling",
    "quant",
    "memory",
    "elementwise",
    "reduction",
    "other",
)
"""All family ids, in a stable display order; "other" means no rule matched."""

OTHER = "other"
_TABLE = "kernel_families.yaml"


@dataclass(frozen=True)
class _Rule:
    family: str
    patterns: tuple[re.Pattern[str], ...]
    exclude: tuple[re.Pattern[str], ...]

    def matches(self, name: str) -> bool:
        return any(p.search(name) for p in self.patterns) and not any(
            x.search(name) for x in self.exclude
        )


def _compile(regexes: Sequence[str] | None) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(r, re.IGNORECASE) for r in regexes or ())


@lru_cache(maxsize=1)
def _rules() -> tuple[_Rule, ...]:
    """Load and compile the table once; reject unknown family ids."""
    rules = []
    for entry in load_yaml(_TABLE):  # libyaml's loader, checked against its schema
        family = entry["family"]
        if family not in FAMILIES or family == OTHER:
            raise ValueError(f"{_TABLE}: unknown family {family!r}")
        rules.append(_Rule(family, _compile(entry["patterns"]), _compile(entry.get("exclude"))))
    return tuple(rules)


@lru_cache(maxsize=65536)
def classify(name: str) -> str:
    """Return the family id of one kernel name ("other" when no rule matches)."""
    for rule in _rules():
        if rule.matches(name):
            return rule.family
    return OTHER


def classify_many(names: Sequence[str]) -> list[str]:
    """Classify a sequence of names, evaluating each distinct name once."""
    by_name = {n: classify(n) for n in dict.fromkeys(names)}
    return [by_name[n] for n in names]
