"""The counters of one profiled kernel launch, merged over its exports, looked up by meaning.

ncu writes one launch to several files (details page, chosen metrics, one section's CSV);
their rows are merged here (first artifact wins on a repeated metric) and each roofline input
is found through the spellings in knowledge/ncu_metrics.yaml. Every value keeps the artifact
and the metric or label it came from, so each printed number can cite its evidence.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from crossview.knowledge.loader import load_yaml


@dataclass(frozen=True)
class Value:
    value: float
    what: str  # metric name, or "Section: Label" for a details-page row
    artifact: str

    def cite(self) -> str:
        return f"{Path(self.artifact).name}: {self.what}"


@dataclass(frozen=True)
class _Alt:
    metric: str | None
    label: str | None
    section: str | None
    unit: str | None


@cache
def _table() -> dict[str, Any]:
    return load_yaml("ncu_metrics.yaml")


@cache
def _alternatives() -> dict[str, tuple[_Alt, ...]]:
    return {k: tuple(_Alt(a.get("metric"), a.get("label"), a.get("section"), a.get("unit"))
                     for a in alts) for k, alts in _table()["inputs"].items()}


@cache
def pipe_pattern() -> re.Pattern[str]:
    return re.compile(_table()["pipe_utilization"])


@cache
def library_kernel_pattern() -> re.Pattern[str]:
    return re.compile(str(_table()["library_kernels"]))


@cache
def gemm_tile_pattern() -> re.Pattern[str]:
    return re.compile(str(_table()["gemm_tile_in_name"]))


@cache
def waves_rule_pattern() -> str:
    return str(_table()["waves_rule_text"])


@cache
def tensor_rules() -> tuple[re.Pattern[str], tuple[tuple[re.Pattern[str], tuple[str, ...]], ...],
                            re.Pattern[str]]:
    t = _table()
    rules = tuple((re.compile(r["pattern"]), tuple(r["ceilings"])) for r in t["tensor_ops"])
    return re.compile(t["tensor_ops_metric"]), rules, re.compile(t["tensor_activity"])


class KernelInputs:
    """Rows: (section, metric, value, unit, artifact path), in artifact order."""

    def __init__(self, rows: list[tuple[str, str, float | None, str, str]]) -> None:
        self._by_metric: dict[str, list[tuple[str, float | None, str, str]]] = {}
        for section, metric, value, unit, art in rows:
            self._by_metric.setdefault(metric, []).append((section, value, unit, art))

    def get(self, key: str) -> Value | None:
        for alt in _alternatives()[key]:
            name = alt.metric or alt.label or ""
            for section, value, unit, art in self._by_metric.get(name, ()):
                if value is None:
                    continue
                if alt.section and not section.startswith(alt.section):
                    continue
                if alt.unit is not None and unit != alt.unit:
                    continue
                what = name if alt.metric else f"{section.split(' › ')[0]}: {name}"
                return Value(float(value), what, art)
        return None

    def value(self, key: str) -> float | None:
        v = self.get(key)
        return v.value if v else None

    def matching(self, pattern: re.Pattern[str]) -> list[tuple[str, Value | None]]:
        """Every metric whose name matches, with its value (None when ncu wrote n/a)."""
        out: list[tuple[str, Value | None]] = []
        for metric, rows in sorted(self._by_metric.items()):
            if pattern.search(metric):
                hit = next(((v, a) for _s, v, _u, a in rows if v is not None), None)
                out.append((metric, Value(float(hit[0]), metric, hit[1]) if hit else None))
        return out
