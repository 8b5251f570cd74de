"""Per-op roofline from recorded shapes (analytic, rigor L2): no Nsight Compute needed.

Each kernel in scope is charged to the innermost enclosing host op that has a model in
knowledge/op_models.yaml (walking up from its launching runtime call). Each such op call is
costed once from its recorded input shapes and dtypes (crossview.opmodels: FLOPs and minimal
DRAM bytes). Calls group by (op, shape, dtype, GPU); per group: calls, kernel time, achieved
FLOP/s = Σ FLOPs ÷ Σ kernel time, achieved bytes/s alike, arithmetic intensity = FLOPs ÷
bytes, and the roofline from the GPU's datasheet ceilings (knowledge/sol_ceilings.yaml, the
GPU named in the trace's deviceProperties): attainable = min(peak FLOP/s of the dtype's
ceiling, intensity × peak DRAM bytes/s); bound = compute when intensity ≥ the ridge point
(peak FLOP/s ÷ peak bytes/s), else memory; % of roofline = achieved ÷ attainable (bytes-only
models: achieved bytes/s ÷ peak bytes/s).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from typing import Any

from crossview import opmodels
from crossview.knowledge import hardware
from crossview.knowledge.hardware import HwSpec
from crossview.knowledge.loader import load_yaml
from crossview.opmodels import conv
from crossview.opmodels.inputs import OpCost, OpInputs

RECAPTURE = ("re-capture with `torch.profiler.profile(record_shapes=True)` to get per-op "
             "FLOPs, bytes and % of roofline")


@cache
def limits() -> dict[str, Any]:
    return dict(load_yaml("op_roofline.yaml"))


@dataclass
class OpGroup:
    op: str
    shape: str
    dtype: str
    model: str
    family: str
    hw_key: str | None
    calls: int
    kernels: int
    time_ns: int
    share: float  # of the kernel time in scope
    flops: float  # per call
    bytes: float  # per call
    flops_per_s: float | None  # achieved (None: bytes-only model)
    bytes_per_s: float
    intensity: float | None  # FLOP per byte
    ceiling: str | None  # sol_ceilings precision key of the compute ceiling
    peak_flops_per_s: float | None
    peak_bytes_per_s: float | None
    attainable_flops_per_s: float | None
    bound: str  # compute | memory | unknown
    pct_of_roofline: float | None
    tensor_cores: bool  # the dtype's ceiling is a tensor-core one
    top_kernel: str
    kernel_names: list[str] = field(default_factory=list)
    parent_ops: list[str] = field(default_factory=list)  # the ops these calls sit under
    # the nn.Module classes (with_modules=True) the calls sit in, nearest first, by kernel time
    modules: list[str] = field(default_factory=list)
    # the kernels charged to this group (gpu_ops ids): what a claim on the group owns, so the
    # verdict can give each kernel one owner (not in to_dict)
    gpu_op_ids: tuple[int, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, object]:
        # without the ids first: asdict copies a tuple element by element (10⁴ ids a group)
        d = asdict(replace(self, gpu_op_ids=()))
        d.pop("gpu_op_ids", None)
        return d

    def time_at_ns(self, pct: float) -> float:
        """The group's kernel time if it ran at `pct` % of its roofline (never more than its
        time now): time × (pct_of_roofline ÷ pct). The what-if lever "kernel sped up to a
        fraction of its roofline"."""
        if self.pct_of_roofline is None or pct <= 0:
            return float(self.time_ns)
        return min(float(self.time_ns), self.time_ns * self.pct_of_roofline / pct)


@dataclass
class OpRoofline:
    groups: list[OpGroup]
    kernel_ns: int  # all kernel time in scope
    modeled_ns: int  # kernel time charged to a modeled, costed op
    unmodeled: list[tuple[str, int, str]]  # (op or reason, kernel ns, why); not comm kernels
    shapes_recorded: bool
    note: str  # what the view could not do, once ("re-capture with record_shapes=True")
    devices: list[str]  # GPU names the ceilings are for
    # GPUs in scope whose datasheet states FP16 but no BF16 tensor ceiling (Volta, Turing):
    # a fix must not tell them to autocast to BF16
    no_bf16: list[str] = field(default_factory=list)
    # without recorded shapes: (hw_key, kernel name, kernel ns) of matmul/conv kernels whose
    # names say FP32 on CUDA cores (op_roofline.yaml fp32_kernel_markers); with or without
    # shapes, whether the capture holds a backward pass (training_op_markers in host op names)
    fp32_kernels: list[tuple[str, str, int]] = field(default_factory=list)
    training: bool = False
    agreement: list[dict[str, Any]] = field(default_factory=list)  # analytic vs ncu

    def to_dict(self) -> dict[str, object]:
        d = asdict(replace(self, groups=[]))  # each group as its own to_dict says
        d["groups"] = [g.to_dict() for g in self.groups]
        d["unmodeled"] = [{"op": o, "kernel_ns": t, "why": w} for o, t, w in self.unmodeled]
        return d


