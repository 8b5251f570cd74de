"""What an operator model reads and returns: the recorded inputs of one host op, its cost.

`OpInputs` wraps Kineto's `Input Dims` / `Input type` / `Concrete Inputs` lists (stored as
read in op_args). A model returns an `OpCost` (FLOPs and minimal DRAM bytes of one call) or
None when the recorded inputs do not determine them (the caller says which op went unmodeled).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from crossview.opmodels import dtypes


@dataclass(frozen=True)
class OpInputs:
    name: str
    dims: tuple[object, ...]  # per input: list of ints (a tensor), [] (a scalar), nested lists
    types: tuple[str, ...]
    concrete: tuple[str, ...]

    @classmethod
    def from_json(cls, name: str, dims: str | None, types: str | None,
                  concrete: str | None) -> OpInputs:
        def load(text: str | None) -> tuple[object, ...]:
            try:
                v = json.loads(text) if text else []
            except ValueError:
                return ()
            return tuple(v) if isinstance(v, list) else ()
        return cls(name, load(dims), tuple(str(t) for t in load(types)),
                   tuple(str(c) for c in load(concrete)))

    def shape(self, i: int) -> tuple[int, ...] | None:
        """Input i's shape when it is a tensor of known dtype (else None)."""
        if i >= len(self.dims) or i >= len(self.types):
            return None
        d = self.dims[i]
        if not isinstance(d, list) or not all(isinstance(x, int) for x in d):
            return None
        if dtypes.info(self.types[i]) is None:
            return None
        return tuple(d)

    def tensors(self) -> list[tuple[tuple[int, ...], dtypes.DType]]:
        """Every tensor input with a known dtype, in order."""
        out = []
        for i in range(len(self.dims)):
            s = self.shape(i)
            t = dtypes.info(self.types[i]) if i < len(self.types) else None
            if s is not None and t is not None:
                out.append((s, t))
        return out

    def dtype(self, i: int) -> dtypes.DType | None:
        return dtypes.info(self.types[i]) if i < len(self.types) else None

    def concrete_at(self, i: int) -> str:
        return self.concrete[i] if i < len(self.concrete) else ""

    def flag(self, i: int) -> bool | None:
        """A recorded bool scalar ('True'/'False'), or None when not recorded."""
        v = self.concrete_at(i)
        return {"True": True, "False": False}.get(v)

    def ints(self, i: int) -> list[int] | None:
        """A recorded int list scalar ('[1, 1]') or int ('1'), or None."""
        v = self.concrete_at(i).strip()
        if not v:
            return None
        try:
            x = json.loads(v)
        except ValueError:
            return None
        if isinstance(x, int):
            return [x]
        if isinstance(x, list) and all(isinstance(e, int) for e in x):
            return x
        return None


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 1


@dataclass(frozen=True)
class OpCost:
    """One call's work: `flops` (0 for bytes-only models), minimal DRAM `bytes` (each input
    read once, each output written once), the dtype the roofline ceiling is chosen by, a
    readable shape key, and the model that computed it."""

    flops: float
    bytes: float
    dtype: dtypes.DType
    shape: str
    model: str
    family: str  # matmul | conv | attention | norm | softmax | elementwise | reduction | embedding
    ceiling_kind: str = "default"  # which dtype ceiling list applies (matmul, conv, default)

    @property
    def bytes_only(self) -> bool:
        return self.flops == 0
