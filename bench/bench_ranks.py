"""Multi-rank analysis fanned out per rank: `crossview analyze DIR --workers W` on 16 ranks.

    python bench/bench_ranks.py [--work /tmp/crossview-ranks-bench] [--total-mb 1000]
                                [--n 16] [--straggler 5] [--no-dask] [--json OUT]

1. Inputs (into --work, never the repo): the real A100 DDP trace in ../shared/data/kineto
   (it has NCCL all-reduce kernels) copied to n ranks with tests/multirank_job.py (rank r in
   `distributedInfo`; rank --straggler 5 ms late from the 6th collective on), then each
   scaled with bench/scale_trace.py to total-mb / n MB. The straggler's repeats get a gap
   5 ms shorter, so every repeat of its timeline lines up with the others' and each repeat
   carries the same planted 5 ms lateness.
2. `crossview analyze DIR --format json` in process (--workers 0: one process holds all n
   ranks), then with --workers 1 and 2 (and --dask local with 2 unless --no-dask): wall
   time; the crossview process's peak RSS (wait4 — pool workers are children of the
   forkserver, not of it, so this is the parent: merge + the one rank analyzed in full);
   each worker's own peak (`fanout.worker_peak_rss_kib`, the worker's ru_maxrss, reported
   by its tasks). Checks that the `ranks`, `stragglers` and
   `rank_analysis` of every run equal the in-process ones and prints the straggler found.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import multirank_job  # noqa: E402
from bench_ingest import MB, REPO_ROOT, run_measured  # noqa: E402
from scale_trace import scale  # noqa: E402

SRC = REPO_ROOT.parent / "shared" / "data" / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz"
CROSSVIEW = [str(REPO_ROOT / ".venv" / "bin" / "python"), "-m", "crossview"]
DELAY_US = 5000.0
GAP_US = 20_000
KEYS = ("ranks", "stragglers", "rank_analysis")
# the joined replay of all ranks (the critical path) runs in process only: left out of the
# comparison (under --workers/--dask rank_analysis says it was not replayed)
REPLAY = ("critical_path", "critical_path_note")


def make_inputs(work: Path, n: int, total_mb: float, straggler: int) -> Path:
    out = work / "ranks"
    if out.is_dir() and len(list(out.glob("*.json"))) == n:
        return out
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as raw:
        paths, _ = multirank_job.build(SRC, Path(raw), n, straggler, DELAY_US, 6)
        for r, p in enumerate(paths):
            gap = GAP_US - int(DELAY_US) if r == straggler else GAP_US
            scale(p, out / f"job-rank-{r}.json", total_mb / n, gap)
    return out


def analyze(traces: Path, extra: list[str], work: Path) -> dict[str, Any]:
    cmd = CROSSVIEW + ["analyze", str(traces), "--format", "json", "-o",
                       str(work / "out.json"), *extra]
    run = run_measured("crossview", cmd, None)
    res: dict[str, Any] = {"args": " ".join(extra) or "(in process)", "rc": run.rc,
                           "wall_s": round(run.wall_s, 2),
                           "run_peak_rss_mib": round(run.peak_rss_kib / 1024)}
    if run.rc != 0:
        res["error"] = run.error or "see the command above"
        return res
    doc = json.loads((work / "out.json").read_text())
    res["doc"] = {k: ({x: y for x, y in doc[k].items() if x not in REPLAY}
                      if k == "rank_analysis" and doc[k] else doc[k]) for k in KEYS}
    fan = doc.get("fanout") or {}
    res["worker_peak_rss_mib"] = sorted(round(v / 1024) for v in
                                        fan.get("worker_peak_rss_kib", {}).values())
    s = doc["stragglers"][0] if doc["stragglers"] else {}
    res["straggler"] = {k: s.get(k) for k in ("rank", "skew_ns", "late_collectives",
                                              "skewed_collectives", "cause_kind")}
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/crossview-ranks-bench"))
    ap.add_argument("--total-mb", type=float, default=1000.0)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--straggler", type=int, default=5)
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    if not SRC.is_file():
        print(f"bench: {SRC} not present (../shared/data)", file=sys.stderr)
        return 2
    if not 0 <= a.straggler < a.n:
        print(f"bench: --straggler {a.straggler}: must be a rank below --n {a.n}", file=sys.stderr)
        return 2
    a.work.mkdir(parents=True, exist_ok=True)
    traces = make_inputs(a.work, a.n, a.total_mb, a.straggler)
    total = sum(p.stat().st_size for p in traces.glob("*.json")) / MB
    print(f"{a.n} rank files, {total:,.0f} MB in {traces}", flush=True)
    runs = [["--workers", "0"], ["--workers", "1"], ["--workers", "2"]]
    if not a.no_dask:
        runs.append(["--dask", "local"])
    results = []
    for extra in runs:
        r = analyze(traces, extra if extra != ["--workers", "0"] else [], a.work)
        if results and "doc" in r and "doc" in results[0]:
            r["equal_to_in_process"] = r["doc"] == results[0]["doc"]
        print(json.dumps({k: v for k, v in r.items() if k != "doc"}), flush=True)
        results.append(r)
    if a.json:
        a.json.write_text(json.dumps({"inputs_mb": round(total), "n": a.n, "runs": [
            {k: v for k, v in r.items() if k != "doc"} for r in results]}, indent=2))
    return 0 if all(r["rc"] == 0 and r.get("equal_to_in_process", True) for r in results) \
        else 1


if __name__ == "__main__":
    sys.exit(main())
