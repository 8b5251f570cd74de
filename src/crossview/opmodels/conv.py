"""Convolution (2-D/3-D/1-D, NCHW): FLOPs = 2·N·K·(C/groups)·prod(kernel)·prod(output
spatial) for the forward pass; each backward half (data grad, weight grad) costs the same.
Minimal DRAM bytes = input, weight and output each moved once per product computed.

The forward output size needs stride/padding/dilation, recorded only in `Concrete Inputs`
(PyTorch ≥ 2.1 traces); without them the forward is unmodeled (never guessed). The backward
ops carry the output gradient, so the output size is read off its shape.
"""

from __future__ import annotations

import math

from crossview.opmodels.inputs import OpCost, OpInputs, numel


def _out_size(x: int, k: int, stride: int, pad: int, dil: int) -> int:
    return (x + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _spatial(inp: OpInputs, x: tuple[int, ...], w: tuple[int, ...], si: int
             ) -> tuple[int, ...] | None:
    """Output spatial dims from recorded stride / padding / dilation (indices si, si+1, si+2)."""
    nd = len(x) - 2
    st, pd, dl = inp.ints(si), inp.ints(si + 1), inp.ints(si + 2)
    if st is None or pd is None or dl is None:
        return None
    st, pd, dl = ([v[0]] * nd if len(v) == 1 else v for v in (st, pd, dl))
    if len(st) != nd or len(pd) != nd or len(dl) != nd:
        return None
    return tuple(_out_size(x[2 + i], w[2 + i], st[i], pd[i], dl[i]) for i in range(nd))


def _cost(inp: OpInputs, x: tuple[int, ...], w: tuple[int, ...], out_sp: tuple[int, ...],
          passes: int, model: str) -> OpCost | None:
    t = inp.dtype(1) or inp.dtype(0)
    if t is None or len(x) < 3 or len(w) != len(x):
        return None
    n, k, cg = x[0], w[0], w[1]
    out = (n, k, *out_sp)
    per_pass = 2.0 * n * k * cg * math.prod(w[2:]) * math.prod(out_sp)
    nbytes = passes * (numel(x) + numel(w) + numel(out)) * t.bytes
    shape = f"in={list(x)} w={list(w)} out={list(out)}"
    return OpCost(passes * per_pass, nbytes, t, shape, model, "conv", "conv")


def conv_fwd(inp: OpInputs) -> OpCost | None:
    """aten::convolution / aten::_convolution / aten::cudnn_convolution (input[N,C,H,W],
    weight[K,C/g,R,S], bias?, stride, padding, dilation, …). FLOPs = 2·N·K·(C/g)·R·S·P·Q,
    P×Q the output size from stride/padding/dilation. Bytes = (input + weight + output)·b."""
    x, w = inp.shape(0), inp.shape(1)
    if x is None or w is None:
        return None
    # aten::convolution and _convolution record bias at 2, then stride/padding/dilation;
    # cudnn_convolution has no bias: padding, stride, dilation at 2, 3, 4
    if inp.name.endswith("cudnn_convolution"):
        pd, st, dl = inp.ints(2), inp.ints(3), inp.ints(4)
        if pd is None or st is None or dl is None:
            return None
        reordered = OpInputs(inp.name, inp.dims, inp.types,
                             ("", "", str(st), str(pd), str(dl)))
        sp = _spatial(reordered, x, w, 2)
    else:
        sp = _spatial(inp, x, w, 3)
    if sp is None:
        return None
    return _cost(inp, x, w, sp, 1, "conv_fwd")


def conv_fwd_given_output(inp: OpInputs, out_spatial: tuple[int, ...]) -> OpCost | None:
    """A convolution forward whose recorded inputs lack stride/padding (pre-2.1 traces), with
    the output size taken from elsewhere in the same trace (the backward op of the same input
    and weight shapes records the output gradient). Formulas: conv_fwd."""
    x, w = inp.shape(0), inp.shape(1)
    if x is None or w is None or len(out_spatial) != len(x) - 2:
        return None
    c = _cost(inp, x, w, out_spatial, 1, "conv_fwd")
    return None if c is None else OpCost(c.flops, c.bytes, c.dtype,
                                         c.shape + " (output size from the backward op)",
                                         c.model, c.family, c.ceiling_kind)


def backward_output(name: str, dims: tuple[object, ...]
                    ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """(input shape, weight shape, output spatial) recorded by a convolution backward op."""
    order = {"aten::cudnn_convolution_backward": (0, 1, 2),
             "aten::convolution_backward": (1, 0, 2)}.get(name)
    if order is None or len(dims) < 3:
        return None
    shapes = [t for t in (dims[i] for i in order)
              if isinstance(t, list) and len(t) >= 3 and all(isinstance(v, int) for v in t)]
    if len(shapes) < 3:
        return None
    x, go, w = shapes
    return tuple(x), tuple(w), tuple(go[2:])


def _grad_passes(inp: OpInputs) -> int:
    """Grads requested among input/weight: output_mask (arg 10); both when not recorded."""
    mask = inp.concrete_at(10)
    return 2 if not mask else sum(1 for f in mask.strip("[]").split(",")[:2]
                                  if f.strip() == "True")


def conv_bwd(inp: OpInputs) -> OpCost | None:
    """aten::convolution_backward(grad_out[N,K,P,Q], input[N,C,H,W], weight[K,C/g,R,S], …,
    output_mask). FLOPs = (number of requested grads among input/weight) × 2·N·K·(C/g)·R·S·P·Q.
    Bytes = the same tensors moved once per requested grad."""
    go, x, w = inp.shape(0), inp.shape(1), inp.shape(2)
    if go is None or x is None or w is None:
        return None
    passes = _grad_passes(inp)
    if passes == 0:
        return None
    return _cost(inp, x, w, go[2:], passes, "conv_bwd")


def cudnn_conv_bwd(inp: OpInputs) -> OpCost | None:
    """aten::cudnn_convolution_backward(input[N,C,H,W], grad_out[N,K,P,Q], weight[K,C/g,R,S],
    padding, stride, dilation, groups, benchmark, deterministic, allow_tf32, output_mask).
    FLOPs = (requested grads among input/weight) × 2·N·K·(C/g)·R·S·P·Q; when output_mask is
    not recorded (legacy traces) both grads are counted (training computes both).
    Bytes = (input + weight + grad_out)·b per requested grad."""
    x, go, w = inp.shape(0), inp.shape(1), inp.shape(2)
    if go is None or x is None or w is None:
        return None
    passes = _grad_passes(inp)
    if passes == 0:
        return None
    return _cost(inp, x, w, go[2:], passes, "cudnn_conv_bwd")