# A GPU of a capture in scope: (artifact id, device, name, SM count, memory bytes, compute
# capability major, minor), None where the capture does not say
GpuRow = tuple[int, int | None, str | None, int | None, int | None, int | None, int | None]


@dataclass(frozen=True)
class Charges:
    """The kernels in scope charged to the innermost modeled op above their launch call,
    aggregated per key (op, input_dims, input_types, concrete_inputs, artifact id, device;
    the recorded inputs as JSON text, None: not recorded), every list ordered by key (a
    group keeps its first row's cost: the first row must not depend on a hash table)."""
    groups: list[tuple[Any, ...]]  # key + (distinct op calls, kernels, kernel ns)
    by_kernel: list[tuple[Any, ...]]  # key + (kernel name, kernel ns)
    by_parent: list[tuple[Any, ...]]  # key + (the op's parent op, kernel ns); parent known
    by_module: list[tuple[Any, ...]]  # key + (`nn.Module: Class_N` frame, kernel ns)
    by_ids: list[tuple[Any, ...]]  # key + (the charged kernels' gpu_op_ids, ascending)
    uncharged: list[tuple[str, int]]  # (launching op or why none, kernel ns); no comm


@dataclass(frozen=True)
class OpRooflineInputs:
    """What the op roofline reads of a capture under the filter (views/host/op_charges.py
    reads it): the kernels' time, whether shapes are recorded, the GPUs, and either the
    charges (shapes recorded) or the GEMM kernels by name (no shapes)."""
    kernel_ns: int
    n_kernels: int
    shapes: bool
    devices: Sequence[GpuRow] = ()
    training: bool = False  # a host op name holds a training_op_markers entry
    gemm_kernels: list[tuple[int, int | None, str, int]] = field(default_factory=list)
    charges: Charges | None = None
    conv_backward: list[tuple[str, str | None]] = field(default_factory=list)  # name, dims


# the `nn.Module: Class_N` frames the charged ops sit in: the index suffix is dropped
# (Qwen2RMSNorm_3 → Qwen2RMSNorm) so a layer's instances are one class
MODULE_PREFIX = "nn.Module: "
_MODULE_INDEX = re.compile(r"_\d+$")


def compute(d: OpRooflineInputs) -> OpRoofline:
    """The op roofline of what views/host/op_charges.read found (this module reads no store:
    it sits below views/)."""
    kernel_ns, shapes = d.kernel_ns, d.shapes
    if not d.n_kernels:
        return OpRoofline([], 0, 0, [], shapes, "no kernels in scope", [])
    if not shapes or d.charges is None:
        specs = _specs(d.devices)
        return OpRoofline([], kernel_ns, 0, [], False,
                          f"the trace records no input shapes: {RECAPTURE}",
                          sorted({s.name for s in specs.values()}),
                          sorted({s.name for s in specs.values() if _no_bf16(s)}),
                          _fp32_kernels(d.gemm_kernels, specs), d.training)
    ch = d.charges
    rows, by_kernel, by_parent = ch.groups, ch.by_kernel, ch.by_parent
    by_module, by_ids, unmodeled_ops = ch.by_module, ch.by_ids, ch.uncharged
    specs = _specs(d.devices)
    groups: dict[tuple[str, str, str, str | None], _Acc] = {}
    unmodeled: dict[str, list[Any]] = {}
    modeled_ns = 0
    keyed: dict[tuple[Any, ...], _Acc] = {}  # recorded inputs → its group's accumulator
    conv_out = _conv_outputs(d.conv_backward)
    for name, dims, types, conc, art, dev, calls, nk, ns in rows:
        c = opmodels.cost(name, dims, types, conc)
        if c is None and dims and name in _CONV_FWD:
            c = _conv_fwd_from_backward(name, dims, types, conc, conv_out)
        if c is None:
            why = ("shapes not recorded" if dims is None
                   else "recorded inputs do not determine the cost")
            u = unmodeled.setdefault(name, [0, why])
            u[0] += int(ns)
            continue
        modeled_ns += int(ns)
        spec = specs.get((int(art), int(dev) if dev is not None else -1))
        key = (name, c.shape, c.dtype.name, spec.hw_key if spec else None)
        acc = groups.setdefault(key, _Acc(c, spec))
        acc.add(int(calls), int(nk), int(ns))
        keyed[(name, dims, types, conc, art, dev)] = acc
    for *k, kname, ns in by_kernel:
        if (hit := keyed.get(tuple(k))) is not None:
            hit.knames[kname] = hit.knames.get(kname, 0) + int(ns)
    for *k, parent, ns in by_parent:
        if (hit := keyed.get(tuple(k))) is not None:
            hit.parents[parent] = hit.parents.get(parent, 0) + int(ns)
    for *k, module, ns in by_module:
        if (hit := keyed.get(tuple(k))) is not None:
            cls = _MODULE_INDEX.sub("", str(module).removeprefix(MODULE_PREFIX))
            hit.modules[cls] = hit.modules.get(cls, 0) + int(ns)
    for *k, ids in by_ids:
        if (hit := keyed.get(tuple(k))) is not None:
            hit.ids.extend(int(i) for i in ids)
    for name, ns in unmodeled_ops:
        why = ("no op to charge" if name.startswith("(")
               else "no model for this op (knowledge/op_models.yaml)")
        u = unmodeled.setdefault(name, [0, why])
        u[0] += ns
    out = [a.group(key, kernel_ns) for key, a in groups.items()]
    out.sort(key=lambda g: -g.time_ns)
    notes = [] if out else ["no kernel runs under an op with a model and recorded shapes"]
    devs = sorted({s.name for s in specs.values() if s is not None})
    if not devs:
        notes.append("the trace's GPU is not in sol_ceilings.yaml: no % of roofline")
    return OpRoofline(out, kernel_ns, modeled_ns,
                      sorted(((k, int(v[0]), str(v[1])) for k, v in unmodeled.items()),
                             key=lambda x: (-x[1], x[0])),
                      True, "; ".join(notes), devs,
                      sorted({s.name for s in specs.values() if s is not None and _no_bf16(s)}),
                      training=d.training)


