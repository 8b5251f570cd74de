"""Normalizations: memory-bound by construction, FLOPs counted per element for the record.

Minimal bytes = read the input (and residual), write the output (and updated residual), read
the per-channel parameters once. FLOPs per element: layer norm 8 (mean 1, variance 3,
normalize 2, affine 2), RMS norm 4 (square 1, sum 1, scale 1, weight 1), fused add + RMS
norm 5 (one more add), batch norm 8 (as layer norm, statistics over N·H·W)."""

from __future__ import annotations

from crossview.opmodels.inputs import OpCost, OpInputs, numel


def _norm(inp: OpInputs, xi: int, per_elem: float, reads: int, writes: int, params: float,
          model: str) -> OpCost | None:
    x, t = inp.shape(xi), inp.dtype(xi)
    if x is None or t is None or not x:
        return None
    n = numel(x)
    nbytes = (reads + writes) * n * t.bytes + params * t.bytes
    return OpCost(per_elem * n, nbytes, t, f"{list(x)}", model, "norm")


def _params(inp: OpInputs, *idx: int) -> float:
    total = 0.0
    for i in idx:
        s = inp.shape(i)
        if s is not None:
            total += numel(s)
    return total


def layer_norm(inp: OpInputs) -> OpCost | None:
    """aten::layer_norm / native_layer_norm(x, normalized_shape, weight, bias, eps).
    FLOPs = 8·numel(x). Bytes = (2·numel(x) + numel(weight) + numel(bias))·b."""
    return _norm(inp, 0, 8, 1, 1, _params(inp, 2, 3), "layer_norm")


def rms_norm(inp: OpInputs) -> OpCost | None:
    """aten::rms_norm(x, normalized_shape, weight, eps) / _fused_rms_norm.
    FLOPs = 4·numel(x). Bytes = (2·numel(x) + numel(weight))·b."""
    return _norm(inp, 0, 4, 1, 1, _params(inp, 2), "rms_norm")


def vllm_rms_norm(inp: OpInputs) -> OpCost | None:
    """vLLM _C::rms_norm(out, x, weight, eps): FLOPs = 4·numel(x).
    Bytes = (numel(x) read + numel(out) written + numel(weight))·b."""
    return _norm(inp, 1, 4, 1, 1, _params(inp, 2), "rms_norm")


def fused_add_rms_norm(inp: OpInputs) -> OpCost | None:
    """vLLM _C::fused_add_rms_norm(x, residual, weight, eps), in place: residual += x, then
    x = rms_norm(residual)·weight. FLOPs = 5·numel(x). Bytes = (read x, residual; write x,
    residual = 4·numel(x) + numel(weight))·b."""
    return _norm(inp, 0, 5, 2, 2, _params(inp, 2), "fused_add_rms_norm")


def batch_norm(inp: OpInputs) -> OpCost | None:
    """aten::cudnn_batch_norm / native_batch_norm(x, weight, bias, running_mean, running_var,
    training, momentum, eps). FLOPs = 8·numel(x). Bytes = (2·numel(x) + 4·C)·b."""
    return _norm(inp, 0, 8, 1, 1, _params(inp, 1, 2, 3, 4), "batch_norm")


def batch_norm_bwd(inp: OpInputs) -> OpCost | None:
    """aten::cudnn_batch_norm_backward / native_batch_norm_backward(x, grad_out, weight, …).
    FLOPs = 8·numel(x). Bytes = (read x, grad_out; write grad_in = 3·numel(x) + params)·b."""
    return _norm(inp, 0, 8, 2, 1, _params(inp, 2), "batch_norm_bwd")
