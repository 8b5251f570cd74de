"""Benchmark: reading a large Nsight Systems SQLite export (rows/s, peak RSS).

    python bench/bench_nsys.py [--src SQLITE] [--out /tmp/nsys_5m.sqlite] [--min-kernels N]
                               [--repeat N] [--json OUT]

1. Build (once; kept if OUT exists with enough kernels): copy a real export (default: the
   nvFuser H200 2025.1 export in ../shared/data/nsys) to OUT, then repeat its kernel rows and
   the runtime/driver API rows that launched them, shifted later in time by (span + 1 ms) per
   repeat, with correlationIds offset by one stride per repeat so every kernel still links to
   its own launch. The repeats run inside SQLite (INSERT … SELECT over a sequence), so the
   build makes no Python object per row. NVTX, memcpy and the other tables stay as they are.
2. Measure: a child process runs `crossview analyze OUT --format json -o /dev/null` (the whole
   CLI: start-up, read, views, detectors, render) and, separately, a child that only reads the
   export into the store (`read_all`). Wall time from spawn to reap; peak RSS = `ru_maxrss` of
   the child (`os.wait4`). rows/s = (kernel + API rows in the export) / wall s.

Generated files are hundreds of MB: they go to /tmp, never into the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SRC = REPO.parent / "shared" / "data" / "nsys" / "nvfuser_h200_nsys2025.1.sqlite"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
READ_ONLY = (
    "import sys, time; t = time.perf_counter()\n"
    "from pathlib import Path\n"
    "from crossview.sources.registry import read_all\n"
    "from crossview.store.store import Store\n"
    "s = Store(); r = read_all([Path(sys.argv[1])], s)\n"
    "assert r[0].status == 'ok', r\n"
    "n = s.sql(\"SELECT (SELECT count(*) FROM gpu_ops WHERE kind = 'kernel'),"
    " (SELECT count(*) FROM gpu_ops WHERE kind = 'kernel' AND launch_op_id IS NOT NULL),"
    " (SELECT count(*) FROM host_ops WHERE kind = 'runtime')\").fetchall()[0]\n"
    "print('READ', *n, round(time.perf_counter() - t, 3))\n"
)


def count(path: Path, table: str) -> int:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        con.close()


def build(src: Path, out: Path, min_kernels: int) -> None:
    """Repeat src's kernels (+ their launch calls) until OUT holds >= min_kernels."""
    t0 = time.perf_counter()
    tmp = out.with_suffix(".building")
    shutil.copyfile(src, tmp)
    os.chmod(tmp, 0o644)
    con = sqlite3.connect(tmp)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    n_k = con.execute(f"SELECT count(*) FROM {KERNEL}").fetchone()[0]
    lo = min(con.execute(f"SELECT min(start) FROM {t}").fetchone()[0] for t in (KERNEL, RUNTIME))
    hi = max(con.execute(f"SELECT max(end) FROM {t}").fetchone()[0] for t in (KERNEL, RUNTIME))
    shift = hi - lo + 1_000_000  # each repeat starts 1 ms after the previous one ends
    stride = con.execute(f"SELECT max(correlationId) + 1 FROM {RUNTIME}").fetchone()[0]
    repeats = -(-min_kernels // n_k) - 1  # the original rows are repeat 0
    con.execute("CREATE TEMP TABLE seq AS WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL"
                f" SELECT i + 1 FROM s WHERE i < {repeats}) SELECT i FROM s")
    k_cols = [r[1] for r in con.execute(f"PRAGMA table_info({KERNEL})")]
    r_cols = [r[1] for r in con.execute(f"PRAGMA table_info({RUNTIME})")]

    def shifted(cols: list[str], alias: str) -> str:
        moved = {"start": f"{alias}.start + seq.i * {shift}",
                 "end": f"{alias}.end + seq.i * {shift}",
                 "correlationId": f"{alias}.correlationId + seq.i * {stride}"}
        return ", ".join(moved.get(c, f'{alias}."{c}"') for c in cols)

    con.execute(f"INSERT INTO {KERNEL} SELECT {shifted(k_cols, 'k')} FROM seq, {KERNEL} k"
                f" WHERE k.rowid <= {n_k} ORDER BY seq.i, k.start")
    # the launch calls: runtime rows of the kernels' (process, correlationId)
    con.execute(f"CREATE TEMP TABLE launch AS SELECT r.* FROM {RUNTIME} r WHERE EXISTS ("
                f"SELECT 1 FROM {KERNEL} k WHERE k.rowid <= {n_k} AND"
                " k.correlationId = r.correlationId AND (k.globalPid >> 24) = (r.globalTid >> 24))")
    con.execute(f"INSERT INTO {RUNTIME} SELECT {shifted(r_cols, 'l')} FROM seq, launch l"
                " ORDER BY seq.i, l.start")
    con.commit()
    con.close()
    tmp.replace(out)
    print(f"built {out}: {count(out, KERNEL):,} kernels, {count(out, RUNTIME):,} API rows, "
          f"{out.stat().st_size / 1e6:,.1f} MB in {time.perf_counter() - t0:.1f} s")


def measure(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, peak RSS MiB, stdout) of one child process, reaped with os.wait4."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                             f"{err.read()[-3000:]}")
        return wall, usage.ru_maxrss / 1024, out.read()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, default=DEFAULT_SRC)
    ap.add_argument("--out", type=Path, default=Path("/tmp/nsys_5m.sqlite"))
    ap.add_argument("--min-kernels", type=int, default=5_000_000)
    ap.add_argument("--repeat", type=int, default=1,
                    help="timed runs of each command (0: build the export only)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    if not (a.out.exists() and count(a.out, KERNEL) >= a.min_kernels):
        build(a.src, a.out, a.min_kernels)
    kernels, apis = count(a.out, KERNEL), count(a.out, RUNTIME)
    if a.repeat < 1:  # build only: nothing timed
        print(f"{a.out}: {kernels:,} kernels, {apis:,} API rows (not measured: --repeat 0)")
        return
    rows = kernels + apis
    py = sys.executable
    results: dict[str, dict[str, float]] = {}
    for label, cmd in (
        ("read", [py, "-c", READ_ONLY, str(a.out)]),
        ("analyze", [py, "-m", "crossview", "analyze", str(a.out), "--format", "json",
                     "-o", os.devnull]),
    ):
        runs = [measure(cmd) for _ in range(a.repeat)]
        wall = min(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        results[label] = {"wall_s": round(wall, 3), "peak_rss_mib": round(rss, 1),
                          "rows_per_s": round(rows / wall)}
        extra = runs[0][2].strip().splitlines()[-1] if label == "read" else ""
        print(f"{label:8s} {wall:8.2f} s  {rows / wall / 1e6:6.2f} M rows/s  "
              f"peak RSS {rss:8.1f} MiB  {extra}")
    summary = {"file": str(a.out), "bytes": a.out.stat().st_size, "kernels": kernels,
               "api_rows": apis, **results}
    print(json.dumps(summary))
    if a.json:
        a.json.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
