"""The MCP `whatif` tool (issue 16) over stdio: same numbers as `crossview whatif`, one-line
refusal on a summary-only capture, paths outside the roots refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from conftest import SHARED_DATA, cli_command, cli_env

DATA = SHARED_DATA
W0 = DATA / "kineto" / "kineto_v100_resnet50_workers0.pt.trace.json.gz"
MEGATRON = DATA / "kineto" / "megatron_tp8_a100"


@pytest.mark.skipif(not W0.exists(), reason="../shared/data not present")
def test_whatif_tool(tmp_path: Path) -> None:
    args = cli_command("mcp", "--root", DATA)[1:]
    env = cli_env()  # this checkout's src, not an install

    async def main() -> None:
        async with Client(StdioServerParameters(command=sys.executable, args=args, env=env)) as c:
            assert "whatif" in {t.name for t in (await c.list_tools()).tools}
            r = await c.call_tool("whatif", {"capture": [str(W0)],
                                             "lever": ["dataloader-workers"]})
            assert not r.is_error, r.content[0].text
            got = json.loads(r.content[0].text)
            assert got["selfcheck"]["ok"]
            assert got["median"]["measured_step_ns"] == 152_536_500  # the recap's steps (0806)
            assert 106e6 < got["median"]["predicted_step_ns"] < 144e6  # 125.1 ms ± 15%
            r = await c.call_tool("whatif", {"capture": [
                str(DATA / "nsys" / "llm-perf-opt_rtx5090_deepseek-ocr")]})
            assert r.is_error and "summary-only input" in r.content[0].text
            r = await c.call_tool("whatif", {"capture": [str(tmp_path)]})
            assert r.is_error and "outside the allowed roots" in r.content[0].text
            if MEGATRON.is_dir():  # the ranks of one job, replayed together (issue 42)
                r = await c.call_tool("whatif", {"capture": [str(MEGATRON)],
                                                 "lever": ["all-ranks-on-time"]})
                assert not r.is_error, r.content[0].text
                got = json.loads(r.content[0].text)
                assert got["selfcheck"]["ok"] and len(got["selfcheck"]["per_rank"]) == 8
                (js,) = got["job_steps"]
                assert js["measured_ns"] == 633_541_000  # rank 6's step, the slowest
                assert js["predicted_ns"] < js["measured_ns"]
                r = await c.call_tool("analyze", {"paths": [str(MEGATRON)]})
                ranks = json.loads(r.content[0].text)["ranks"]
                assert [x["rank"] for x in ranks["late_ranks"]] == [0, 6]
                assert ranks["transfer_ns_range"][0] > 49e6 and ranks["wait_ns_range"][1] > 4e8

    anyio.run(main)
