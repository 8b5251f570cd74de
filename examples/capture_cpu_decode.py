"""Capture a CPU-only PyTorch-profiler (Kineto) trace of a tiny greedy decode loop.

CPU-ONLY CAPTURE: this script profiles ``ProfilerActivity.CPU`` only, so the
resulting trace has host-side events (``cpu_op``, ``python_function``,
``user_annotation``) and NO GPU events (no ``kernel``, ``gpu_memcpy``,
``cuda_runtime``, no ``ac2g`` flows). The shipped
``examples/cpu_tiny_decode.pt.trace.json.gz`` was made with this script on a
CPU-only machine (no GPU available) and is a placeholder: it is to be replaced
by a real GPU capture later.

The model is a deliberately tiny decoder-only transformer written in plain
torch (no ``nn.MultiheadAttention`` / SDPA helpers, so the op mix is explicit):

    token embedding
    N x [ RMSNorm -> fused QKV linear -> causal attention over a growing KV
          cache -> output projection -> residual
          RMSNorm -> MLP (up -> SiLU -> down) -> residual ]
    final RMSNorm -> lm_head -> greedy argmax -> ``.item()`` (host sync per step,
    as a real decode loop does to check for EOS / stream tokens)

A short prompt is prefilled outside the profiler; then ``--steps`` decode steps
run under ``torch.profiler.profile`` with
``schedule(wait=1, warmup=1, active=2, repeat=1)``, one
``record_function("decode_step")`` and one ``prof.step()`` per step. Only the
single active window (2 decode steps) is recorded, which keeps the file small.

Usage (from the repo root)::

    .venv/bin/python examples/capture_cpu_decode.py \
        --out examples/cpu_tiny_decode.pt.trace.json.gz --steps 16 --seed 0
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from torch import Tensor, nn
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule

VOCAB = 512
D_MODEL = 64
N_HEADS = 4
N_LAYERS = 2
D_FF = 4 * D_MODEL
BATCH = 2
PROMPT_LEN = 8

KVCache = list[tuple[Tensor, Tensor]]


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: Tensor) -> Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model, bias=False)
        self.proj = nn.Linear(d_model, d_model, bias=False)

    def forward(
        self, x: Tensor, cache: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        if cache is not None:
            # Growing KV cache: concatenate the new position(s) onto the past.
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        if t > 1:
            # Causal mask (prefill only; a single decode query sees the whole cache).
            s = k.shape[2]
            mask = torch.ones(t, s, dtype=torch.bool).tril(diagonal=s - t)
            scores = scores.masked_fill(~mask, float("-inf"))
        attn = torch.softmax(scores, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(out), k, v


class MLP(nn.Module):
    def __init__(self, d_model: int, d_ff: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, d_ff, bias=False)
        self.down = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, x: Tensor) -> Tensor:
        return self.down(F.silu(self.up(x)))


class Block(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(d_model)
        self.attn = Attention(d_model, n_heads)
        self.mlp_norm = RMSNorm(d_model)
        self.mlp = MLP(d_model, d_ff)

    def forward(
        self, x: Tensor, cache: tuple[Tensor, Tensor] | None
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        h, k, v = self.attn(self.attn_norm(x), cache)
        x = x + h
        x = x + self.mlp(self.mlp_norm(x))
        return x, (k, v)


class TinyDecoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D_MODEL)
        self.layers = nn.ModuleList(Block(D_MODEL, N_HEADS, D_FF) for _ in range(N_LAYERS))
        self.norm = RMSNorm(D_MODEL)
        self.lm_head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, tokens: Tensor, caches: KVCache | None) -> tuple[Tensor, KVCache]:
        x = self.embed(tokens)
        new_caches: KVCache = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, None if caches is None else caches[i])
            new_caches.append(kv)
        logits = self.lm_head(self.norm(x[:, -1:, :]))
        return logits, new_caches


def greedy(logits: Tensor) -> Tensor:
    return logits.argmax(dim=-1)  # (batch, 1)


def capture(out: Path, steps: int, seed: int) -> dict[str, int]:
    torch.manual_seed(seed)
    model = TinyDecoder().eval()
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT_LEN))

    with torch.inference_mode():
        logits, caches = model(prompt, None)  # prefill, not profiled
        token = greedy(logits)

        generated: list[int] = []
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "trace.json"

            def on_trace_ready(p: profile) -> None:
                p.export_chrome_trace(str(raw))

            with profile(
                activities=[ProfilerActivity.CPU],
                record_shapes=True,
                with_stack=True,
                schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
                on_trace_ready=on_trace_ready,
            ) as prof:
                for _ in range(steps):
                    with record_function("decode_step"):
                        logits, caches = model(token, caches)
                        token = greedy(logits)
                        # Host sync, as a real decode loop does (EOS check / streaming).
                        generated.append(int(token[0, 0].item()))
                    prof.step()

            if not raw.exists():
                raise SystemExit(f"no trace exported: --steps {steps} is too few (need >= 4)")
            out.parent.mkdir(parents=True, exist_ok=True)
            # mtime=0 keeps the gzip header deterministic.
            with raw.open("rb") as src, gzip.GzipFile(out, "wb", compresslevel=9, mtime=0) as dst:
                shutil.copyfileobj(src, dst)

    print(f"generated (batch 0): {generated}")
    return summarize(out)


def summarize(path: Path) -> dict[str, int]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        trace = json.load(fh)
    counts: dict[str, int] = {}
    for ev in trace["traceEvents"]:
        key = str(ev.get("cat", f"ph={ev.get('ph')}"))
        counts[key] = counts.get(key, 0) + 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent / "cpu_tiny_decode.pt.trace.json.gz",
        help="output .pt.trace.json.gz path",
    )
    parser.add_argument("--steps", type=int, default=16, help="decode steps (>= 4)")
    parser.add_argument("--seed", type=int, default=0, help="torch RNG seed")
    args = parser.parse_args(argv)

    counts = capture(args.out, args.steps, args.seed)
    size = os.path.getsize(args.out)
    print(f"wrote {args.out} ({size / 1024:.1f} KiB, torch {torch.__version__})")
    for cat, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {cat:24s} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
