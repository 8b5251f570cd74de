"""The stdio transport with a bound on one message (issue 18).

The SDK's stdio reader reads a line of any length into memory and hands it to the JSON
parser. Here a line longer than input_limits.yaml `mcp_max_message_bytes` (the SDK's own
HTTP body limit is 4 MiB) is never held: it is skipped in chunks and answered with one
JSON-RPC error sentence (its id, when one is found near the start of the line; else null),
and so is a line the SDK cannot parse (it would drop it unanswered: the client would wait).
Everything else is the SDK's transport: stdin is read from a private duplicate of fd 0, and
fd 0 points at the null device while serving, as the SDK does, so children read EOF; the
wire out is a private duplicate of fd 1, and fd 1 points at stderr, so a stray print cannot
corrupt it.

The blocking reads and writes run on two threads of their own, started with the server
(issue 43): the SDK starts a worker thread per write, and under memory pressure (a 4 GiB
address-space cap, twelve calls at once) that thread could not start — the transport's task
group failed and the server exited. A thread that cannot start now fails one tool call
(guarded.py), never the wire.
"""

from __future__ import annotations

import asyncio
import os
import queue
import re
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

from crossview.mcp.echo import bounded
from crossview.sources import guard

_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"[A-Za-z0-9_.:-]{1,64}")')


def too_long(limit: int) -> str:
    return (f"request refused: one message may be at most {limit:,} bytes "
            "(input_limits.yaml mcp_max_message_bytes); the server is still running")


class Dedicated:
    """One thread, started now, that runs blocking calls for the event loop in order."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        threading.Thread(target=self._run, name=name, daemon=True).start()

    def _run(self) -> None:
        while True:
            fn, loop, fut = self._jobs.get()
            try:
                res, err = fn(), None
            except BaseException as e:  # handed to the awaiting task
                res, err = None, e
            try:
                loop.call_soon_threadsafe(_settle, fut, res, err)
            except RuntimeError:  # the loop is closed: the server is gone
                return

    async def call(self, fn: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._jobs.put((fn, loop, fut))
        return await fut


def _settle(fut: asyncio.Future[Any], res: Any, err: BaseException | None) -> None:
    if fut.done():  # the waiting task was cancelled
        return
    if err is not None:
        fut.set_exception(err)
    else:
        fut.set_result(res)


class LineWriter:
    """The SDK's `stdout` (an async text file): each message written and flushed by one
    dedicated thread, in order."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.thread = Dedicated("mcp-stdout")

    def _write(self, data: bytes) -> None:
        self.raw.write(data)
        self.raw.flush()

    async def write(self, text: str) -> None:
        data = text.encode("utf-8", "backslashreplace")
        await self.thread.call(lambda: self._write(data))

    async def flush(self) -> None:
        return None  # every write is flushed


class BoundedLines:
    """`async for line in stdin` as the SDK reads it, with over-long lines answered with an
    error on `errors` (set once the write stream exists) instead of being read whole."""

    def __init__(self, raw: IO[bytes], limit: int) -> None:
        self.raw, self.limit = raw, limit
        self.errors: Any = None
        self.thread = Dedicated("mcp-stdin")

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
            line, size = await self.thread.call(self._line)
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


def _private_stdout() -> IO[bytes]:
    """Write the wire to a duplicate of fd 1 and point fd 1 at stderr."""
    try:
        sys.stdout.flush()
        wire = os.dup(1)
        os.dup2(2, 1)
        return os.fdopen(wire, "wb", buffering=1 << 16)
    except (OSError, ValueError):
        return sys.stdout.buffer


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
    # lazy: optional dependency (mcp: extra `mcp`)
    from mcp.server.stdio import stdio_server

    lines = BoundedLines(_private_stdin(), int(guard.limit("mcp_max_message_bytes")))
    out = LineWriter(_private_stdout())
    async with stdio_server(stdin=lines, stdout=out) as (  # type: ignore[arg-type]
            read_stream, write_stream):
        lines.errors = write_stream
        low = server._lowlevel_server
        await low.run(read_stream, write_stream, low.create_initialization_options())
