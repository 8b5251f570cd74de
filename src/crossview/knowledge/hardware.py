"""Hardware ceilings (sol_ceilings.yaml) and device-name matching (hw_names.yaml).

`match(name)` maps a device name as any source writes it to a typed `HwSpec`, or None when
the device is not in the data file (the caller then says "not in sol_ceilings.yaml").
Every number here comes from the YAML; this module converts units and nothing else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from crossview.knowledge.loader import load_yaml

CEILINGS_FILE = "sol_ceilings.yaml"
_GIB = 2**30
_T = 1e12
_G = 1e9


@dataclass(frozen=True)
class HwSpec:
    hw_key: str
    name: str
    vendor: str
    source: str
    sm_count: int | None
    memory_bytes: float | None
    dram_bytes_per_s: float | None
    flops: dict[str, float | None] = field(default_factory=dict)  # FLOP/s, dense
    nvlink_bytes_per_s: float | None = None
    nvlink_direction: str | None = None  # bidirectional | per-direction
    pcie_bytes_per_s: float | None = None
    pcie_direction: str | None = None
    derived: str = ""  # how values not read off a datasheet were computed

    def peak_flops(self, precision: str) -> float | None:
        """Dense peak FLOP/s for a precision key (fp32, bf16_tensor, …); None if unstated."""
        return self.flops.get(precision)


def _scaled(value: Any, unit: float) -> float | None:
    return None if value is None else float(value) * unit


def _spec(key: str, d: dict[str, Any]) -> HwSpec:
    return HwSpec(
        hw_key=key, name=str(d["name"]), vendor=str(d.get("vendor", "")),
        source=str(d["source"]), sm_count=d.get("sm_count"),
        memory_bytes=_scaled(d.get("hbm_gb"), _G),
        dram_bytes_per_s=_scaled(d.get("hbm_tb_s"), _T),
        flops={k: _scaled(v, _T) for k, v in (d.get("tflops") or {}).items()},
        nvlink_bytes_per_s=_scaled(d.get("nvlink_gb_s"), _G),
        nvlink_direction=d.get("nvlink_direction"),
        pcie_bytes_per_s=_scaled(d.get("pcie_gb_s"), _G),
        pcie_direction=d.get("pcie_direction"),
        derived=str(d.get("derived", "")),
    )


@cache
def specs() -> dict[str, HwSpec]:
    """Every GPU in sol_ceilings.yaml by hw_key."""
    return {k: _spec(k, v) for k, v in load_yaml(CEILINGS_FILE).items()}


@dataclass(frozen=True)
class _NameRule:
    pattern: re.Pattern[str]
    hw_key: str
    mem_min: float | None
    mem_max: float | None

    def applies(self, name: str, mem_gib: float | None) -> bool:
        if not self.pattern.search(name):
            return False
        if self.mem_min is None and self.mem_max is None:
            return True
        return mem_gib is not None and _in_range(mem_gib, self.mem_min, self.mem_max)


def _in_range(x: float, lo: float | None, hi: float | None) -> bool:
    return (lo is None or x >= lo) and (hi is None or x < hi)


@cache
def _rules() -> tuple[tuple[_NameRule, ...], tuple[dict[str, Any], ...]]:
    data = load_yaml("hw_names.yaml")
    known = specs()
    rules = []
    for r in data["names"]:
        if r["hw_key"] not in known:
            raise ValueError(f"hw_names.yaml: {r['hw_key']!r} is not in {CEILINGS_FILE}")
        rules.append(_NameRule(re.compile(r["pattern"], re.IGNORECASE), r["hw_key"],
                               r.get("mem_gib_min"), r.get("mem_gib_max")))
    return tuple(rules), tuple(data.get("properties") or ())


def match(name: str | None, *, sm_count: int | None = None, mem_bytes: float | None = None,
          cc: str | None = None) -> HwSpec | None:
    """The ceilings of a device named `name` (any source's spelling), or None if unknown.

    An empty name (ROCm Kineto traces) falls back to the properties table when the capture
    gives compute capability, SM/CU count and memory.
    """
    mem_gib = mem_bytes / _GIB if mem_bytes else None
    rules, props = _rules()
    text = (name or "").strip()
    if text:
        for r in rules:
            if r.applies(text, mem_gib):
                return specs()[r.hw_key]
        return None
    for p in props:
        if (cc is not None and str(p["cc"]) == str(cc) and sm_count == p["sm_count"]
                and (("mem_gib_min" not in p and "mem_gib_max" not in p)
                     or (mem_gib is not None
                         and _in_range(mem_gib, p.get("mem_gib_min"), p.get("mem_gib_max"))))):
            return specs()[p["hw_key"]]
    return None


def by_key(hw_key: str) -> HwSpec | None:
    return specs().get(hw_key)
