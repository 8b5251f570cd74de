"""Matrix-multiply family: FLOPs = 2·M·N·K per (batch) product; minimal DRAM bytes = each
operand read once and the result written once. A bias/accumulator input adds M·N FLOPs (one
add per output) and its own bytes. Scales, alpha and beta are ignored (O(M·N) or less)."""

from __future__ import annotations

import math

from crossview.opmodels.inputs import OpCost, OpInputs, numel


def _cost(inp: OpInputs, b: int, m: int, n: int, k: int, extra_bytes: float, bias: bool,
          model: str, out_bytes: float | None = None, ai: int = 0, bi: int = 1) -> OpCost | None:
    ta, tb = inp.dtype(ai), inp.dtype(bi)
    if ta is None or tb is None:
        return None
    ob = ta.bytes if out_bytes is None else out_bytes
    flops = 2.0 * b * m * n * k + (b * m * n if bias else 0)
    nbytes = b * (m * k * ta.bytes + k * n * tb.bytes + m * n * ob) + extra_bytes
    shape = f"M={m} N={n} K={k}" + (f" batch={b}" if b != 1 else "")
    return OpCost(flops, nbytes, ta, shape, model, "matmul", "matmul")


def mm(inp: OpInputs) -> OpCost | None:
    """aten::mm(A[M,K], B[K,N]) → C[M,N]. FLOPs = 2·M·N·K. Bytes = (M·K + K·N + M·N)·b."""
    a, bm = inp.shape(0), inp.shape(1)
    if a is None or bm is None or len(a) != 2 or len(bm) != 2:
        return None
    return _cost(inp, 1, a[0], bm[1], a[1], 0.0, False, "mm")


def addmm(inp: OpInputs) -> OpCost | None:
    """aten::addmm(bias, A[M,K], B[K,N]) → C[M,N] = bias + A·B. FLOPs = 2·M·N·K + M·N.
    Bytes = (M·K + K·N + M·N + numel(bias))·b."""
    c, a, bm = inp.shape(0), inp.shape(1), inp.shape(2)
    if c is None or a is None or bm is None or len(a) != 2 or len(bm) != 2:
        return None
    tc = inp.dtype(0)
    extra = numel(c) * (tc.bytes if tc else 0)
    return _cost(inp, 1, a[0], bm[1], a[1], extra, True, "addmm", ai=1, bi=2)


def bmm(inp: OpInputs) -> OpCost | None:
    """aten::bmm(A[B,M,K], B[B,K,N]) → C[B,M,N]. FLOPs = 2·B·M·N·K.
    Bytes = B·(M·K + K·N + M·N)·b."""
    a, bm = inp.shape(0), inp.shape(1)
    if a is None or bm is None or len(a) != 3 or len(bm) != 3:
        return None
    return _cost(inp, a[0], a[1], bm[2], a[2], 0.0, False, "bmm")


def baddbmm(inp: OpInputs) -> OpCost | None:
    """aten::baddbmm(C, A[B,M,K], B[B,K,N]) → C + A·B. FLOPs = 2·B·M·N·K + B·M·N.
    Bytes = B·(M·K + K·N + M·N)·b + numel(C)·b."""
    c, a, bm = inp.shape(0), inp.shape(1), inp.shape(2)
    if c is None or a is None or bm is None or len(a) != 3 or len(bm) != 3:
        return None
    tc = inp.dtype(0)
    return _cost(inp, a[0], a[1], bm[2], a[2], numel(c) * (tc.bytes if tc else 0), True,
                 "baddbmm", ai=1, bi=2)


def linear(inp: OpInputs) -> OpCost | None:
    """aten::linear(x[..., K], W[N, K], bias[N]?) → y[..., N], M = prod(x[:-1]).
    FLOPs = 2·M·N·K (+ M·N with a bias). Bytes = (M·K + N·K + M·N (+ N))·b."""
    x, w = inp.shape(0), inp.shape(1)
    if x is None or w is None or len(x) < 1 or len(w) != 2:
        return None
    bias = inp.shape(2)
    tb = inp.dtype(2)
    extra = numel(bias) * tb.bytes if bias is not None and tb is not None else 0.0
    return _cost(inp, 1, math.prod(x[:-1]), w[0], x[-1], extra, bias is not None, "linear")


