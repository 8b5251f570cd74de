"""Perf-lake benchmark: `crossview ingest` of 16 scaled real traces (>= 2 GB) vs HTA.

    python bench/bench_lake.py [--work /tmp/crossview-lake-bench] [--total-mb 2100] [--n 16]
                               [--hta-python PATH] [--hta-timeout S] [--no-hta] [--no-dask]
                               [--scaling 150,600,1200] [--scaling-limits 400MB]
                               [--json OUT]

1. Inputs (into --work, never the repo): the HTA repository's three real Kineto traces in
   ../shared/data/kineto, taken in turn, each given its own `distributedInfo.rank` (0..n-1,
   so HTA sees n ranks and every file has its own content hash) and scaled with
   bench/scale_trace.py to total-mb / n MB.
2. crossview: `crossview ingest DIR --lake L --workers W --format json` into a fresh lake for
   W = 1 and 2 (and `--dask local` with 2 workers): whole-run wall time; peak RSS per worker
   process (its `ru_maxrss`, reported by each task); the run's own peak (wait4). Then
   `crossview analyze --lake L --format json` over the whole lake: wall and peak RSS.
3. HTA: `TraceAnalysis(trace_dir)` over the same n files + `get_temporal_breakdown()` (the
   script of bench_ingest.py). HTA parses ranks in a multiprocessing pool: peak RSS of its
   largest process (wait4) and of all its processes together (sampled). A watchdog kills
   it when the machine's MemAvailable falls under 2 GiB
   ("did not fit").
4. --scaling: single V100 traces of the given sizes through `ingest --workers 1`, with the
   default DuckDB memory limit and each --scaling-limits value: the worker's peak RSS
   against the input size (the bounded-memory check).
Ratios are printed from numbers measured in this same run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest import (  # noqa: E402
    DEFAULT_HTA_PYTHON,
    MB,
    REPO_ROOT,
    run_measured,  # noqa: E402
)
from scale_trace import scale  # noqa: E402

KINETO = REPO_ROOT.parent / "shared" / "data" / "kineto"
SOURCES = ("hta_v100_ddp_training.json.gz", "hta_a100_16rank_training_graphs.json.gz",
           "hta_a100_ddp_resnet_nccl.json.gz")
CROSSVIEW = [str(REPO_ROOT / ".venv" / "bin" / "python"), "-m", "crossview"]
MIN_AVAILABLE_KIB = 2 * 1024 * 1024
# HTA's load is what compares with `crossview ingest`; its temporal breakdown is tried after
# it and may fail (HTA 0.5.0 asserts compute_time <= kernel_time on some real ranks)
HTA_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
err = None
try:
    analyzer.get_temporal_breakdown(visualize=False)
except Exception as e:
    err = f"{type(e).__name__}: {e}"
t3 = time.perf_counter()
print("BENCH_RESULT " + json.dumps({
    "import_s": t1 - t0, "load_s": t2 - t1, "breakdown_s": t3 - t2, "breakdown_error": err,
    "ranks": analyzer.t.get_ranks(),
    "df_rows": sum(len(df) for df in analyzer.t.traces.values())}), flush=True)
"""


def make_inputs(work: Path, n: int, total_mb: float) -> list[Path]:
    traces = work / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    out = []
    for i in range(n):
        dest = traces / f"trace-rank-{i}.json"
        if not dest.exists():
            src = KINETO / SOURCES[i % len(SOURCES)]
            with gzip.open(src, "rb") as f:
                doc = json.load(f)
            doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": i,
                                      "world_size": n}
            ranked = work / f"src-rank-{i}.json.gz"
            with gzip.open(ranked, "wt") as f:
                json.dump(doc, f)
            scale(ranked, dest, total_mb / n, 1000)
            ranked.unlink()
        out.append(dest)
    return out


