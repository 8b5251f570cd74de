"""MCP tools that tests/test_mcp.py does not drive through the protocol: `kernels`,
`gpu_metrics` and `ab_compare`, each compared with the CLI's JSON on the same input.

Inputs: the real RTX 2080 Ti .ncu-rep and the real nvidia-smi H100 capture from ../shared/data;
the A/B arms are SYNTHETIC vLLM bench results (no public repeated-trial set exists), the same
layout as tests/test_ab.py, with medians 101 vs 121 tok/s that can be checked by hand.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from conftest import SHARED_DATA, cli_command, cli_env, run_cli
from crossview.mcp.compact import compact  # noqa: E402

DATA = SHARED_DATA
# the SDK client gives the server a default environment: run these sources
SERVER_ENV = cli_env()
NCU = DATA / "ncu" / "cudacode_rtx2080ti_two_kernels.ncu-rep"
SMI = DATA / "metrics" / "nvidia-smi_h100_capture.txt"
pytestmark = pytest.mark.skipif(not NCU.exists() or not SMI.exists(),
                                reason="../shared/data absent")


def _cli(*args: str) -> object:
    out = run_cli(*args, "--format", "json", check=True)
    return json.loads(out.stdout)


def _bench(d: Path, name: str, tput: list[float]) -> list[str]:
    d.mkdir()
    paths = []
    for i, t in enumerate(tput):
        p = d / f"{name}-{i}.json"
        p.write_text(json.dumps({
            "date": "20260714-081253", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B",
            "num_prompts": 200, "hostname": "gpu-node-7", "gpu": "NVIDIA H200",
            "request_rate": "inf", "max_concurrency": 64, "completed": 200,
            "total_input_tokens": 409600, "total_output_tokens": 25600,
            "request_throughput": 4.8, "output_throughput": t, "median_ttft_ms": 50.0}))
        paths.append(str(p))
    return paths


def test_kernels_gpu_metrics_ab_compare_equal_the_cli(tmp_path: Path) -> None:
    base = _bench(tmp_path / "a", "base", [100.0, 101.0, 102.0])
    var = _bench(tmp_path / "b", "var", [120.0, 121.0, 122.0])
    want_kernels = _cli("kernels", str(NCU))
    want_metrics = _cli("analyze", str(SMI))
    want_ab = _cli("ab", *sum((["--baseline", p] for p in base), []),
                   *sum((["--variant", p] for p in var), []), "--metric", "output_throughput")
    assert isinstance(want_kernels, list) and isinstance(want_metrics, dict)
    assert isinstance(want_ab, dict)

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=cli_command(
            "mcp", "--root", DATA, "--root", tmp_path)[1:],
            env=SERVER_ENV)
        async with Client(params) as c:
            r = await c.call_tool("kernels", {"paths": [str(NCU)], "detail": "full"})
            assert not r.is_error, r.content[0].text
            got = json.loads(r.content[0].text)
            assert got["kernels"] == compact(want_kernels)
            # NVIDIA's ncu_report lists the report's actions as kernel_A, kernel_C (checked by
            # hand: load_report(...).range_by_idx(0).action_by_idx(i).name())
            assert [k["name"].split("(")[0] for k in got["kernels"]] == ["kernel_A", "kernel_C"]

            r = await c.call_tool("kernels", {"paths": [str(SMI)]})
            assert r.is_error and "no per-kernel counters" in r.content[0].text

            r = await c.call_tool("gpu_metrics", {"paths": [str(SMI)], "detail": "full"})
            assert not r.is_error, r.content[0].text
            got = json.loads(r.content[0].text)
            assert got["gpu_metrics"] == compact(want_metrics["gpu_metrics"])
            assert got["metrics"] is None and "no GPU timeline" in got["absent"]["metrics"]
            names = {d["name"] for d in got["gpu_metrics"]["devices"]}
            assert names == {"NVIDIA H100 80GB HBM3"}

            r = await c.call_tool("ab_compare", {"baseline": base, "variant": var,
                                                 "metric": ["output_throughput"]})
            assert not r.is_error, r.content[0].text
            got = json.loads(r.content[0].text)
            assert got["metrics"] == want_ab["metrics"]
            (m,) = got["metrics"]
            assert m["verdict"] == "win"

            # outside the roots: refused, the server stays up for the next call
            r = await c.call_tool("ab_compare", {"baseline": ["/etc/hostname"], "variant": var})
            assert r.is_error and "outside the allowed roots" in r.content[0].text
            r = await c.call_tool("kernels", {"paths": [str(NCU)]})
            assert not r.is_error

    anyio.run(main)
