"""HTTP takes exactly one Authorization header, and its token from a file or the environment
(issue 43, item 6; decision 0891). Before: two headers — one wrong, one right — got in (the
last one won), and `--token VALUE` was the way to set it, readable by every local user in
the process list. Synthetic: a token written here; the server is the real `crossview mcp`.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import cli_command, cli_env, run_cli

pytest.importorskip("mcp", reason="the mcp extra is not installed (pip install '.[mcp]')")

from crossview.errors import UsageError  # noqa: E402
from crossview.mcp.http import ENV, BearerAuth, token_of  # noqa: E402

TOKEN = "t0k3n-only-in-a-file"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "hostile", "version": "1"}}}
ACCEPT = ("Accept", "application/json, text/event-stream")


def _asgi_status(headers: list[tuple[bytes, bytes]]) -> int:
    """The status BearerAuth answers a request carrying `headers` with (200: let through)."""
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(msg: dict[str, Any]) -> None:
        sent.append(msg)

    async def go() -> None:
        await BearerAuth(app, TOKEN)({"type": "http", "headers": headers}, None, send)

    anyio.run(go)
    return int(sent[0]["status"])


def test_exactly_one_authorization_header() -> None:
    right, wrong = (b"authorization", f"Bearer {TOKEN}".encode()), (b"authorization",
                                                                    b"Bearer nope")
    assert _asgi_status([right]) == 200
    assert _asgi_status([]) == 401
    assert _asgi_status([wrong]) == 401
    assert _asgi_status([wrong, right]) == 401
    assert _asgi_status([right, wrong]) == 401
    assert _asgi_status([right, right]) == 401  # two are refused even when both match
    assert _asgi_status([(b"Authorization", right[1]), right]) == 401  # any case


def test_token_from_file_env_or_deprecated_flag(tmp_path: Path, monkeypatch) -> None:
    f = tmp_path / "token"
    f.write_text(TOKEN + "\n")
    f.chmod(0o600)
    monkeypatch.setenv(ENV, "from-env")
    assert token_of(f, None) == (TOKEN, [])  # the file wins over the environment
    assert token_of(None, None) == ("from-env", [])
    tok, warn = token_of(None, "on-the-command-line")
    assert tok == "on-the-command-line" and "process list" in warn[0]
    f.chmod(0o644)
    assert "chmod 600" in token_of(f, None)[1][0]
    monkeypatch.delenv(ENV)
    assert token_of(None, None) == (None, [])
    with pytest.raises(UsageError, match="not both"):
        token_of(f, "x")
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(UsageError, match="empty"):
        token_of(tmp_path / "empty", None)
    with pytest.raises(UsageError, match="cannot read"):
        token_of(tmp_path / "absent", None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_real_server_token_file_and_two_headers(tmp_path: Path) -> None:
    import httpx2

    root = tmp_path / "root"
    root.mkdir()
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    port = _free_port()
    env = cli_env({ENV: ""})
    proc = subprocess.Popen(cli_command("mcp", "--root", root, "--http", "--port", str(port),
                                        "--token-file", token_file),
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "server did not listen within 60 s"
                time.sleep(0.2)
        cmdline = Path(f"/proc/{proc.pid}/cmdline")
        if cmdline.exists():
            assert TOKEN.encode() not in cmdline.read_bytes()  # not in the process list
        url = f"http://127.0.0.1:{port}/mcp"
        right, wrong = ("Authorization", f"Bearer {TOKEN}"), ("Authorization", "Bearer no")
        for headers in ([ACCEPT], [ACCEPT, wrong], [ACCEPT, wrong, right],
                        [ACCEPT, right, wrong]):
            r = httpx2.post(url, json=INIT, headers=headers, timeout=30)
            assert r.status_code == 401, (headers, r.status_code, r.text)
        two = httpx2.post(url, json=INIT, headers=[ACCEPT, wrong, right], timeout=30)
        assert "exactly one" in two.text
        r = httpx2.post(url, json=INIT, headers=[ACCEPT, right], timeout=30)
        assert r.status_code == 200, r.text
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.stderr is not None
    assert proc.stderr.read() == b""  # a file readable by its owner only: no warning


def test_deprecated_flag_warns_and_a_bad_file_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    # beyond loopback with no token at all: refused, naming the file option
    r = run_cli("mcp", "--root", root, "--http", "--host", "0.0.0.0",
                env={ENV: ""}, timeout=60)
    assert r.returncode == 2 and "--token-file" in r.stderr
    r = run_cli("mcp", "--root", root, "--http", "--token-file", tmp_path / "absent",
                timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "cannot read" in r.stderr
    # --token still serves, with a warning: stdio, stdin closed at once (EOF ends it)
    r = run_cli("mcp", "--root", root, "--token", "visible", timeout=60, input="",
                env={ENV: os.environ.get(ENV, "")})
    assert "crossview: warning: --token puts the token in the process list" in r.stderr
