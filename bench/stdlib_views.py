"""What the store's named views (store/stdlib) cost on real captures, beside the read they
follow (same process, same run): reading the view files (once per process), creating the
views on a store (once per store), the check on every later `ensure` (one catalog lookup),
and a full scan of each view.

    .venv/bin/python bench/stdlib_views.py [CAPTURE…]   # default: the shared Kineto captures
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from crossview.sources.registry import read_all
from crossview.store import stdlib
from crossview.store.store import Store

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT = [DATA / "kineto" / n for n in (
    "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz",
    "kineto_v100_resnet50_workers0.pt.trace.json.gz", "hta_v100_ddp_training.json.gz")] + [
    DATA / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"]


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [p for p in DEFAULT if p.exists()]
    t0 = time.perf_counter()
    stdlib.catalog()
    stdlib.digest()
    print(f"view files parsed: {_ms(t0):.1f} ms (once per process, {len(stdlib.catalog())} "
          "views)")
    for p in paths:
        store = Store(compress=True)
        t0 = time.perf_counter()
        read_all([p], store)
        store.compact()
        read_ms = _ms(t0)
        t0 = time.perf_counter()
        stdlib.ensure(store)
        first = _ms(t0)
        t0 = time.perf_counter()
        stdlib.ensure(store)
        again = _ms(t0)
        print(f"{p.name}: read {read_ms:.0f} ms; views created {first:.1f} ms "
              f"({100 * first / read_ms:.1f}% of the read); ensure again {again:.2f} ms")
        for v in stdlib.views():
            t0 = time.perf_counter()
            n = store.sql(f"SELECT count(*) FROM (SELECT * FROM {v.name})").fetchall()[0][0]
            print(f"  {v.name:16} {n:>9,} rows  full scan {_ms(t0):7.1f} ms")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
