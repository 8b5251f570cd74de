"""Where the analysis's SQL time goes: every `Store.sql` call of one in-process `analyze`, timed.

    python bench/sql_times.py CAPTURE [--top 25]

Prints the analyze wall, the SQL total and call count, then the slowest calls with the
crossview line that issued each (pin to one core with `taskset -c 0` to compare with the
bench's 1-core rows). A diagnostic, not a target: nothing is compared or asserted.
"""

from __future__ import annotations

import argparse
import gc
import time
import traceback
from pathlib import Path
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("capture", type=Path)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args(argv)
    gc.set_threshold(50_000, 20, 20)  # as the CLI runs (cli/app.py)
    from crossview.analysis import analyze
    from crossview.store import store as store_mod

    original = store_mod.Store.sql
    log: list[tuple[float, str, str]] = []

    def timed(self: store_mod.Store, query: str, params: Any = None) -> Any:
        t = time.perf_counter()
        out = original(self, query, params)
        caller = traceback.extract_stack(limit=2)[0]
        where = f"{caller.filename.rsplit('crossview/', 1)[-1]}:{caller.lineno}"
        log.append((time.perf_counter() - t, where, " ".join(query.split())[:110]))
        return out

    store_mod.Store.sql = timed  # type: ignore[method-assign]
    t0 = time.perf_counter()
    result = analyze([a.capture], None)
    _ = result.findings  # the verdict is lazy (read when a recap asks): its SQL counts too
    print(f"analyze {time.perf_counter() - t0:.2f} s; SQL {sum(x[0] for x in log):.3f} s "
          f"in {len(log)} calls")
    for dt, where, query in sorted(log, reverse=True)[:a.top]:
        print(f"{dt * 1000:7.1f} ms  {where:45s} {query}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
