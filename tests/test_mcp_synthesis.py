"""MCP `synthesize` / `inventory` tools (issue 7): the server as a subprocess, the SDK client
over stdio, on the real RTX 5090 bundle of tests/test_synthesis.py (same hand-checked
numbers: the decode gemv is 34.4% of decode kernel time; ncu measured it at 6.75 µs)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402

from conftest import cli_command, cli_env
from test_synthesis import NCU, NSYS, needs_data, rtx_bundle  # noqa: E402

# the SDK client gives the server a default environment: run these sources
SERVER_ENV = cli_env()


@needs_data
def test_synthesize_and_inventory_tools(tmp_path: Path) -> None:
    root = tmp_path / "root"
    b = rtx_bundle(root)
    one = root / "one"
    one.mkdir()
    shutil.copyfile(NSYS / "decode_cuda_gpu_kern_sum.csv", one / "d_cuda_gpu_kern_sum.csv")
    assert NCU.exists()
    args = cli_command("mcp", "--root", root)[1:]

    async def main() -> None:
        async with Client(StdioServerParameters(
                command=sys.executable, args=args,
                env=SERVER_ENV)) as c:
            names = {t.name for t in (await c.list_tools()).tools}
            assert {"synthesize", "inventory"} <= names
            r = await c.call_tool("synthesize", {"bundle": str(b), "detail": "full"})
            assert not r.is_error, r.content[0].text
            got = json.loads(r.content[0].text)
            assert got["persisted"] is False and not (b / "findings").exists()
            top = got["ledger"][0]
            assert top["id"] == "kernel:internal::gemvx::kernel:decode"
            assert all((b / a).is_file() for row in got["ledger"]
                       for a in row["evidence_artifacts"])
            j = next(j for j in got["reconciliation"]["kernel_joins"]
                     if j["phase"] == "decode")
            assert j["ncu_duration"]["value"] == 6750.0
            assert round(j["trace"]["share"]["value"], 1) == 34.4
            assert "markdown" not in got
            r = await c.call_tool("synthesize", {"bundle": str(b), "format": "md"})
            assert "## Ledger" in json.loads(r.content[0].text)["markdown"]
            r = await c.call_tool("synthesize", {"bundle": str(b)})  # summary: the budget
            summary = r.content[0].text
            assert len(summary) <= 8_000 and json.loads(summary)["ledger"][0]["id"] == top["id"]
            r = await c.call_tool("inventory", {"bundle": "rtx"})  # relative to the root
            assert not r.is_error
            inv = json.loads(r.content[0].text)
            assert set(inv["sources"]) == {"ncu", "nsys"}
            r = await c.call_tool("synthesize", {"bundle": str(one)})
            assert r.is_error and "cannot synthesize" in r.content[0].text
            r = await c.call_tool("synthesize", {"bundle": str(tmp_path)})  # outside root
            assert r.is_error and "outside the allowed roots" in r.content[0].text

    anyio.run(main)