def _fp32_kernels(gemms: list[tuple[int, int | None, str, int]],
                  specs: dict[tuple[int, int], HwSpec]) -> list[tuple[str, str, int]]:
    """Matmul/conv kernels named as FP32 CUDA-core kernels (cuBLAS `*_sgemm_*`, cuDNN
    `*_engine<float…>`) and not as tensor-core ones, per GPU, longest first."""
    lim = limits()
    fp32, tensor = lim["fp32_kernel_markers"], lim["tensor_kernel_markers"]
    out: dict[tuple[str, str], int] = {}
    for art, dev, name, ns in gemms:
        low = str(name).lower()
        spec = specs.get((int(art), int(dev) if dev is not None else -1))
        if spec is None or not any(m in low for m in fp32) or any(m in low for m in tensor):
            continue
        out[(spec.hw_key, str(name))] = out.get((spec.hw_key, str(name)), 0) + int(ns)
    return sorted(((k, n, t) for (k, n), t in out.items()), key=lambda x: (-x[2], x[1]))


def _no_bf16(spec: HwSpec) -> bool:
    return spec.peak_flops("bf16_tensor") is None and spec.peak_flops("fp16_tensor") is not None


_CONV_FWD = ("aten::cudnn_convolution", "aten::convolution", "aten::_convolution")
CONV_BWD = ("aten::cudnn_convolution_backward", "aten::convolution_backward")


def _conv_outputs(rows: list[tuple[str, str | None]]
                  ) -> dict[tuple[Any, ...], set[tuple[int, ...]]]:
    """(input shape, weight shape) → output spatial sizes the trace's convolution backward
    ops record (the output gradient's shape)."""
    out: dict[tuple[Any, ...], set[tuple[int, ...]]] = {}
    for name, dims in rows:
        if dims is None:  # an op without recorded inputs (ops_with_shapes keeps its row)
            continue
        try:
            got = conv.backward_output(name, tuple(json.loads(dims)))
        except (ValueError, TypeError):
            continue
        if got is not None:
            out.setdefault((got[0], got[1]), set()).add(got[2])
    return out


def _conv_fwd_from_backward(name: str, dims: str, types: str | None, conc: str | None,
                            conv_out: dict[tuple[Any, ...], set[tuple[int, ...]]]
                            ) -> OpCost | None:
    """A forward convolution without stride/padding, costed with the output size its
    backward records — only when that size is unambiguous (one output for these shapes)."""
    inp = OpInputs.from_json(name, dims, types, conc)
    x, w = inp.shape(0), inp.shape(1)
    outs = conv_out.get((x, w)) if x is not None and w is not None else None
    if not outs or len(outs) != 1:
        return None
    return conv.conv_fwd_given_output(inp, next(iter(outs)))


