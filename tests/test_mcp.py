"""MCP server: started as a subprocess, driven with the SDK's own client (stdio and HTTP).

Numbers: the MI300X vLLM decode trace has 425 kernels summing to 10,674.517 µs
(= 10,674,517 ns; summed by hand with gzip+json over events of cat "kernel"); the analyze
tool must match `python -m crossview analyze FILE --format json` exactly.
"""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import sys
import time
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
TRACE = DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
pytestmark = pytest.mark.skipif(not TRACE.exists(), reason=f"{TRACE} absent (../shared/data)")

TOOLS = {"topentities", "gpu_metrics", "hot_traces", "flamegraph", "topfunctions", "kernels",
         "analyze", "ab_compare", "diff", "sol_bounds", "query"}


def _kernel_ns() -> tuple[int, int]:
    """Independent of crossview: kernel count and total ns straight from the JSON."""
    with gzip.open(TRACE) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("cat") == "kernel"]
    return len(ev), round(sum(e["dur"] for e in ev) * 1000)


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A second root holding a symlink that leads out of it (to a file outside every root)."""
    base = tmp_path_factory.mktemp("mcp")
    (base / "outside").mkdir()
    secret = base / "outside" / "secret.json"
    secret.write_text('{"traceEvents": []}')
    root = base / "root"
    root.mkdir()
    (root / "escape.json").symlink_to(secret)
    return root, secret


def _server_cmd(root: Path, *extra: str) -> list[str]:
    return cli_command("mcp", "--root", DATA, "--root", root, *extra)


async def _call(c: Client, name: str, args: dict) -> tuple[bool, str]:
    r = await c.call_tool(name, args)
    return bool(r.is_error), r.content[0].text


async def _traces(c: Client) -> None:
    """hot_traces gpu, then cpu with the scope the first call echoed."""
    err, text = await _call(c, "hot_traces", {"paths": [str(TRACE)], "view": "gpu"})
    assert not err, text
    gpu = json.loads(text)
    n, ns = _kernel_ns()
    assert (n, ns) == (425, 10_674_517)
    assert gpu["tree"]["total_ns"] == ns
    assert gpu["resolved"]["devices"] == [TRACE.name + "#2"]
    err, text = await _call(c, "hot_traces", {"paths": gpu["paths"], "filter": gpu["filter"],
                                              "view": "cpu"})
    assert not err, text
    cpu = json.loads(text)
    assert cpu["filter"] == gpu["filter"] and cpu["resolved"] == gpu["resolved"]
    assert cpu["view"] == "cpu" and cpu["tree"]["total_ns"] > 0


def test_stdio_tools_and_refusals(roots: tuple[Path, Path]) -> None:
    root, secret = roots
    cli = run_cli("analyze", TRACE, "--format", "json", check=True)
    want = json.loads(cli.stdout)

    async def main() -> None:
        params = StdioServerParameters(command=sys.executable, args=_server_cmd(root)[1:],
                                       env=SERVER_ENV)
        async with Client(params) as c:
            assert {t.name for t in (await c.list_tools()).tools} >= TOOLS
            assert {"synthesize", "inventory"} <= {t.name for t in (await c.list_tools()).tools}
            await _traces(c)
            err, text = await _call(c, "analyze", {"paths": [str(TRACE)], "detail": "full"})
            assert not err, text
            got = json.loads(text)
            # compact JSON: the CLI's document less its null / empty fields
            assert got.get("findings", []) == compact(want["findings"])
            # only the capture note: its ops start 7.28–16.72 ms after their launch (0782)
            assert [f["pattern"] for f in got["findings"]] == ["launch-lag"]
            assert got["artifacts"] == compact(want["artifacts"])
            assert got["metrics"] == compact(want["metrics"])
            assert got["metrics"]["kernel_time_ns"] == 10_674_517
            assert "markdown" not in got
            err, text = await _call(c, "analyze", {"paths": [str(TRACE)], "format": "md"})
            assert not err and "#" in json.loads(text)["markdown"]

            # read-only SQL on the filtered store, bounded
            err, text = await _call(c, "query", {
                "paths": [str(TRACE)], "sql": "SELECT count(*) AS n, sum(dur_ns) AS t FROM f_gpu"
                " WHERE kind = 'kernel'"})
            assert not err, text
            assert json.loads(text)["rows"] == [[425, 10_674_517]]
            err, text = await _call(c, "query", {"paths": [str(TRACE)], "max_rows": 5,
                                                 "sql": "SELECT * FROM range(100000)"})
            q = json.loads(text)
            assert not err and q["truncated"] is True and q["row_count"] == 5

            refusals = [
                ("hot_traces", {"paths": [str(root / ".." / "outside" / "secret.json")]},
                 "outside the allowed roots"),
                ("hot_traces", {"paths": [str(root / "escape.json")]},
                 "outside the allowed roots"),
                ("hot_traces", {"paths": ["../../etc/passwd"]}, "outside the allowed roots"),
                ("query", {"paths": [str(TRACE)], "sql": "ATTACH '/tmp/x.db' AS x"}, "ATTACH"),
                ("query", {"paths": [str(TRACE)],
                           "sql": "COPY (SELECT 1) TO '/tmp/x.csv'"}, "COPY"),
                ("query", {"paths": [str(TRACE)],
                           "sql": "INSERT INTO artifacts SELECT * FROM artifacts"}, "INSERT"),
                ("query", {"paths": [str(TRACE)], "sql": "SELECT 1; SELECT 2"}, "statements"),
                ("query", {"paths": [str(TRACE)],
                           "sql": f"SELECT * FROM read_text('{secret}')"}, "disabled"),
                ("query", {"paths": [str(TRACE)], "sql": "SELECT * FROM range(10000000)",
                           "max_rows": 10_000_000}, "over the server's cap"),
                ("kernels", {"paths": [str(TRACE)]}, "no per-kernel counters"),
                ("hot_traces", {"paths": str(TRACE), "view": "disk"}, "invalid arguments"),
            ]
            for name, args, why in refusals:
                err, text = await _call(c, name, args)
                assert err and why in text, (name, args, text)
            # a malformed call did not kill the server
            err, text = await _call(c, "topentities", {"paths": [str(TRACE)]})
            assert not err and json.loads(text)["devices"][0]["gpu_kernel_ns"] == 10_674_517

    anyio.run(main)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_http_token(roots: tuple[Path, Path]) -> None:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    root, _ = roots
    # beyond loopback without a token: refused before anything listens
    r = run_cli("mcp", "--root", DATA, "--root", root, "--http", "--host", "0.0.0.0",
                timeout=60)
    assert r.returncode == 2 and "--token" in r.stderr

    port, token = _free_port(), "s3cret-token"
    env = cli_env({"CROSSVIEW_MCP_TOKEN": token})
    proc = subprocess.Popen(_server_cmd(root, "--http", "--port", str(port)), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:  # bounded wait for the port
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "server did not listen within 30 s"
                time.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            resp = httpx2.post(url, json=init, headers=headers, timeout=10)
            assert resp.status_code == 401, resp.text

        async def main() -> None:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                      timeout=60)
            async with http, Client(streamable_http_client(url, http_client=http)) as c:
                assert {t.name for t in (await c.list_tools()).tools} >= TOOLS
                await _traces(c)

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_inprocess_other_tools_resources_prompt(roots: tuple[Path, Path]) -> None:
    """diff / sol_bounds equal their CLI commands; slow SQL is stopped; resources + prompt."""
    from crossview.mcp.server import build

    root, _ = roots
    sol = run_cli("sol", "--model", "Llama-3.1-8B", "--hardware", "h100-sxm", "--format",
                  "json", check=True)
    cli_diff = run_cli("diff", TRACE, TRACE, "--format", "json", check=True)
    server = build([DATA, root])

    async def main() -> None:
        async with Client(server) as c:
            # detail full: the whole diff, as the CLI writes it (issue 40: a summary is cut to
            # the 8,000-character budget)
            err, text = await _call(c, "diff", {"a": str(TRACE), "b": str(TRACE),
                                                "detail": "full"})
            assert not err, text
            d = json.loads(text)
            assert d["a"] == d["b"] == {"artifacts": [str(TRACE)]}
            want_diff = json.loads(cli_diff.stdout)
            assert want_diff.pop("schema_version") == 1
            assert {k: v for k, v in d.items() if k != "units"} == want_diff
            assert all(r["delta_ns"] == 0 for r in d["families"])  # a self-diff changes nothing
            err, text = await _call(c, "sol_bounds", {"model": "Llama-3.1-8B",
                                                      "hardware": "h100-sxm"})
            assert not err and json.loads(text) == json.loads(sol.stdout)
            t0 = time.monotonic()
            err, text = await _call(c, "query", {
                "paths": [str(TRACE)], "timeout_s": 0.5,
                "sql": "SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3"})
            assert err and "time limit" in text, text
            assert time.monotonic() - t0 < 10
            res = await c.read_resource("crossview://bundles")
            listing = json.loads(res.contents[0].text)
            assert {e["name"] for e in listing[0]["entries"]} >= {"kineto", "nsys"}
            assert listing[1]["entries"] == []  # escape.json leads out of its root: hidden
            res = await c.read_resource("crossview://bundle/kineto")
            arts = json.loads(res.contents[0].text)["artifacts"]
            # issue 40: the kineto folder is not one run: the 8 Megatron ranks (the most
            # captures) are read as the run, every other trace (TRACE too) set apart
            by = {Path(a["path"]).resolve(): a for a in arts}
            assert by[TRACE.resolve()]["status"] == "other-run"
            assert "--each" in by[TRACE.resolve()]["problems"][0]
            assert sorted(Path(a["path"]).name for a in arts if a["status"] == "ok") == [
                f"rank-{i}.json.gz" for i in range(8)]
            p = await c.get_prompt("cross_view", {"paths": str(TRACE)})
            text = p.messages[0].content.text
            assert str(TRACE) in text and "hot_traces" in text and "gpu_metrics" in text

    anyio.run(main)


def test_missing_extra_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from crossview.cli import app

    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp → ImportError
    r = CliRunner().invoke(app, ["mcp", "--root", str(tmp_path)])
    assert r.exit_code == 2
    assert "crossview[mcp]" in r.output
