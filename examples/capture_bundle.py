"""Capture a whole evidence bundle of the tiny decoder (examples/capture_cpu_decode.py) with
`crossview.capture`: torch-profiler trace (warm-up skipped), NVML samples of every visible GPU,
host CPU samples and bundle.yaml. Runs on CPU (a CPU-only bundle, said in bundle.yaml) or GPU.

    .venv/bin/python examples/capture_bundle.py --out /tmp/tiny-bundle --steps 8
    .venv/bin/crossview analyze /tmp/tiny-bundle
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from torch.profiler import record_function

import crossview
from capture_cpu_decode import BATCH, PROMPT_LEN, VOCAB, TinyDecoder, greedy


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, required=True, help="bundle folder to write")
    p.add_argument("--steps", type=int, default=8, help="decode steps (>= 5)")
    a = p.parse_args(argv)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    model = TinyDecoder().eval().to(dev)
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT_LEN), device=dev)
    with torch.inference_mode():
        logits, caches = model(prompt, None)  # prefill, outside the capture
        token = greedy(logits)
        with crossview.capture(a.out, wait=1, warmup=1, active=3, regime="decode",
                               context={"model": "tiny-decoder (random weights)",
                                        "concurrency": BATCH}) as cap:
            for _ in range(a.steps):
                with record_function("decode_step"):
                    logits, caches = model(token, caches)
                    token = greedy(logits)
                    token[0, 0].item()  # host sync per token, as a real decode loop does
                cap.step()
    print(f"bundle written to {a.out}; problems: {cap.problems or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
