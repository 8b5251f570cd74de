"""What the recap's replay graph costs, piece by piece, on real captures (same process, best
of N, the CLI's garbage-collector setting): the rows it reads, the host and GPU halves of the
build, the whole build, its first replay (which finds the order), one re-timing and one lever copy.

    .venv/bin/python bench/replay_build.py [--repeat 3] [CAPTURE…]   # default: 3 shared traces
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crossview.replay import graph as graph_mod
from crossview.replay import graph_gpu, graph_host, replay
from crossview.replay.whatif import CaptureReplay, marks
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.views import replay_rows
from crossview.views.distributed import collective_loops

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "kineto"
DEFAULT = [DATA / n for n in ("hta_v100_ddp_training.json.gz",
                              "hta_a100_16rank_training_graphs.json.gz",
                              "kineto_v100_resnet50_workers0.pt.trace.json.gz")]


def _best(f: Callable[[], Any], n: int) -> tuple[float, Any]:
    best, out = float("inf"), None
    for _ in range(n):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best, out


def one(path: Path, n: int) -> None:
    store = Store()
    read_all([path], store)
    aid = replay_rows.replayable(store)
    if aid is None:
        print(f"{path.name}: no single replayable timeline")
        return
    cap = CaptureReplay(store, aid)
    mk = marks(cap.steps)
    p = graph_mod.params()
    rows: list[tuple[str, float]] = []
    dt, hr = _best(lambda: replay_rows.host_rows(store, aid), n)
    rows.append(("host rows (SQL)", dt))
    dt, gr = _best(lambda: replay_rows.gpu_rows(store, aid), n)
    rows.append(("GPU rows (SQL)", dt))
    loops: dict[str, list[tuple[int, int]]] = {}
    for x in collective_loops.loops(store, aid, scoped=False):
        loops.setdefault(x.lane, []).append((x.start_ns, x.end_ns))

    def host() -> graph_host.Nodes:
        return graph_host.build_host(hr, mk, loops, p["graph"], p["levers"]["graph-region"])

    dt, _ = _best(host, n)
    rows.append(("build_host", dt))

    def gpu() -> float:
        nodes = host()
        t = time.perf_counter()
        graph_gpu.build_gpu(nodes, gr, p["graph"])
        return time.perf_counter() - t

    rows.append(("build_gpu", min(gpu() for _ in range(n))))
    dt, g = _best(lambda: graph_mod.build(store, aid, mk), n)
    rows.append(("whole build", dt))
    dt, (_, order) = _best(lambda: replay._ordering(g), n)
    rows.append(("first replay (finds the order)", dt))
    dt, _ = _best(lambda: replay._timed(g, order), n)
    rows.append(("one re-timing", dt))
    dt, _ = _best(g.copy, n)
    rows.append(("one lever copy", dt))
    edges = sum(len(c) for c in g.cons)
    print(f"{path.name}: {len(g):,} nodes, {edges:,} constraints (best of {n})")
    for label, dt in rows:
        print(f"  {dt * 1000:8.1f} ms  {label}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="*", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    gc.set_threshold(50_000, 20, 20)  # as the CLI runs (cli/app.py)
    for path in a.captures or DEFAULT:
        if not path.exists():
            print(f"{path}: missing (skipped)")
            continue
        one(path, a.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
