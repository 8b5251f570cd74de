"""Every MCP tool call runs guarded (issue 18): inside the roots at the point of opening,
under a bound on concurrent calls, and turning resource exhaustion into a clean error result.

- Roots: the call runs under `guard.restricted_to(roots)`, so every file any reader opens —
  given, found by walking a folder, named in bundle.yaml, a model config, an archive member —
  is checked against the roots by `guard.check_open` (symlinks resolved), not only the paths
  the agent named.
- Concurrency: at most input_limits.yaml `mcp_max_concurrent_calls` calls run at once; the
  others wait (each call holds a DuckDB store and worker threads: twelve at once under a
  4 GiB address-space cap made the server exit).
- MemoryError, DuckDB's out-of-memory error, "can't start new thread" and a too-deep input
  end the *call* with one sentence; the server keeps serving (its threads and memory are
  bounded per store: pressure.py; its stdio wire has threads of its own: stdio_bounded.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import duckdb

from crossview.mcp.safety import Refused
from crossview.sources import guard


def _problem(e: BaseException) -> str | None:
    if isinstance(e, MemoryError | duckdb.OutOfMemoryException):
        return ("out of memory for this call: narrow it (fewer paths, a filter) or give the "
                "server more memory; the server is still running")
    if isinstance(e, RecursionError):
        return guard.resource_problem(e)
    if isinstance(e, RuntimeError) and "thread" in str(e):
        return ("the server cannot start another thread now (too many calls at once or too "
                "little memory): retry this call; the server is still running")
    return None


def wrap(fn: Callable[..., str], roots: list[Path], limiter: anyio.CapacityLimiter
         ) -> Callable[..., Any]:
    """An async tool with `fn`'s name, docs and signature (the SDK reads them through
    __wrapped__) that runs `fn` in a worker thread under the roots and the limiter."""
    resolved = tuple(Path(r).resolve() for r in roots)

    @functools.wraps(fn)
    async def call(*args: Any, **kwargs: Any) -> str:
        async with limiter:
            token = guard._ROOTS.set(resolved)  # copied into the worker thread's context
            try:
                return await anyio.to_thread.run_sync(functools.partial(fn, *args, **kwargs))
            except (MemoryError, RecursionError, RuntimeError, duckdb.OutOfMemoryException
                    ) as e:
                why = _problem(e)
                if why is None:
                    raise
                raise Refused(why) from None
            finally:
                guard._ROOTS.reset(token)

    return call


def limiter() -> anyio.CapacityLimiter:
    return anyio.CapacityLimiter(int(guard.limit("mcp_max_concurrent_calls")))
