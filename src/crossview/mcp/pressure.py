"""The MCP server's budget of threads and memory (issue 43, decision 0891).

One server holds up to 8 cached stores and runs `mcp_max_concurrent_calls` calls at once.
With DuckDB's defaults each store starts a worker thread per core and 8 async I/O threads,
and each thread that allocates gets its own glibc malloc arena (64 MiB of address space):
under a 4 GiB address-space cap (RLIMIT_AS) a few stores used it all, DuckDB's default
memory limit (80% of RAM, not of the cap) let one query take the rest, and from then on no
thread could start. So, once at start (never over what the user set):
- glibc keeps at most `mcp_malloc_arenas` arenas (threads share them);
- each store runs at most `mcp_store_threads` DuckDB workers (or the cores allowed, if
  fewer) and `mcp_store_async_threads` async I/O threads (CROSSVIEW_THREADS,
  CROSSVIEW_ASYNC_THREADS);
- under an address-space cap, each store's DuckDB memory limit is the cap ×
  `mcp_store_memory_share` ÷ `mcp_max_concurrent_calls` (CROSSVIEW_MEMORY_LIMIT), so a
  query past it ends with DuckDB's out-of-memory error for that call alone.
"""

from __future__ import annotations

import ctypes
import os
import resource
import sys

from crossview.sources import guard

_M_ARENA_MAX = -8  # glibc's mallopt parameter


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def address_space_cap() -> int | None:
    """The process's RLIMIT_AS in bytes, or None when unlimited."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def store_memory_limit(cap: int | None) -> str | None:
    """One store's DuckDB memory limit under the cap (None: no cap, DuckDB's default)."""
    if cap is None:
        return None
    share = float(guard.limit("mcp_store_memory_share"))
    calls = int(guard.limit("mcp_max_concurrent_calls"))
    return f"{max(int(cap * share / calls) >> 20, 64)}MiB"


def bound_malloc_arenas(n: int) -> bool:
    """glibc: at most `n` malloc arenas (True when set; musl and others: nothing to do)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_ARENA_MAX, n))
    except (OSError, AttributeError):
        return False


def apply() -> dict[str, str]:
    """Set the server's budget (the settings it chose, for its log); what the user set in the
    environment (or with --memory-limit) stays."""
    bound_malloc_arenas(int(guard.limit("mcp_malloc_arenas")))
    chosen = {
        "CROSSVIEW_THREADS": str(max(1, min(int(guard.limit("mcp_store_threads")),
                                            _cores()))),
        "CROSSVIEW_ASYNC_THREADS": str(int(guard.limit("mcp_store_async_threads"))),
    }
    mem = store_memory_limit(address_space_cap())
    if mem:
        chosen["CROSSVIEW_MEMORY_LIMIT"] = mem
    out = {}
    for k, v in chosen.items():
        if not os.environ.get(k):
            os.environ[k] = out[k] = v
    return out
