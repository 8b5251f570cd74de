"""The step table and the time account reach every surface: JSON (`steps`, `account`), the
HTML report (its own panel), and the MCP `analyze` / `gpu_metrics` results (with `step`)."""

from __future__ import annotations

import json

import anyio
import pytest

from conftest import SHARED_DATA
from crossview.analysis import analyze
from crossview.render import json as json_out
from crossview.render.html.page import render as html_render

DATA = SHARED_DATA
W0 = DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
pytestmark = pytest.mark.skipif(not W0.exists(), reason=f"{W0} absent (../shared/data)")


def test_json_and_html_carry_steps_and_account() -> None:
    a = analyze([W0])
    d = json.loads(json_out.render(a))
    assert d["steps"]["source"] == "profiler-step" and d["steps"]["count"] == 6
    assert {r["cause"] for r in d["account"]["steady_state"]} >= {"data_loading",
                                                                "kernel:gemm"}
    row = d["account"]["steady_state"][0]
    assert set(row) >= {"cause", "ns", "share_of_step", "top_frames", "evidence"}
    assert d["account"]["per_device"][0]["steps"][0]["top_gaps"]
    page = html_render(a)
    assert 'id="account"' in page and "enumerate(DataLoader)" in page


def test_mcp_analyze_and_gpu_metrics_take_a_step() -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import Client

    from crossview.mcp.server import build

    server = build([DATA])

    async def main() -> None:
        async with Client(server) as c:
            for tool in ("analyze", "gpu_metrics"):
                res = await c.call_tool(tool, {"paths": [str(W0)], "filter": {"step": "17"}})
                d = json.loads(res.content[0].text)
                assert d["filter"]["step"] == "17", d.get("filter")
                # compact results: the step summary (no per-step rows) and the largest rows
                assert d["steps"]["count"] == 1 and d["steps"]["wall"]["n"] == 1
                assert d["account"]["steady_state"] and "per_device" not in d["account"]

    anyio.run(main)
