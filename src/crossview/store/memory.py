"""The memory limit every Store runs under when none is given (issue 43, item 7).

DuckDB's own default is 80% of the machine's RAM, blind to what this process may really use:
a container's cgroup limit, or `ulimit -v` (an address-space cap). Under a 6 GiB cap on a
24 GiB machine DuckDB planned for 19 GB and the process died in MemoryError. The default
here is `default_memory_share` (input_limits.yaml) of the least of RAM, the cgroup limit and
the address-space cap: DuckDB spills past it, and the rest is left to the Python side of the
analysis. `--memory-limit` / CROSSVIEW_MEMORY_LIMIT still decide when given.
"""

from __future__ import annotations

import contextlib
import os
import resource
from pathlib import Path

from crossview.knowledge.loader import load_yaml

ENV = "CROSSVIEW_MEMORY_LIMIT"
_SIZE = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_CGROUP = (Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
           Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"))  # v1


def parse_size(text: str) -> int | None:
    """'512MB', '2 GiB' → bytes; None when it is not such a size."""
    t = text.strip().lower().replace(" ", "")
    num = t.rstrip("kmgtib")
    unit = t[len(num):]
    try:
        return int(float(num) * _SIZE[unit]) if num and unit in _SIZE else None
    except ValueError:
        return None


def usable_bytes() -> int:
    """The least of the machine's RAM, this process's cgroup limit and its address-space
    cap (RLIMIT_AS): the memory this process can actually use."""
    out = []
    with contextlib.suppress(AttributeError, ValueError, OSError):
        out.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    for p in _CGROUP:
        try:
            text = p.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # "max" or a huge sentinel: no limit
            out.append(int(text))
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1) and soft > 0:
        out.append(int(soft))
    return min(out) if out else 8 << 30


def default_limit_bytes() -> int:
    share = float(load_yaml("input_limits.yaml")["default_memory_share"])
    return max(64 << 20, int(usable_bytes() * share))


def limit_text(given: str | None = None) -> str:
    """The limit a Store applies: `given`, else the environment's, else the default."""
    return given or os.environ.get(ENV) or f"{default_limit_bytes() >> 20}MiB"


def limit_bytes() -> int:
    """The same limit in bytes (the budget of what one input may expand to in memory)."""
    return parse_size(limit_text()) or default_limit_bytes()
