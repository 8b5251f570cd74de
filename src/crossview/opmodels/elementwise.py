"""Elementwise ops and reductions: bytes only (FLOPs are negligible against the bytes; the
roofline of these ops is the DRAM bandwidth).

Elementwise: bytes = every tensor input read once + the output written once, the output the
broadcast of the tensor inputs in the first input's dtype. copy_: bytes = src read + dst
written. fill_/zero_: the tensor written once. Reductions: the input read once (the output,
at most the input's size and usually far smaller, is left out)."""

from __future__ import annotations

from functools import cache

from crossview.knowledge.loader import load_yaml
from crossview.opmodels.dtypes import TABLE
from crossview.opmodels.inputs import OpCost, OpInputs, numel


@cache
def _out_at() -> dict[str, int]:
    return {str(k): int(v) for k, v in load_yaml(TABLE)["elementwise_out_at"].items()}


def _base(name: str) -> str:
    return name.rsplit("::", 1)[-1].rstrip("_")


def _broadcast(shapes: list[tuple[int, ...]]) -> tuple[int, ...] | None:
    n = max(len(s) for s in shapes)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate((1,) * (n - len(s)) + s):
            if d != out[i] and out[i] != 1 and d != 1:
                return None
            out[i] = max(out[i], d) if d != 1 else out[i]
    return tuple(out)


def elementwise(inp: OpInputs) -> OpCost | None:
    """Any pointwise op (add, mul, silu, gelu, neg, …, in place or not, Triton pointwise).
    Bytes = Σ numel(input_i)·b_i + numel(broadcast output)·b_0. FLOPs: 0 (bytes only).
    A `.out` overload's out tensor (knowledge/op_models.yaml elementwise_out_at) is the
    output: written once, not read."""
    at = _out_at().get(_base(inp.name))
    out_t = inp.shape(at) if at is not None else None
    n_in = at if out_t is not None and at is not None else len(inp.dims)
    ins = OpInputs(inp.name, inp.dims[:n_in], inp.types[:n_in], inp.concrete[:n_in])
    ts = ins.tensors()
    if not ts:
        return None
    out = out_t if out_t is not None else _broadcast([s for s, _ in ts])
    if out is None:
        return None
    t0 = ts[0][1]
    ot = inp.dtype(at) if out_t is not None and at is not None else t0
    nbytes = sum(numel(s) * t.bytes for s, t in ts) + numel(out) * (ot or t0).bytes
    return OpCost(0.0, nbytes, t0, f"{list(out)}", "elementwise", "elementwise")


def copy(inp: OpInputs) -> OpCost | None:
    """aten::copy_(dst, src, non_blocking): bytes = numel(src)·b_src + numel(dst)·b_dst."""
    d, s = inp.shape(0), inp.shape(1)
    td, tsrc = inp.dtype(0), inp.dtype(1)
    if d is None or s is None or td is None or tsrc is None:
        return None
    nbytes = numel(s) * tsrc.bytes + numel(d) * td.bytes
    return OpCost(0.0, nbytes, td, f"{list(d)} {tsrc.name}→{td.name}", "copy", "elementwise")


def fill(inp: OpInputs) -> OpCost | None:
    """aten::fill_ / zero_ (x, value): bytes = numel(x)·b (written once)."""
    x, t = inp.shape(0), inp.dtype(0)
    if x is None or t is None:
        return None
    return OpCost(0.0, numel(x) * t.bytes, t, f"{list(x)}", "fill", "elementwise")


def reduction(inp: OpInputs) -> OpCost | None:
    """sum / mean / max / amax / all / any / norm (x, dims, …): bytes = numel(x)·b."""
    x, t = inp.shape(0), inp.dtype(0)
    if x is None or t is None:
        return None
    return OpCost(0.0, numel(x) * t.bytes, t, f"{list(x)}", "reduction", "reduction")
