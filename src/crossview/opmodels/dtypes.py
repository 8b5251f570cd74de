"""Recorded dtype names (Kineto `Input type`) → element size and roofline ceilings (data:
knowledge/op_models.yaml `dtypes`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from crossview.knowledge.loader import load_yaml

TABLE = "op_models.yaml"


@dataclass(frozen=True)
class DType:
    name: str  # bf16, fp16, fp32, fp8, int64, …
    bytes: float  # per element
    ceilings: dict[str, tuple[str, ...]]  # ceiling kind → sol_ceilings precision keys, in order
    tensor_cores: bool  # whether its default compute ceiling is a tensor-core one

    def ceiling_keys(self, kind: str) -> tuple[str, ...]:
        return self.ceilings.get(kind) or self.ceilings.get("default") or ()


@cache
def _table() -> dict[str, DType]:
    out: dict[str, DType] = {}
    for spelling, d in load_yaml(TABLE)["dtypes"].items():
        ceil = {k: tuple(v) for k, v in (d.get("ceilings") or {}).items()}
        out[str(spelling)] = DType(str(d["name"]), float(d["bytes"]), ceil,
                                   bool(d.get("tensor_cores", False)))
    return out


def info(spelling: str) -> DType | None:
    """The dtype of a recorded `Input type` spelling, or None (Scalar, TensorList, '', …)."""
    return _table().get(spelling)


def by_name(name: str) -> DType | None:
    return next((d for d in _table().values() if d.name == name), None)
