"""The MCP server over its real stdio transport never echoes a client's value whole (issue 18).

Raw JSON-RPC lines (the SDK client cannot send a 20 MB line or an unknown method) to
`python -m crossview mcp`: a 20 MB method name is refused at the transport with one sentence
and the request's id; 100,000-character method, tool, prompt and resource names come back
as an escaped 80-character prefix with their length; escapes and newlines are never
written raw; the server keeps serving after each.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

SRC = Path(__file__).resolve().parents[1] / "src"
N = 100_000


class Wire:
    def __init__(self, root: Path, err: Path) -> None:
        self.err = err
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        self.p = subprocess.Popen([sys.executable, "-m", "crossview", "mcp", "--root", str(root)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=err.open("wb"), env=env)
        self.call(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, msg: Any) -> None:
        assert self.p.stdin is not None
        line = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def recv(self) -> tuple[int, dict]:
        assert self.p.stdout is not None
        line = self.p.stdout.readline()
        return len(line), json.loads(line)

    def call(self, rid: int, method: str, params: dict) -> tuple[int, dict]:
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.recv()


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Any:
    base = tmp_path_factory.mktemp("echo")
    w = Wire(base, base / "stderr.txt")
    yield w
    assert w.p.stdin is not None
    w.p.stdin.close()
    w.p.wait(timeout=30)


def _alive(w: Wire, rid: int) -> None:
    _, r = w.call(rid, "tools/list", {})
    assert "analyze" in {t["name"] for t in r["result"]["tools"]}


def test_20mb_method_refused_at_the_transport(wire: Wire) -> None:
    wire.send(b'{"jsonrpc":"2.0","id":42,"method":"' + b"m" * 20_000_000 + b'","params":{}}')
    size, r = wire.recv()
    assert r["id"] == 42 and r["error"]["code"] == -32600
    assert r["error"]["message"] == (
        "request refused: one message may be at most 4,194,304 bytes (input_limits.yaml "
        "mcp_max_message_bytes); the server is still running")
    assert size < 300
    _alive(wire, 43)


@pytest.mark.parametrize(("method", "params", "echo"), [
    ("m" * N, {}, "Method not found: 'mmm"),
    ("tools/call", {"name": "t" * N, "arguments": {}}, "Unknown tool: 'ttt"),
    ("prompts/get", {"name": "p" * N, "arguments": {}}, "Unknown prompt: 'ppp"),
    ("resources/read", {"uri": "crossview://" + "u" * N}, "Unknown resource: 'crossview://uuu"),
])
def test_long_names_echo_a_short_prefix(wire: Wire, method: str, params: dict,
                                        echo: str) -> None:
    size, r = wire.call(7, method, params)
    text = (r["result"]["content"][0]["text"] if "result" in r else r["error"]["message"])
    assert text.startswith(echo), text
    assert text.endswith(f"'… ({len(params.get('name') or params.get('uri') or method):,} "
                         "characters)"), text
    assert size < 700, size  # a 100,000-character name: 80 of them come back
    _alive(wire, 8)


def test_escapes_are_never_written_raw(wire: Wire) -> None:
    name = "x\x1b[31m\ncrossview: error: forged"
    _, r = wire.call(9, "tools/call", {"name": name, "arguments": {}})
    text = r["result"]["content"][0]["text"]
    assert r["result"]["isError"]
    assert "\x1b" not in text and "\n" not in text
    assert "\\x1b[31m\\ncrossview: error: forged" in text


def test_unparseable_line_is_answered_not_dropped(wire: Wire) -> None:
    """The SDK drops a line it cannot parse without an answer (the client would wait for
    ever): a non-UTF-8 file name sent as lone surrogate escapes, or broken JSON, is answered
    with one sentence and the request's id."""
    line = json.dumps({"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {
        "name": "analyze", "arguments": {"paths": [os.fsdecode(b"cap\xff.json")]}}})
    wire.send(line.encode())
    _, r = wire.recv()
    assert r["id"] == 11 and r["error"]["code"] == -32600
    assert r["error"]["message"] == ("request refused: not a valid JSON-RPC message (Invalid "
                                     "JSON: lone leading surrogate in hex escape at line 1 "
                                     "column 117)")
    wire.send(b'{"jsonrpc": "2.0", "id": 12, "method": "tools/list"')
    _, r = wire.recv()
    assert r["id"] == 12 and r["error"]["message"].startswith("request refused: not a valid")
    _alive(wire, 13)


def test_long_notification_dropped_with_a_short_log_line(wire: Wire) -> None:
    """A notification gets no answer; an unknown 1 MB method name is dropped with one short
    log line (the SDK logged it whole: 4.4 MB of stderr, seconds of formatting)."""
    before = wire.err.stat().st_size
    wire.send({"jsonrpc": "2.0", "method": "n" * 1_000_000})
    _alive(wire, 14)
    assert wire.err.stat().st_size - before < 2000
