"""The memory limit applies when none is given (issue 43, item 7): every Store's DuckDB limit
is half of what this process may use — the least of RAM, its cgroup limit and `ulimit -v` —
never DuckDB's own 80% of RAM, which under a 6 GiB address-space cap on a 24 GiB machine
planned for 19 GB and ended in MemoryError. An explicit limit still wins."""

from __future__ import annotations

import resource
import subprocess
import sys

from conftest import cli_env

_PROBE = ("from crossview.store.store import Store; "
          "print(Store().con.execute(\"SELECT current_setting('memory_limit')\").fetchone()[0])")


def _limit_under(cap: int | None, env: dict[str, str] | None = None) -> float:
    """DuckDB's memory_limit (GiB) of a new Store in a child under RLIMIT_AS = cap."""
    def pre() -> None:
        if cap is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    e = cli_env(env)
    if env is None:
        e.pop("CROSSVIEW_MEMORY_LIMIT", None)
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                         env=e, preexec_fn=pre, timeout=60, check=True).stdout.strip()
    num, unit = out.split()
    return float(num) * {"MiB": 1 / 1024, "GiB": 1.0, "TiB": 1024.0}[unit]


def test_default_limit_is_half_of_an_address_space_cap() -> None:
    assert abs(_limit_under(4 << 30) - 2.0) < 0.01  # 2048MiB: DuckDB shows 2.0 GiB


def test_explicit_limit_wins_over_the_default() -> None:
    got = _limit_under(4 << 30, {"CROSSVIEW_MEMORY_LIMIT": "300MB"})
    assert abs(got - 300e6 / 2**30) < 0.01
