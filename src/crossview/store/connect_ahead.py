"""A DuckDB connection opened in a background thread while the command still imports (issue
38, decision 0912).

`duckdb.connect` starts a database instance: 12–25 ms on the 2-core machine, with the GIL
released. A first `analyze` opened it on the main thread right before the read; now the CLI
calls `start()` once it knows it will analyze (`cli/app.ready_to_analyze`). The thread
connects while the main thread imports numpy, pyarrow and the readers, and the next in-memory
`Store()` whose configuration matches takes that connection (`take`) instead of opening its
own. A connection nobody takes is left to the process's exit; a failed connect is dropped,
and `Store()` then connects (and reports the failure) itself.

Also here: the connection configuration both paths use (threads, async I/O threads), so
the connection opened ahead is the one `Store()` would have opened.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import duckdb

from crossview.errors import UsageError

_lock = threading.Lock()
# the connection being opened: its configuration, the thread, and what the thread made
_pending: tuple[dict[str, Any], threading.Thread, list[Any]] | None = None


def default_threads() -> int | None:
    """DuckDB threads when the caller names none: CROSSVIEW_THREADS, else the cores this
    process may run on when fewer than the machine's (`taskset -c 0`: DuckDB itself counts
    every core and would run 2 threads on 1); None = DuckDB's own default."""
    env = os.environ.get("CROSSVIEW_THREADS")
    if env:
        try:
            n = int(env)
        except ValueError:
            raise UsageError(f"CROSSVIEW_THREADS={env!r}: give a whole number of threads"
                             ) from None
        if n < 1:
            raise UsageError(f"CROSSVIEW_THREADS={env!r}: give at least 1 thread")
        return n
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return None
    return allowed if allowed < (os.cpu_count() or allowed) else None


def default_async_threads() -> int | None:
    """DuckDB's async I/O threads (Parquet, CSV reads) per store: CROSSVIEW_ASYNC_THREADS
    (the MCP server sets it: mcp/pressure.py); None = DuckDB's own default (8)."""
    env = os.environ.get("CROSSVIEW_ASYNC_THREADS")
    if not env:
        return None
    try:
        n = int(env)
    except ValueError:
        raise UsageError(f"CROSSVIEW_ASYNC_THREADS={env!r}: give a whole number of threads"
                         ) from None
    return max(n, 0)


def config(threads: int | None = None) -> dict[str, Any]:
    """The connect-time configuration of a store. Threads are set at connect: a database
    started with DuckDB's defaults starts a worker per core and 8 async I/O threads at once,
    before a SET could lower them (issue 43)."""
    threads = threads or default_threads()
    out: dict[str, Any] = {"threads": int(threads)} if threads else {}
    io_threads = default_async_threads()
    if io_threads is not None:
        out["async_threads"] = io_threads
    return out


def start() -> None:
    """Open the default in-memory connection in a background thread (once; a second call
    while one is pending does nothing)."""
    global _pending
    try:
        cfg = config()
    except UsageError:
        return  # a bad environment value: Store() reports it where it always did
    with _lock:
        if _pending is not None:
            return
        made: list[Any] = []
        t = threading.Thread(target=_open, args=(cfg, made), daemon=True,
                             name="crossview-connect")
        t.start()
        _pending = (cfg, t, made)


def _open(cfg: dict[str, Any], made: list[Any]) -> None:
    try:
        made.append(duckdb.connect(":memory:", config=cfg))
    except Exception as e:  # noqa: BLE001 — handed to take(), which drops it
        made.append(e)


def take(cfg: dict[str, Any]) -> duckdb.DuckDBPyConnection | None:
    """The connection opened ahead, when one was started with this configuration (waiting
    for it if it is still opening); else None. Each connection is taken once."""
    global _pending
    with _lock:
        pending, _pending = _pending, None
    if pending is None:
        return None
    ahead_cfg, t, made = pending
    t.join()
    con = made[0] if made and isinstance(made[0], duckdb.DuckDBPyConnection) else None
    if con is not None and ahead_cfg != cfg:
        con.close()  # another configuration (a lake task's threads): not this store's
        return None
    return con
