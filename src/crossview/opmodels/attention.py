"""Scaled-dot-product attention (fused: flash / memory-efficient / cuDNN), q[B,H,Sq,D],
k[B,Hkv,Sk,D], v[B,Hkv,Sk,Dv] (grouped-query attention: Hkv ≤ H).

Forward FLOPs = 2·B·H·Sq·Sk·D (Q·Kᵀ) + 2·B·H·Sq·Sk·Dv (P·V), × 1/2 when causal (the kernels
skip the masked upper triangle). Softmax FLOPs (O(B·H·Sq·Sk)) are left out, as is customary.
Forward bytes = (q + k + v + out)·b: a fused kernel never writes the Sq×Sk scores.
Backward (flash): 5 products of the same size (recompute Q·Kᵀ, dV, dP, dQ, dK) = 2.5 × the
forward FLOPs; bytes = (q + k + v + out + dout)·b read + (dq + dk + dv)·b written.
"""

from __future__ import annotations

from crossview.opmodels.inputs import OpCost, OpInputs, numel


def _fwd(inp: OpInputs, qi: int, causal_at: int, model: str, bwd: bool = False
         ) -> OpCost | None:
    q, k, v = inp.shape(qi), inp.shape(qi + 1), inp.shape(qi + 2)
    t = inp.dtype(qi)
    if q is None or k is None or v is None or t is None or len(q) != 4 or len(k) != 4:
        return None
    b, h, sq, d = q
    sk, dv = k[2], v[3]
    causal = inp.flag(causal_at)
    frac = 0.5 if causal else 1.0
    flops = 2.0 * b * h * sq * sk * (d + dv) * frac
    out = b * h * sq * dv
    if bwd:
        flops *= 2.5
        nbytes = (2 * (numel(q) + numel(k) + numel(v)) + 2 * out) * t.bytes
    else:
        nbytes = (numel(q) + numel(k) + numel(v) + out) * t.bytes
    shape = (f"B={b} H={h} Hkv={k[1]} Sq={sq} Sk={sk} D={d}"
             + (" causal" if causal else "" if causal is False else " causal=?"))
    return OpCost(flops, nbytes, t, shape, model, "attention", "matmul")


def sdpa(inp: OpInputs) -> OpCost | None:
    """aten::scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal, scale, …):
    is_causal at input 5. Formulas: module doc."""
    return _fwd(inp, 0, 5, "sdpa")


def sdpa_flash(inp: OpInputs) -> OpCost | None:
    """aten::_scaled_dot_product_flash_attention(q, k, v, dropout_p, is_causal, …): is_causal
    at input 4. Formulas: module doc."""
    return _fwd(inp, 0, 4, "sdpa_flash")


def sdpa_efficient(inp: OpInputs) -> OpCost | None:
    """aten::_scaled_dot_product_efficient_attention / _cudnn_attention(q, k, v, attn_bias,
    compute_log_sumexp, dropout_p, is_causal, …): is_causal at input 6. Formulas: module doc."""
    return _fwd(inp, 0, 6, "sdpa_efficient")


def sdpa_flash_bwd(inp: OpInputs) -> OpCost | None:
    """aten::_scaled_dot_product_flash_attention_backward(grad_out, q, k, v, out, logsumexp,
    cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, …): q at input 1, is_causal at
    input 11. FLOPs = 2.5 × forward; bytes: module doc."""
    return _fwd(inp, 1, 11, "sdpa_flash_bwd", bwd=True)


def sdpa_efficient_bwd(inp: OpInputs) -> OpCost | None:
    """aten::_scaled_dot_product_efficient_attention_backward(grad_out, q, k, v, attn_bias,
    out, logsumexp, philox_seed, philox_offset, dropout_p, grad_input_mask, is_causal, …):
    q at input 1, is_causal at input 11. FLOPs = 2.5 × forward; bytes: module doc."""
    return _fwd(inp, 1, 11, "sdpa_efficient_bwd", bwd=True)
