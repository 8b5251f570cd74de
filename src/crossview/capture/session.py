"""`with crossview.capture("bundle/"):` — an in-process capture around any PyTorch workload.

    with crossview.capture("bundle/", active=5) as cap:
        for batch in data:
            train_step(batch)
            cap.step()            # or let optimizer.step() mark the steps

Writes traces/*.pt.trace.json.gz, metrics/nvml.jsonl (every visible GPU), metrics/host_cpu.jsonl
and bundle.yaml. Without a GPU or NVML it says so once on stderr and writes a CPU-only bundle,
the reason recorded under capture.problems.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossview.capture import machine
from crossview.capture.bundle_file import BundleMeta, now_iso
from crossview.capture.profiler import Schedule, TorchProfiler
from crossview.capture.sampler_process import SamplerProcess
from crossview.capture.samplers import Samplers


def say(msg: str) -> None:
    print(f"crossview capture: {msg}", file=sys.stderr)


def gpu_less_message(facts: machine.MachineFacts) -> str | None:
    """The one line a user sees when the capture will be CPU-only (None when GPUs answer)."""
    if facts.gpus:
        return None
    why = facts.problems[0] if facts.problems else "no GPU visible"
    return f"{why} — writing a CPU-only bundle"


def finish_meta(meta: BundleMeta, prof: TorchProfiler | None,
                samplers: Samplers | SamplerProcess,
                regime: str | None) -> None:
    """Fill what the workload's process knows (torch, engine) and the capture's problems."""
    meta.extra.update(machine.torch_facts())  # cuda: the runtime torch was built with
    engine, ver = machine.engine_in_process()
    if engine:
        meta.set("engine", engine)
        meta.set("engine_version", ver)
    if regime:
        meta.extra["regime"] = regime
    for p in samplers.problems + (prof.problems if prof else []):
        meta.note(p)
    for rel in samplers.files:
        meta.artifacts[rel] = {"phase": "all", "note": "sampled over the whole capture"}
    if prof and prof.files and not prof.gpu:
        meta.note("CPU-only trace: torch sees no CUDA device, so the trace has host "
                  "activity only (no kernels)")


@dataclass
class Capture:
    bundle: Path
    meta: BundleMeta
    profiler: TorchProfiler
    samplers: Samplers | SamplerProcess
    extra: dict[str, Any] = field(default_factory=dict)

    def step(self) -> None:
        """One iteration done: advances the profiler schedule."""
        self.profiler.step()

    @property
    def problems(self) -> list[str]:
        return self.meta.problems


@contextmanager
def capture(bundle: str | Path, *, wait: int = 1, warmup: int = 1, active: int = 3,
            repeat: int = 1, whole: bool = False, interval_ms: int = 100,
            host_interval_ms: int = 500, context: dict[str, Any] | None = None,
            regime: str | None = None, nvml: Any | None = None) -> Iterator[Capture]:
    """Profile the enclosed workload into a bundle folder (see the module docstring).

    context: Context fields known to the caller (model, tp, isl, …), written to bundle.yaml.
    nvml: an NVML module stand-in (tests); default pynvml.
    """
    out = Path(bundle)
    out.mkdir(parents=True, exist_ok=True)
    meta = BundleMeta(command=" ".join(sys.argv) or "python")
    facts = machine.probe(nvml)
    meta.add_machine(facts)
    msg = gpu_less_message(facts)
    if msg:
        say(msg)
    for k, v in (context or {}).items():
        meta.set(k, v)
    # in a helper process (sampler_process.py) unless a test hands in an NVML stand-in
    samplers: Samplers | SamplerProcess = (
        Samplers(out, interval_ms, host_interval_ms, gpu=bool(facts.gpus), nv=nvml)
        if nvml is not None else
        SamplerProcess(out, interval_ms, host_interval_ms, gpu=bool(facts.gpus)))
    samplers.start()
    prof = TorchProfiler(out, Schedule(wait, warmup, active, repeat, whole))
    try:
        prof.start()
        cap = Capture(out, meta, prof, samplers)
        yield cap
    finally:
        try:
            prof.stop()
        finally:
            samplers.stop()
            finish_meta(meta, prof, samplers, regime)
            meta.ended = now_iso()
            meta.write(out)