def matmul(inp: OpInputs) -> OpCost | None:
    """aten::matmul(A[..., M, K], B[..., K, N]) with broadcast batch dims (a 1-D operand is a
    vector: M or N = 1). FLOPs = 2·batch·M·N·K. Bytes = each operand once + the result."""
    a, bm = inp.shape(0), inp.shape(1)
    if a is None or bm is None or not a or not bm:
        return None
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*bm, 1) if len(bm) == 1 else bm
    if a2[-1] != b2[-2]:
        return None
    m, k, n = a2[-2], a2[-1], b2[-1]
    try:
        batch = math.prod(_broadcast(a2[:-2], b2[:-2]))
    except ValueError:
        return None
    ta, tb = inp.dtype(0), inp.dtype(1)
    if ta is None or tb is None:
        return None
    flops = 2.0 * batch * m * n * k
    nbytes = numel(a) * ta.bytes + numel(bm) * tb.bytes + batch * m * n * ta.bytes
    shape = f"M={m} N={n} K={k}" + (f" batch={batch}" if batch != 1 else "")
    return OpCost(flops, nbytes, ta, shape, "matmul", "matmul", "matmul")


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    out = []
    for x, y in zip(a, b, strict=True):
        if x != y and 1 not in (x, y):
            raise ValueError("not broadcastable")
        out.append(max(x, y))
    return tuple(out)


# ScalarType codes PyTorch records for an `out_dtype` argument → bytes per element
_OUT_DTYPE_BYTES = {"5": 2.0, "6": 4.0, "15": 2.0, "23": 1.0, "24": 1.0}


def scaled_mm(inp: OpInputs) -> OpCost | None:
    """aten::_scaled_mm(A[M,K] fp8, B[K,N] fp8, scale_a, scale_b, bias?, scale_result?,
    out_dtype?) → C[M,N]. FLOPs = 2·M·N·K. Bytes = (M·K + K·N)·1 + M·N·b_out (b_out from the
    recorded out_dtype code, else 2: BF16, the usual output)."""
    a, bm = inp.shape(0), inp.shape(1)
    if a is None or bm is None or len(a) != 2 or len(bm) != 2:
        return None
    ob = _OUT_DTYPE_BYTES.get(inp.concrete_at(6), 2.0)
    cost = _cost(inp, 1, a[0], bm[1], a[1], 0.0, False, "scaled_mm", out_bytes=ob)
    return cost


def cutlass_scaled_mm(inp: OpInputs) -> OpCost | None:
    """vLLM _C::cutlass_scaled_mm(out[M,N], a[M,K], b[K,N], a_scales, b_scales, bias?).
    FLOPs = 2·M·N·K. Bytes = M·K·b_a + K·N·b_b + M·N·b_out."""
    out, a, bm = inp.shape(0), inp.shape(1), inp.shape(2)
    to = inp.dtype(0)
    if out is None or a is None or bm is None or to is None or len(a) != 2 or len(bm) != 2:
        return None
    return _cost(inp, 1, a[0], bm[1], a[1], 0.0, False, "cutlass_scaled_mm",
                 out_bytes=to.bytes, ai=1, bi=2)


def grouped_mm(inp: OpInputs) -> OpCost | None:
    """aten::_grouped_mm(A[T,K], B[G,K,N], offs[G]) → C[T,N]: G expert GEMMs whose row blocks
    of A are given by `offs` (T rows in all). FLOPs = 2·T·N·K (each row meets one expert).
    Bytes = T·K·b_a + G·K·N·b_b + T·N·b_a. Other layouts (3-D A) are not modeled."""
    a, bm = inp.shape(0), inp.shape(1)
    if a is None or bm is None or len(a) != 2 or len(bm) != 3 or a[1] != bm[1]:
        return None
    ta, tb = inp.dtype(0), inp.dtype(1)
    if ta is None or tb is None:
        return None
    t, k, g, n = a[0], a[1], bm[0], bm[2]
    flops = 2.0 * t * n * k
    nbytes = t * k * ta.bytes + g * k * n * tb.bytes + t * n * ta.bytes
    return OpCost(flops, nbytes, ta, f"T={t} N={n} K={k} groups={g}", "grouped_mm", "matmul",
                  "matmul")