def ingest(traces: Path, lake: Path, extra: list[str]) -> dict[str, Any]:
    shutil.rmtree(lake, ignore_errors=True)
    out = lake.with_suffix(".out.json")
    cmd = CROSSVIEW + ["ingest", str(traces), "--lake", str(lake), "-f", "json", *extra]
    run = run_measured("crossview", ["sh", "-c", " ".join(cmd) + f" > {out}"], None)
    res: dict[str, Any] = {"args": extra, "ok": run.ok, "wall_s": run.wall_s,
                           "run_peak_rss_mib": run.peak_rss_kib / 1024, "error": run.error}
    if run.ok:
        doc = json.loads(out.read_text())
        rss = doc["worker_peak_rss_kib"]
        res.update(added=len(doc["added"]), workers=len(rss),
                   worker_peak_rss_mib=sorted(round(v / 1024, 1) for v in rss.values()),
                   rows=sum(sum(e["rows"].values()) for e in doc["added"]))
    return res


def _children(pid: int | None = None) -> list[int]:
    pid = pid or os.getpid()
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def _tree_rss_kib(root: int) -> int:
    """RSS of a process and its children, summed (HTA parses ranks in a pool)."""
    total = 0
    for pid in (root, *_children(root)):
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next((int(ln.split()[1]) for ln in f if ln.startswith("VmRSS")), 0)
        except OSError:
            pass
    return total


def hta(traces: Path, python: str, timeout: float) -> dict[str, Any]:
    state = {"killed_low_memory": False, "done": False, "tree_kib": 0}

    def watchdog() -> None:
        while not state["done"]:
            for pid in _children():
                state["tree_kib"] = max(state["tree_kib"], _tree_rss_kib(pid))
            with open("/proc/meminfo") as f:
                avail = next(int(ln.split()[1]) for ln in f if ln.startswith("MemAvailable"))
            if avail < MIN_AVAILABLE_KIB:
                for pid in _children():  # run_measured starts it in its own session
                    state["killed_low_memory"] = True
                    os.killpg(pid, signal.SIGKILL)
                return
            time.sleep(0.2)

    t = threading.Thread(target=watchdog, daemon=True)
    t.start()
    try:
        run = run_measured("hta", [python, "-c", HTA_SCRIPT, str(traces)], timeout)
    finally:
        state["done"] = True
    return {"ok": run.ok, "wall_s": run.wall_s, "peak_rss_mib": run.peak_rss_kib / 1024,
            "tree_peak_rss_mib": state["tree_kib"] / 1024,
            "did_not_fit": state["killed_low_memory"], "timed_out": run.timed_out,
            "ranks": len(run.detail.get("ranks", [])), "error": run.error[-500:],
            **{k: run.detail.get(k) for k in ("load_s", "breakdown_s", "breakdown_error",
                                              "df_rows")}}


