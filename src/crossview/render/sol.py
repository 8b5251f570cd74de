"""`crossview sol` output: the LLM speed-of-light bounds (and a benchmark's % of SoL).
Formats only; the numbers come from sol/llm.py and sol/bench.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from crossview.render.metrics_md import qty
from crossview.schema import versioned
from crossview.sol.bench import BenchSol
from crossview.sol.llm import Phase, SolResult
from crossview.units import duration


def as_dict(r: SolResult, bench: BenchSol | None, notes: list[str]) -> dict[str, Any]:
    s = r.setup
    return {
        "inputs": {"model": r.model.name, "model_source": r.model.source,
                   "hardware": r.hardware, "hardware_name": r.hardware_name,
                   "hardware_source": r.hw_source, "dtype": s.dtype, "kv_dtype": s.kv_dtype,
                   "tp": s.tp, "batch": s.batch, "isl": s.isl, "osl": s.osl},
        "prefill_s": r.prefill.seconds, "decode_step_s": r.decode.seconds,
        "ttft_s": r.ttft_s, "tpot_s": r.tpot_s,
        "output_tokens_per_s": r.output_tokens_per_s,
        "bound_by": {"prefill": r.prefill.bound_by, "decode": r.decode.bound_by},
        "detail": r.to_dict(),
        "bench": bench.to_dict() if bench else None,
        "notes": notes,
    }


def render_json(r: SolResult, bench: BenchSol | None, notes: list[str]) -> str:
    return msgspec.json.format(msgspec.json.encode(versioned(as_dict(r, bench, notes))),
                               indent=1).decode() + "\n"


def _s(seconds: float) -> str:
    return duration(seconds * 1e9)


def _phase(label: str, p: Phase) -> str:
    comm = f" + all-reduce {_s(p.comm_s)}" if p.comm_s else ""
    return (f"- {label} ≥ **{_s(p.seconds)}** — bound by **{p.bound_by}** "
            f"(memory {_s(p.memory_s)} for {p.bytes / 1e9:,.2f} GB, compute "
            f"{_s(p.compute_s)} for {p.flops / 1e12:,.3f} TFLOP{comm})")


def render(r: SolResult, bench: BenchSol | None, notes: list[str]) -> str:
    s, m = r.setup, r.model
    moe = (f", MoE {m.experts} experts top-{m.experts_per_tok}" if m.is_moe else ", dense")
    link = f"{r.link.name} {r.link.bytes_per_s / 1e9:,.0f} GB/s per direction" if r.link \
        else "none (TP 1)"
    lines = [
        f"# LLM speed-of-light: {m.name} on {r.hardware_name}", "",
        f"**Inputs**: model `{m.name}` ({m.source}{moe}; {r.params_total / 1e9:,.2f} B params, "
        f"{r.params_active / 1e9:,.2f} B active in matmuls per token) · hardware `{r.hardware}` "
        f"(sol_ceilings.yaml: {r.dram_bytes_per_s / 1e12:,.2f} TB/s HBM, "
        f"{r.peak_flops / 1e12:,.1f} TFLOP/s dense {r.peak_key}, link {link}) · dtype {s.dtype},"
        f" KV {s.kv_dtype} ({r.kv_bytes_per_token / 1024:,.1f} KiB/token) · TP {s.tp} · "
        f"batch {s.batch} · ISL {s.isl} · OSL {s.osl} tokens", "",
        "**Lower bounds** (no implementation on this hardware can be faster; formats.md "
        "\"LLM speed-of-light\"):",
        _phase(f"Prefill of {s.batch}×{s.isl} tokens (= TTFT bound)", r.prefill),
        _phase(f"Decode step at mean context {r.decode_context:,.0f} tokens (= TPOT bound)",
               r.decode),
        f"- Output throughput ≤ **{r.output_tokens_per_s:,.1f} tokens/s** "
        f"(batch {s.batch} ÷ decode step)",
    ]
    for n in notes:
        lines.append(f"- Note: {n}.")
    if bench is not None:
        lines += ["", f"**Measured vs SoL** — benchmark `{bench.arm}` "
                      f"({Path(bench.artifact).name}, {bench.trials} trial(s), medians)"]
        c = bench.context
        lines.append("- Context: " + ", ".join(
            f"{k} {c.get(k, 'unknown')}" for k in ("model", "engine", "gpu", "tp",
                                                  "concurrency", "request_rate", "isl", "osl",
                                                  "isl_measured_mean", "osl_measured_mean")))
        for v in bench.rows:
            lines.append(f"- {v.metric}: measured {qty(v.measured, v.unit)} vs bound "
                         f"{qty(v.bound, v.unit)} → **{v.pct_of_sol:.1f}% of SoL**")
        for n in bench.notes:
            lines.append(f"- Note: {n}.")
    lines += ["", "Left out of the bound (each only lowers it): norms, rotary, softmax and "
                  "sampling FLOPs, activation traffic, kernel launch gaps; all-reduce is added, "
                  "not overlapped.", ""]
    return "\n".join(lines)