def _specs(devices: Sequence[GpuRow]) -> dict[tuple[int, int], HwSpec]:
    out: dict[tuple[int, int], HwSpec] = {}
    for art, dev, name, sms, mem, ma, mi in devices:
        spec = hardware.match(name, sm_count=sms, mem_bytes=mem,
                              cc=f"{ma}.{mi}" if ma is not None else None)
        if spec is not None:
            out[(int(art), int(dev) if dev is not None else -1)] = spec
    return out


class _Acc:
    def __init__(self, cost: OpCost, spec: HwSpec | None) -> None:
        self.cost, self.spec = cost, spec
        self.calls = self.kernels = self.ns = 0
        self.knames: dict[str, int] = {}
        self.parents: dict[str, int] = {}
        self.modules: dict[str, int] = {}
        self.ids: list[int] = []

    def add(self, calls: int, kernels: int, ns: int) -> None:
        self.calls += calls
        self.kernels += kernels
        self.ns += ns

    def group(self, key: tuple[str, str, str, str | None], total_ns: int) -> OpGroup:
        c, spec = self.cost, self.spec
        sec = self.ns * 1e-9
        flops = c.flops * self.calls
        nbytes = c.bytes * self.calls
        fps = flops / sec if sec and c.flops else None
        bps = nbytes / sec if sec else 0.0
        ai = c.flops / c.bytes if c.flops and c.bytes else None
        kn = sorted(self.knames.items(), key=lambda x: (-x[1], x[0]))
        ceil_key, peak = _ceiling(c, spec, _tf32(c, kn[0][0] if kn else ""))
        peak_bw = spec.dram_bytes_per_s if spec else None
        attain: float | None = None
        bound, pct = "unknown", None
        if c.flops and peak and peak_bw and ai is not None:
            attain = min(peak, ai * peak_bw)
            bound = "compute" if ai >= peak / peak_bw else "memory"
            pct = 100.0 * (fps or 0.0) / attain
        elif not c.flops and peak_bw:
            bound, pct = "memory", 100.0 * bps / peak_bw
        elif c.flops and peak_bw and ai is not None and not peak:
            bound = "memory" if ai < 1 else "unknown"
        return OpGroup(
            op=key[0], shape=c.shape, dtype=c.dtype.name, model=c.model, family=c.family,
            hw_key=key[3], calls=self.calls, kernels=self.kernels, time_ns=self.ns,
            share=self.ns / total_ns if total_ns else 0.0, flops=c.flops, bytes=c.bytes,
            flops_per_s=fps, bytes_per_s=bps, intensity=ai, ceiling=ceil_key,
            peak_flops_per_s=peak, peak_bytes_per_s=peak_bw, attainable_flops_per_s=attain,
            bound=bound, pct_of_roofline=pct,
            tensor_cores=bool(ceil_key and ceil_key.endswith("_tensor")),
            top_kernel=kn[0][0] if kn else "", kernel_names=[n for n, _ in kn[:5]],
            parent_ops=[p for p, _ in sorted(self.parents.items(),
                                             key=lambda x: (-x[1], x[0]))[:3]],
            modules=[m for m, _ in sorted(self.modules.items(),
                                          key=lambda x: (-x[1], x[0]))[:3]],
            gpu_op_ids=tuple(sorted(self.ids)))


def _tf32(c: OpCost, top_kernel: str) -> bool:
    """An FP32 op whose top kernel is a tensor-core kernel (cutlass `tensorop_s1688gemm`,
    cuBLAS `*tf32*`, …: op_roofline.yaml tensor_kernel_markers) ran as TF32 (allow_tf32): its
    ceiling is TF32's, not FP32's (hta_a100_16rank: `aten::mm` fp32 on
    `cutlass_80_tensorop_s1688gemm_64x64_32x6_nn` was rated at 54.9% of FP32)."""
    low = top_kernel.lower()
    return c.dtype.name == "fp32" and any(m in low for m in limits()["tensor_kernel_markers"])


def _ceiling(c: OpCost, spec: HwSpec | None, tf32: bool = False
             ) -> tuple[str | None, float | None]:
    """The first precision key of the dtype's ceiling list the GPU states (TF32's first when
    the op ran as TF32)."""
    if not c.flops:
        return None, None
    keys = c.dtype.ceiling_keys(c.ceiling_kind)
    if tf32:
        keys = ("tf32_tensor", *[k for k in keys if k != "tf32_tensor"])
    for k in keys:
        peak = spec.peak_flops(k) if spec else None
        if peak:
            return k, peak
    return (keys[0] if keys else None), None