def scaling(work: Path, sizes: list[int], limits: list[str]) -> list[dict[str, Any]]:
    rows = []
    for mb in sizes:
        f = work / "scaling" / f"v100_{mb}mb.json"
        f.parent.mkdir(parents=True, exist_ok=True)
        if not f.exists():
            scale(KINETO / SOURCES[0], f, mb, 1000)
        single = work / "scaling" / f"in_{mb}"
        single.mkdir(exist_ok=True)
        link = single / f.name
        if not link.exists():
            link.symlink_to(f)
        for limit in (None, *limits):
            extra = ["--workers", "1"] + (["--memory-limit", limit] if limit else [])
            r = ingest(single, work / "scaling" / f"lake_{mb}", extra)
            r["input_mb"], r["memory_limit"] = f.stat().st_size / MB, limit or "default"
            rows.append(r)
            print(f"  {r['input_mb']:8.1f} MB, memory limit {r['memory_limit']:>8} -> worker "
                  f"peak RSS {max(r.get('worker_peak_rss_mib', [0])):8.1f} MiB, "
                  f"wall {r['wall_s']:.2f} s", flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/crossview-lake-bench"))
    p.add_argument("--total-mb", type=float, default=2100)
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--hta-python", default=DEFAULT_HTA_PYTHON)
    p.add_argument("--hta-timeout", type=float, default=1800)
    p.add_argument("--no-hta", action="store_true")
    p.add_argument("--no-dask", action="store_true")
    p.add_argument("--scaling", default="", help="comma-separated MB sizes (e.g. 150,600)")
    p.add_argument("--scaling-limits", default="400MB",
                   help="comma-separated --memory-limit values also run at each size")
    p.add_argument("--json", type=Path)
    a = p.parse_args(argv)
    res: dict[str, Any] = {"cpus": os.cpu_count()}
    t = time.perf_counter()
    traces = make_inputs(a.work, a.n, a.total_mb)
    total = sum(f.stat().st_size for f in traces) / MB
    res["inputs"] = {"files": len(traces), "total_mb": total, "gen_s": time.perf_counter() - t}
    print(f"inputs: {len(traces)} files, {total:,.0f} MB in {a.work / 'traces'}", flush=True)
    runs = {"1 worker": ["--workers", "1"], "2 workers": ["--workers", "2"]}
    if not a.no_dask:
        runs["dask local, 2 workers"] = ["--workers", "2", "--dask", "local"]
    for name, extra in runs.items():
        r = ingest(a.work / "traces", a.work / "lake", extra)
        res[name] = r
        print(f"crossview ingest, {name:<22} wall {r['wall_s']:7.2f} s  "
              f"{total / r['wall_s']:7.1f} MB/s  worker peak RSS (MiB) "
              f"{r.get('worker_peak_rss_mib')}  ok={r['ok']}", flush=True)
    q = run_measured("crossview", CROSSVIEW + ["analyze", "--lake", str(a.work / "lake"),
                                               "-f", "json", "-o", "/dev/null"], None)
    res["analyze --lake"] = {"ok": q.ok, "wall_s": q.wall_s, "peak_rss_mib": q.peak_rss_kib / 1024}
    print(f"crossview analyze --lake (all {len(traces)}): wall {q.wall_s:.2f} s, peak RSS "
          f"{q.peak_rss_kib / 1024:.0f} MiB, ok={q.ok}", flush=True)
    if not a.no_hta:
        h = hta(a.work / "traces", a.hta_python, a.hta_timeout)
        res["hta"] = h
        print(f"HTA TraceAnalysis load + temporal breakdown: ok={h['ok']} wall "
              f"{h['wall_s']:.2f} s (load {h['load_s'] or 0:.2f} s), peak RSS "
              f"{h['peak_rss_mib']:.0f} MiB (largest process; all processes together "
              f"{h['tree_peak_rss_mib']:.0f} MiB, sampled every 0.2 s), ranks {h['ranks']}"
              + (" — did not fit in memory" if h["did_not_fit"] else "")
              + (f"; breakdown failed: {h['breakdown_error']}" if h["breakdown_error"] else ""),
              flush=True)
        one, two = res["1 worker"], res["2 workers"]
        if h["ok"] and one["ok"] and two["ok"]:
            ratios = {
                "hta_wall/crossview_wall_1w": h["wall_s"] / one["wall_s"],
                "hta_wall/crossview_wall_2w": h["wall_s"] / two["wall_s"],
                "crossview_worker_rss/hta_rss": max(two["worker_peak_rss_mib"])
                / h["peak_rss_mib"],
                "speedup_2w_over_1w": one["wall_s"] / two["wall_s"],
            }
            res["ratios"] = ratios
            for k, v in ratios.items():
                print(f"  {k:<32} {v:6.2f}x")
    if a.scaling:
        print("bounded memory: ingest --workers 1 of one V100 trace scaled to each size")
        res["scaling"] = scaling(a.work, [int(s) for s in a.scaling.split(",")],
                                 [x for x in a.scaling_limits.split(",") if x])
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
