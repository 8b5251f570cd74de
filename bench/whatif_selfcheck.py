"""The what-if self-check table (docs/whatif.md): replay each capture's unchanged dependency
graph and compare every step with its measured time.

    PYTHONPATH=src .venv/bin/python bench/whatif_selfcheck.py [DATA_DIR]

DATA_DIR defaults to ../shared/data. Prints a Markdown table: one row per Kineto/nsys capture
with a timeline (summary-only and CPU-only inputs are listed with the one-line refusal).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from crossview.errors import CrossviewError
from crossview.replay.whatif import run

PATTERNS = ("kineto/*.json.gz", "nsys/*.sqlite", "nsys/*/")


def main(data: Path) -> None:
    print("| capture | steps from | steps | median measured step | max self-check error "
          "| within 2% | nodes off their measured start | replay time |")
    print("|---|---|---:|---:|---:|---|---:|---:|")
    for pattern in PATTERNS:
        for path in sorted(data.glob(pattern)):
            t0 = time.perf_counter()
            try:
                w = run([path], [])
            except CrossviewError as e:
                print(f"| {path.relative_to(data)} | refused: {e} | | | | | | |")
                continue
            m = w.medians()
            print(f"| {path.relative_to(data)} | {w.steps_from} | {len(w.baseline)} "
                  f"| {m['measured_step_ns'] / 1e6:.2f} ms | {w.selfcheck_max_error:.4%} "
                  f"| {'yes' if w.selfcheck_ok else 'NO'} | {w.nodes_moved:,} of {w.nodes:,} "
                  f"| {time.perf_counter() - t0:.1f} s |")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
         / "shared" / "data")
