"""Raw JSON-RPC to the real `crossview mcp` stdio server, with a timeout per answer.

The SDK client cannot send an over-long line or an unknown method, and cannot tell a hung
server from a slow one: this speaks the wire directly. A reader thread queues the server's
stdout lines, so `recv` gives up after `timeout` seconds (a hang) instead of blocking.
"""

from __future__ import annotations

import json
import os
import queue
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parents[2]
SERVER_LOG_LINES = 200


class Wire:
    def __init__(self, roots: list[Path], stderr: IO[bytes] | int = subprocess.DEVNULL,
                 as_cap: int | None = None, env: dict[str, str] | None = None) -> None:
        src = os.environ.get("HOSTILE_SRC") or str(REPO / "src")
        cmd = [sys.executable, "-m", "crossview", "mcp"]
        for r in roots:
            cmd += ["--root", str(r)]

        def cap() -> None:
            if as_cap:
                resource.setrlimit(resource.RLIMIT_AS, (as_cap, as_cap))

        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=stderr, env={**os.environ, "PYTHONPATH": src,
                                                      **(env or {})},
                                  preexec_fn=cap)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()
        self.next_id = 0
        _, r = self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "hostile", "version": "1"}},
                         timeout=180)  # a loaded machine: start-up takes a while
        if not (r and "result" in r):
            self.close()
            raise RuntimeError(f"the MCP server did not start: {r}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _pump(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.lines.put(line)
        self.lines.put(b"")  # EOF: the server exited

    def send(self, msg: Any) -> None:
        assert self.p.stdin is not None
        line = msg if isinstance(msg, bytes) else json.dumps(msg).encode()
        self.p.stdin.write(line + b"\n")
        self.p.stdin.flush()

    def recv(self, rid: Any, timeout: float) -> tuple[int, dict | None]:
        """(bytes, the answer to `rid`); (0, None) when the server hung or exited."""
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                return 0, None
            if not line:
                return 0, None
            msg = json.loads(line)
            if msg.get("id") == rid:
                return len(line), msg

    def call(self, method: str, params: dict, timeout: float = 60) -> tuple[int, dict | None]:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.recv(self.next_id, timeout)

    def tool(self, name: str, args: dict, timeout: float = 60
             ) -> tuple[int, bool | None, str]:
        """(answer bytes, is_error, text); is_error None: no answer (hang or exit)."""
        size, r = self.call("tools/call", {"name": name, "arguments": args}, timeout)
        if r is None:
            return 0, None, ""
        if "error" in r:
            return size, True, str(r["error"].get("message"))
        res = r["result"]
        text = "".join(c.get("text", "") for c in res.get("content", []))
        return size, bool(res.get("isError")), text

    def tools_at_once(self, calls: list[tuple[str, dict]], timeout: float = 300
                      ) -> list[tuple[bool | None, str]]:
        """Send every call before reading any answer: [(is_error, text)] in call order;
        (None, "") for a call not answered within `timeout` seconds in all."""
        ids = []
        for name, args in calls:
            self.next_id += 1
            ids.append(self.next_id)
            self.send({"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call",
                       "params": {"name": name, "arguments": args}})
        got: dict[int, tuple[bool | None, str]] = {}
        deadline = time.monotonic() + timeout
        while len(got) < len(ids) and (left := deadline - time.monotonic()) > 0:
            try:
                line = self.lines.get(timeout=left)
            except queue.Empty:
                break
            if not line:
                break  # the server exited
            msg = json.loads(line)
            if msg.get("id") not in ids:
                continue
            if "error" in msg:
                got[msg["id"]] = (True, str(msg["error"].get("message")))
            else:
                res = msg["result"]
                got[msg["id"]] = (bool(res.get("isError")), "".join(
                    c.get("text", "") for c in res.get("content", [])))
        return [got.get(i, (None, "")) for i in ids]

    def alive(self) -> bool:
        return self.p.poll() is None

    def close(self) -> None:
        if self.p.poll() is None:
            assert self.p.stdin is not None
            try:
                self.p.stdin.close()
                self.p.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.p.kill()
                self.p.wait()
