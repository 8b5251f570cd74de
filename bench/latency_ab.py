"""First `analyze` at a git ref against this tree, on the same machine in the same minutes
(issue 38): the two source trees alternate run by run, so drift in the machine's speed falls
on both sides alike.

    python bench/latency_ab.py --ref REV [--repeat 3] [CAPTURE ...]

The ref's `src/` is extracted with `git archive` (same_answers.py) and both trees get their
bytecode first; each run is `crossview -q --no-cache analyze CAPTURE --format json -o
/dev/null` with the tree on PYTHONPATH, timed spawn to reap (latency.py `timed`). Prints the
best wall and the best CPU (user + sys) per side, and their ratio. Default captures: the
shipped example and the shared Kineto captures.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import latency  # noqa: E402
import run_all  # noqa: E402
import same_answers  # noqa: E402


def _captures() -> list[Path]:
    kineto = latency.DATA / "kineto"
    return [latency.EXAMPLE, *sorted(kineto.iterdir())] if kineto.is_dir() else [
        latency.EXAMPLE]


def _cmd(capture: Path) -> list[str]:
    return [latency.PY, "-m", "crossview", "-q", "--no-cache", "analyze", str(capture),
            "--format", "json", "-o", os.devnull]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("captures", nargs="*", type=Path)
    a = ap.parse_args(argv)
    ref_src = same_answers.export_src(a.ref, Path(tempfile.mkdtemp(prefix="crossview-ab-")))
    trees = {a.ref: ref_src, "here": latency.REPO / "src"}
    for src in trees.values():
        subprocess.run([latency.PY, "-m", "compileall", "-q", str(src)],
                       env=run_all.child_env(), stdout=subprocess.DEVNULL, check=False)
    print(f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{os.cpu_count()} cores")
    print(f"\n| capture | {a.ref} wall (CPU) s | here wall (CPU) s | here / {a.ref} wall |")
    print("|---|---:|---:|---:|")
    for cap in a.captures or _captures():
        best: dict[str, tuple[float, float]] = {}
        for _ in range(a.repeat):
            for side, src in trees.items():
                wall, cpu = latency.timed(_cmd(cap), {"PYTHONPATH": str(src)})
                old = best.get(side, (float("inf"), float("inf")))
                best[side] = (min(old[0], wall), min(old[1], cpu))
        (rw, rc), (hw, hc) = best[a.ref], best["here"]
        print(f"| {cap.name} | {rw:.2f} ({rc:.2f}) | {hw:.2f} ({hc:.2f}) | {hw / rw:.2f}× |")
    print(f"\nload average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
