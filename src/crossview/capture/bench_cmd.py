"""The load generator's command line: make `vllm bench serve` save its result into the bundle,
and read the Context it implies (model, concurrency, lengths, --metadata pairs)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossview.core.scalars import scalar_of

RESULT_DIR = "bench"
RESULT_FILE = "result.json"

# bench option → Context field (vllm bench serve's flag names)
_CONTEXT_FLAGS = {"--model": "model", "--tokenizer": "tokenizer",
                  "--max-concurrency": "concurrency", "--num-prompts": "num_prompts",
                  "--request-rate": "request_rate", "--burstiness": "burstiness",
                  "--dataset-name": "dataset", "--random-input-len": "isl",
                  "--random-output-len": "osl", "--backend": "backend"}


@dataclass
class BenchCommand:
    argv: list[str]
    result: Path  # where the result JSON will be
    metadata: dict[str, str] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)


def _value(argv: list[str], i: int) -> tuple[str, str | None]:
    flag, _, inline = argv[i].partition("=")
    if inline:
        return flag, inline
    return flag, argv[i + 1] if i + 1 < len(argv) else None


def with_node(argv: list[str], node: dict[str, str]) -> list[str]:
    """Add the node identity as `--metadata KEY=VALUE` pairs (issue 17: the A/B VERDICT gate
    needs every trial to say which host and GPUs ran it). `vllm bench serve --metadata` takes
    its pairs after one flag (a second flag would replace the first): ours join the user's;
    a key the user gave is kept as given."""
    pairs = [f"{k}={v}" for k, v in node.items() if v]
    out = list(argv)
    if "--metadata" in out:
        i = out.index("--metadata") + 1
        given = set()
        while i < len(out) and not out[i].startswith("--"):
            given.add(out[i].partition("=")[0])
            i += 1
        out[i:i] = [p for p in pairs if p.partition("=")[0] not in given]
    elif pairs:
        out += ["--metadata", *pairs]
    return out


def prepare(command: str, bundle: Path, node: dict[str, str] | None = None) -> BenchCommand:
    """Split the command; add --save-result/--result-dir/--result-filename unless given, and
    the node identity (hostname, gpu_uuids) as --metadata pairs when known."""
    argv = shlex.split(command)
    result_dir, result_file = bundle / RESULT_DIR, RESULT_FILE
    meta: dict[str, str] = {}
    ctx: dict[str, Any] = {}
    i = 0
    while i < len(argv):
        flag, val = _value(argv, i)
        if flag == "--result-dir" and val:
            result_dir = Path(val)
        elif flag == "--result-filename" and val:
            result_file = val
        elif flag in _CONTEXT_FLAGS and val is not None:
            ctx[_CONTEXT_FLAGS[flag]] = scalar_of(val)
        elif flag == "--metadata":
            j = i + 1
            while j < len(argv) and not argv[j].startswith("--"):  # KEY=VALUE …
                k, _, v = argv[j].partition("=")
                meta[k] = v
                j += 1
        i += 1
    out = with_node(argv, node or {})
    if "--save-result" not in out:
        out.append("--save-result")
    if not any(a.split("=")[0] == "--result-dir" for a in out):
        out += ["--result-dir", str(result_dir)]
    if not any(a.split("=")[0] == "--result-filename" for a in out):
        out += ["--result-filename", result_file]
    result_dir.mkdir(parents=True, exist_ok=True)
    return BenchCommand(out, result_dir / result_file, meta, ctx)
