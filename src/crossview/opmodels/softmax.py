"""Softmax along one dim: FLOPs = 5·numel (max, subtract, exp, sum, divide per element);
minimal bytes = read the input once, write the output once (fused, one pass over DRAM).
Backward: FLOPs = 3·numel (product, row sum, scaled difference); bytes = read grad_out and
out, write grad_in."""

from __future__ import annotations

from crossview.opmodels.inputs import OpCost, OpInputs, numel


def softmax(inp: OpInputs) -> OpCost | None:
    """aten::_softmax / softmax / _log_softmax (x, dim, …). FLOPs = 5·numel(x).
    Bytes = 2·numel(x)·b."""
    x, t = inp.shape(0), inp.dtype(0)
    if x is None or t is None:
        return None
    n = numel(x)
    return OpCost(5.0 * n, 2.0 * n * t.bytes, t, f"{list(x)}", "softmax", "softmax")


def softmax_bwd(inp: OpInputs) -> OpCost | None:
    """aten::_softmax_backward_data / _log_softmax_backward_data(grad_out, out, dim, …).
    FLOPs = 3·numel. Bytes = 3·numel·b."""
    x, t = inp.shape(0), inp.dtype(0)
    if x is None or t is None:
        return None
    n = numel(x)
    return OpCost(3.0 * n, 3.0 * n * t.bytes, t, f"{list(x)}", "softmax_bwd", "softmax")
