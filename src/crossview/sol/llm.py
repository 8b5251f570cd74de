"""LLM speed-of-light: lower bounds on prefill, decode step, TTFT, TPOT and output tokens/s
from a model's shape, a GPU's ceilings and the serving setup (formats.md "LLM speed-of-light").

Pure functions; every number is a bound no implementation can beat on that hardware:
- decode step (batch B, context C) ≥ max((W/tp + B·C·KV_tok/tp) / BW,
  B·(2·N_active + 4·layers·heads·d·C) / (tp·peak)) + TP all-reduce time;
- prefill of B×S tokens ≥ max((2·(N_active − N_head)·B·S + 2·N_head·B + 2·layers·heads·d·B·S²)
  / (tp·peak), W/(tp·BW)) + its all-reduce time: the output projection (N_head = vocab·hidden)
  runs for each sequence's last position only, as serving engines compute logits;
- MoE: W counts only the experts the batch hits, E·(1 − (1 − k/E)^tokens) per layer.
Known gaps: norms, rotary, softmax and sampling FLOPs and activation traffic are left out (the
bound is lower for it); the TP all-reduce is added after compute, not overlapped with it (as
formats.md: with overlap, e.g. NVLS multimem all-reduce, the true bound is lower than stated);
sliding-window layers count only when the config lists them (`layer_types`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from crossview.knowledge.hardware import HwSpec
from crossview.sources.model_config import ModelShape

# bytes per element of a storage dtype (definitions of the formats, not measurements)
DTYPE_BYTES: dict[str, float] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1,
                                 "fp4": 0.5, "int4": 0.5}
# which sol_ceilings.yaml peak the matmuls of a weight dtype run at: fp32 weights use TF32
# tensor cores (PyTorch's default for LLM serving engines), int4/fp4 weight-only schemes
# (AWQ/GPTQ) upcast to bf16 for the matmul except native fp4 (Blackwell)
DTYPE_PEAK: dict[str, str] = {"fp32": "tf32_tensor", "bf16": "bf16_tensor",
                              "fp16": "fp16_tensor", "fp8": "fp8_tensor",
                              "int8": "int8_tensor", "fp4": "fp4_tensor",
                              "int4": "bf16_tensor"}
# activations cross the TP all-reduce in 16-bit even when weights are fp8/fp4 (vLLM, SGLang)
ACT_BYTES = 2
# a Megatron-style TP layer all-reduces its output twice: after attention and after the MLP
ALLREDUCES_PER_LAYER = 2


class SolError(ValueError):
    """A request the calculator cannot answer (unknown dtype, missing ceiling)."""


@dataclass(frozen=True)
class Setup:
    dtype: str = "bf16"
    kv_dtype: str = "bf16"
    tp: int = 1
    batch: int = 1
    isl: int = 1024
    osl: int = 128


@dataclass(frozen=True)
class Params:
    """Parameter counts (elements) of one model, by what a forward pass does with them."""

    total: int  # everything in the checkpoint
    embedding: int  # input embedding table: looked up, never streamed whole, no FLOPs
    dense: int  # read every step regardless of routing (attention, dense MLP, lm_head, norms)
    per_expert: int  # one routed expert of one layer
    moe_layers: int
    active: int  # matmul parameters one token uses (2 FLOP each)
    head: int  # of them, the output projection to the vocabulary (lm_head, or tied embedding)

    def weights_touched(self, m: ModelShape, tokens: int) -> float:
        """Elements read from memory for one forward pass over `tokens` tokens."""
        if not m.experts:
            return float(self.dense)
        hit = experts_hit(m.experts, m.experts_per_tok, tokens)
        return self.dense + self.moe_layers * hit * self.per_expert


def experts_hit(experts: int, k: int, tokens: int) -> float:
    """Expected routed experts a batch touches per layer under uniform routing."""
    return experts * (1.0 - (1.0 - k / experts) ** tokens)


def params(m: ModelShape) -> Params:
    h, d = m.hidden, m.head_dim
    attn = h * m.heads * d + 2 * h * m.kv_heads * d + m.heads * d * h  # q, k, v, o
    norms = 2 * h  # input + post-attention RMSNorm per layer
    embed = m.vocab * h
    lm_head = 0 if m.tied_embeddings else m.vocab * h
    gated = 3  # gate, up, down projections of a SwiGLU MLP
    if m.experts:
        per_expert = gated * h * m.expert_intermediate
        mlp_always = m.experts * h + gated * h * m.shared_intermediate  # router + shared
        mlp_active = mlp_always + m.experts_per_tok * per_expert
        routed_total = m.layers * m.experts * per_expert
    else:
        per_expert, routed_total = 0, 0
        mlp_always = mlp_active = gated * h * m.intermediate
    dense = m.layers * (attn + norms + mlp_always) + h + (lm_head or embed)  # tied: same
    total = embed + lm_head + m.layers * (attn + norms + mlp_always) + h + routed_total
    active = m.layers * (attn + mlp_active) + (lm_head or embed)  # matmuls only
    return Params(total=total, embedding=embed, dense=dense, per_expert=per_expert,
                  moe_layers=m.layers if m.experts else 0, active=active,
                  head=lm_head or embed)


def _window_pairs(s: int, w: int) -> float:
    """(query, key) pairs of causal attention over s tokens when each query sees at most the
    last w keys: Σ min(i, w) for i = 1..s (0 layers use it when w is 0)."""
    if not w or s <= w:
        return s * (s + 1) / 2
    return w * (w + 1) / 2 + (s - w) * w


def _window_mean(isl: int, osl: int, w: int) -> float:
    """Mean over the decode steps (contexts isl … isl + osl − 1) of min(context, w)."""
    if not w:
        return isl + osl / 2
    return sum(min(isl + i, w) for i in range(osl)) / osl


def kv_bytes_per_token(m: ModelShape, kv_dtype: str) -> float:
    """K and V of every layer for one token: 2 · layers · kv_heads · head_dim · b_kv."""
    return 2 * m.layers * m.kv_heads * m.head_dim * _bytes(kv_dtype)


def _bytes(dtype: str) -> float:
    if dtype not in DTYPE_BYTES:
        raise SolError(f"dtype {dtype!r}: expected one of {', '.join(DTYPE_BYTES)}")
    return DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class Phase:
    """One bound: its parts (s) and which resource binds."""

    seconds: float
    memory_s: float
    compute_s: float
    comm_s: float
    bytes: float
    flops: float
    bound_by: str  # "HBM bandwidth" | "tensor FLOP/s" | "interconnect"


def _phase(mem_s: float, comp_s: float, comm_s: float, nbytes: float, flops: float) -> Phase:
    bound = "HBM bandwidth" if mem_s >= comp_s else "tensor FLOP/s"
    if comm_s > max(mem_s, comp_s):
        bound = "interconnect"
    return Phase(max(mem_s, comp_s) + comm_s, mem_s, comp_s, comm_s, nbytes, flops, bound)


@dataclass(frozen=True)
class Link:
    name: str  # NVLink | PCIe
    bytes_per_s: float  # one direction


def tp_link(hw: HwSpec) -> Link | None:
    """The per-direction GPU-to-GPU bandwidth TP traffic can use: NVLink, else PCIe."""
    for name, bw, direction in (("NVLink", hw.nvlink_bytes_per_s, hw.nvlink_direction),
                                ("PCIe", hw.pcie_bytes_per_s, hw.pcie_direction)):
        if bw:
            return Link(name, bw / 2 if direction == "bidirectional" else bw)
    return None


def allreduce_s(m: ModelShape, tokens: int, tp: int, link: Link | None) -> float:
    """Ring all-reduce: each GPU sends 2·(tp−1)/tp of the message, per all-reduce."""
    if tp <= 1:
        return 0.0
    if link is None:
        raise SolError("tp > 1 but the GPU has no NVLink or PCIe bandwidth in sol_ceilings.yaml")
    msg = tokens * m.hidden * ACT_BYTES
    return m.layers * ALLREDUCES_PER_LAYER * 2 * (tp - 1) / tp * msg / link.bytes_per_s


@dataclass(frozen=True)
class SolResult:
    model: ModelShape
    hardware: str  # hw_key
    hardware_name: str
    setup: Setup
    params_total: int
    params_active: int
    weight_bytes: float  # whole checkpoint at dtype
    kv_bytes_per_token: float
    peak_flops: float  # per GPU, dense, at the dtype's precision
    peak_key: str
    dram_bytes_per_s: float
    link: Link | None
    decode_context: float  # mean context over the decode steps: isl + osl/2
    prefill: Phase
    decode: Phase
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    hw_source: str

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d.update(prefill_s=self.prefill.seconds, decode_step_s=self.decode.seconds,
                 bound_by={"prefill": self.prefill.bound_by, "decode": self.decode.bound_by})
        return d


def solve(m: ModelShape, hw: HwSpec, s: Setup) -> SolResult:
    if s.tp < 1 or s.batch < 1 or s.isl < 1 or s.osl < 1:
        raise SolError("--tp, --batch, --isl and --osl must be positive integers")
    b_w, b_kv = _bytes(s.dtype), kv_bytes_per_token(m, s.kv_dtype)
    key = DTYPE_PEAK[s.dtype]
    if key == "fp4_tensor" and not hw.peak_flops(key):
        # no FP4 tensor cores (MI300X, H100): FP4 weights are dequantized and multiplied in
        # 16 bits, as int4 is (the MI300X trace's `_matmul_ogs_…bf16xbf16xmxfp4`)
        key = "bf16_tensor"
    peak, bw = hw.peak_flops(key), hw.dram_bytes_per_s
    if not peak or not bw:
        missing = [n for n, v in ((f"tflops.{key}", peak), ("hbm_tb_s", bw)) if not v]
        raise SolError(f"{hw.hw_key}: sol_ceilings.yaml states no {' / '.join(missing)} — "
                       f"no bound for {s.dtype} on this GPU")
    p, link, tp, B = params(m), tp_link(hw) if s.tp > 1 else None, s.tp, s.batch
    per_layer = m.heads * m.head_dim
    full = m.layers - m.sliding_layers
    # prefill: all B·S prompt tokens in one pass (causal attention ≈ half of the S² work;
    # a sliding layer's query sees at most `sliding_window` keys); logits for each sequence's
    # last position only (the first output token)
    tok = B * s.isl
    w_pre = p.weights_touched(m, tok) * b_w
    pairs = full * s.isl ** 2 / 2 + m.sliding_layers * _window_pairs(s.isl, m.sliding_window)
    fl_pre = 2 * (p.active - p.head) * tok + 2 * p.head * B + 4 * per_layer * B * pairs
    prefill = _phase(w_pre / (tp * bw), fl_pre / (tp * peak),
                     allreduce_s(m, tok, tp, link), w_pre, fl_pre)
    # decode: one token per sequence at the mean context of the OSL−1 steps after the first
    # token; the step bound is convex in C, so mean-context × steps is still a lower bound
    ctx = s.isl + s.osl / 2
    # per layer, the keys a decode step reads: the context, or at most the window (its mean
    # over the steps: min(C, W) is concave, so min(mean C, W) would overstate it)
    keys = full * ctx + m.sliding_layers * _window_mean(s.isl, s.osl, m.sliding_window)
    w_dec = p.weights_touched(m, B) * b_w
    kv_read = B * keys * b_kv / m.layers
    fl_dec = B * (2 * p.active + 4 * per_layer * keys)
    decode = _phase((w_dec + kv_read) / (tp * bw), fl_dec / (tp * peak),
                    allreduce_s(m, B, tp, link), w_dec + kv_read, fl_dec)
    return SolResult(model=m, hardware=hw.hw_key, hardware_name=hw.name, setup=s,
                     params_total=p.total, params_active=p.active,
                     weight_bytes=p.total * b_w, kv_bytes_per_token=b_kv, peak_flops=peak,
                     peak_key=key, dram_bytes_per_s=bw, link=link, decode_context=ctx,
                     prefill=prefill, decode=decode, ttft_s=prefill.seconds,
                     tpot_s=decode.seconds, output_tokens_per_s=B / decode.seconds,
                     hw_source=hw.source)
