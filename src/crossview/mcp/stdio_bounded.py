"""The stdio transport with a bound on one message (issue 18).

The SDK's stdio reader reads a line of any length into memory and hands it to the JSON
parser. Here a line longer than input_limits.yaml `mcp_max_message_bytes` (the SDK's own
HTTP body limit is 4 MiB) is never held: it is skipped in chunks and answered with one
JSON-RPC error sentence (its id, when one is found near the start of the line; else null),
and so is a line the SDK cannot parse (it would drop it unanswered: the client would wait).
Everything else is the SDK's transport: stdin is read from a private duplicate of fd 0, and
fd 0 points at the null device while serving, as the SDK does, so children read EOF.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, Any

import anyio
import anyio.to_thread
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

from crossview.mcp.echo import bounded
from crossview.sources import guard

_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[A-Za-z0-9_.:-]{1,64}")')


def too_long(limit: int) -> str:
    return (f"request refused: one message may be at most {limit:,} bytes "
            "(input_limits.yaml mcp_max_message_bytes); the server is still running")


class BoundedLines:
    """`async for line in stdin` as the SDK reads it, with over-long lines answered with an
    error on `errors` (set once the write stream exists) instead of being read whole."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self.raw, self.limit = raw, limit
        self.errors: Any = None

    def _line(self) -> tuple[bytes, int]:
        """The next line, or (its first bytes, its length) when it is over the limit."""
        line = self.raw.readline(self.limit + 1)
        if len(line) <= self.limit or line.endswith(b"\n"):
            return line, len(line)
        head, size = line[:4096], len(line)
        while line and not line.endswith(b"\n"):
            line = self.raw.readline(1 << 20)
            size += len(line)
        return head, size

    def __aiter__(self) -> BoundedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line, size = await anyio.to_thread.run_sync(self._line, abandon_on_cancel=True)
            if not line:
                raise StopAsyncIteration
            if size > self.limit:
                await self._refuse(line, too_long(self.limit))
                continue
            text = line.decode("utf-8", errors="replace")
            if not text.strip():
                continue
            try:  # the SDK drops a message it cannot parse without an answer: the client
                jsonrpc_message_adapter.validate_json(text, by_name=False)  # would wait
            except ValidationError as e:
                why = e.errors()[0]["msg"] if e.errors() else "cannot be parsed"
                await self._refuse(line[:4096], bounded(
                    f"request refused: not a valid JSON-RPC message ({why})"))
                continue
            return text

    async def _refuse(self, head: bytes, message: str) -> None:
        if self.errors is None:
            return
        m = _ID.search(head)
        rid: Any = None
        if m:
            rid = int(m[1]) if m[1][:1] != b'"' else m[1][1:-1].decode()
        err = JSONRPCError(jsonrpc="2.0", id=rid,
                           error=ErrorData(code=INVALID_REQUEST, message=message))
        await self.errors.send(SessionMessage(err))


def _private_stdin() -> IO[bytes]:
    """Read the wire from a duplicate of fd 0 and point fd 0 at the null device."""
    try:
        wire = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        return os.fdopen(wire, "rb", buffering=1 << 16)
    except OSError:
        return sys.stdin.buffer


async def serve(server: Any) -> None:
    """Run the MCPServer `server` over stdio, one message at most mcp_max_message_bytes."""
    from mcp.server.stdio import stdio_server

    lines = BoundedLines(_private_stdin(), int(guard.limit("mcp_max_message_bytes")))
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.errors = write_stream
        low = server._lowlevel_server
        await low.run(read_stream, write_stream, low.create_initialization_options())
