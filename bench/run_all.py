"""Every bench in one run: crossview against its peers and against the bare-parse limits.

    python bench/run_all.py [--quick] [--kineto TRACE] [--nsys SQLITE] [--nsys-kernels N]
                            [--repeat N] [--skip hta,queries,...] [--json OUT]

All measured in this run, on this machine, with its load average printed (start and end):

- **Kineto** (a >= 300 MB trace made by scale_trace.py; `--quick`: the 47 MB V100 trace of
  ../shared/data as is), on 2 cores and pinned to one (`taskset -c 0`; crossview's DuckDB
  then runs one thread, see store.default_threads):
  crossview `analyze --format json` (whole CLI), HTA 0.5.0 load + temporal breakdown (its own
  venv, bench_ingest.py's script), and the limit: DuckDB's bare `read_json` of the same
  event bytes into the same columns (the reader's staging done first, untimed; the time is
  the parse query alone, in a child that imported nothing of crossview's analysis).
- **nsys** (an export grown by bench_nsys.py, default 1 M kernels; `--quick`: 100 k):
  crossview `analyze` (whole CLI) and the limit: a bare scan of the kernel + runtime tables'
  columns crossview reads, by Python `sqlite3` (always), ADBC SQLite into Arrow and DuckDB's
  sqlite extension (each where installed; otherwise the table says why not).
- **Queries**: bench_queries.py (the MCP tools, warm p95, on the same two inputs, file mode).

Every child runs from compiled bytecode, as an installed crossview does (pip compiles modules at
install; the HTA venv's are compiled): PYTHONDONTWRITEBYTECODE is dropped from the children's
environment and `src` is compiled once before the first timed run, so a machine that sets it
does not charge crossview ~0.2–0.4 s of recompiling its own modules in every timed run.
Wall = spawn to reap (`time.perf_counter`), peak RSS = the child's `ru_maxrss` (os.wait4),
best wall / max RSS over `--repeat` runs. Targets: bench/targets.yaml. Generated inputs go to
/tmp, never into the repository. Exit 0 when every bench ran (PASS/FAIL is in the table).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

import bench_ingest  # noqa: E402
import bench_nsys  # noqa: E402
import bench_queries  # noqa: E402

PY = sys.executable
QUICK_KINETO = bench_queries.DATA / "kineto" / "hta_v100_ddp_training.json.gz"

BARE_KINETO = r"""
import sys, tempfile, time
from pathlib import Path
import duckdb
from crossview.sources.kineto import categories as C, staging
threads = int(sys.argv[2])
con = duckdb.connect()
con.execute(f"SET threads={threads}")
staged = staging.stage(Path(sys.argv[1]), tempfile.mkdtemp(prefix="crossview-bare-"), threads,
                       exact=False, stream=False)
staged.finish()
t = time.perf_counter()
con.execute("CREATE TABLE ev AS SELECT * FROM read_json($f, format='array', "
            f"columns={C.COLUMNS}, maximum_object_size=16777216)", {"f": staged.files})
dt = time.perf_counter() - t
n = con.execute("SELECT count(*) FROM ev").fetchall()[0][0]
import os
for f in staged.files: os.unlink(f)
print("BARE", dt, n)
"""

KERNEL_COLS = ("start, end, deviceId, streamId, correlationId, globalPid, demangledName, gridX,"
               " gridY, gridZ, blockX, blockY, blockZ, registersPerThread")
RUNTIME_COLS = "start, end, globalTid, correlationId, nameId"
BARE_NSYS = r"""
import sys, time
path, how = sys.argv[1], sys.argv[2]
q = [f"SELECT {sys.argv[3]} FROM CUPTI_ACTIVITY_KIND_KERNEL",
     f"SELECT {sys.argv[4]} FROM CUPTI_ACTIVITY_KIND_RUNTIME"]
if how == "sqlite3":
    import sqlite3
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    t = time.perf_counter()
    n = 0
    for sql in q:
        cur = con.execute(sql)
        while rows := cur.fetchmany(65536):
            n += len(rows)
elif how == "adbc":
    import adbc_driver_sqlite.dbapi as adbc
    con = adbc.connect(path)
    t = time.perf_counter()
    n = 0
    for sql in q:
        cur = con.cursor()
        cur.execute(sql)
        n += cur.fetch_arrow_table().num_rows
else:
    import duckdb
    con = duckdb.connect()
    con.execute("LOAD sqlite")
    con.execute(f"ATTACH '{path}' AS s (TYPE sqlite, READ_ONLY)")
    t = time.perf_counter()
    n = sum(con.execute(s.replace("FROM ", "FROM s.")).fetch_arrow_table().num_rows for s in q)
print("BARE", time.perf_counter() - t, n)
"""


@dataclass
class Run:
    wall_s: float
    rss_mib: float
    out: str


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(REPO / "src"), **(extra or {})}


def compile_sources() -> None:
    """Bytecode for crossview's sources (git-ignored __pycache__), before any timed run."""
    subprocess.run([PY, "-m", "compileall", "-q", str(REPO / "src")], env=child_env(),
                   stdout=subprocess.DEVNULL, check=False)


def measure(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 3600) -> Run:
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=err, text=True,
                                env=child_env(env))
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                proc.kill()
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(cmd[:4])}… exited {proc.returncode}: "
                               f"{err.read()[-600:].strip()}")
        return Run(wall, usage.ru_maxrss / 1024, out.read())


def best(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> Run:
    runs = [measure(cmd, env) for _ in range(repeat)]
    return Run(min(r.wall_s for r in runs), max(r.rss_mib for r in runs), runs[0].out)


def pinned(cmd: list[str], cores: int) -> list[str]:
    return cmd if cores > 1 else ["taskset", "-c", "0", *cmd]


def bare_seconds(run: Run) -> float:
    line = next(x for x in run.out.splitlines() if x.startswith("BARE "))
    return float(line.split()[1])


def kineto(trace: Path, repeat: int, skip: set[str], hta_python: str) -> list[dict[str, Any]]:
    rows = []
    for cores in (2, 1):
        env = {"CROSSVIEW_THREADS": str(cores)}
        cv = best(pinned([PY, "-m", "crossview", "analyze", str(trace), "--format", "json",
                          "-o", os.devnull], cores), repeat, env)
        bare = min(bare_seconds(measure(pinned([PY, "-c", BARE_KINETO, str(trace),
                                                 str(cores)], cores)))
                   for _ in range(repeat))
        row: dict[str, Any] = {"cores": cores, "crossview_s": cv.wall_s,
                               "crossview_rss_mib": cv.rss_mib, "bare_parse_s": bare}
        if "hta" not in skip:
            if not Path(hta_python).exists():
                row["hta"] = f"not run: {hta_python} absent (see bench/README.md)"
            else:
                with tempfile.TemporaryDirectory() as d:
                    hdir = bench_ingest.hta_trace_dir(trace, Path(d))
                    h = best(pinned([hta_python, "-c", bench_ingest.HTA_SCRIPT, str(hdir)],
                                    cores), repeat)
                row.update(hta_s=h.wall_s, hta_rss_mib=h.rss_mib)
        rows.append(row)
    return rows


def nsys(path: Path, repeat: int) -> dict[str, Any]:
    cv = best([PY, "-m", "crossview", "analyze", str(path), "--format", "json", "-o",
               os.devnull], repeat)
    out: dict[str, Any] = {"kernels": bench_nsys.count(path, bench_nsys.KERNEL),
                           "api_rows": bench_nsys.count(path, bench_nsys.RUNTIME),
                           "crossview_s": cv.wall_s, "crossview_rss_mib": cv.rss_mib,
                           "bare": {}}
    for how in ("sqlite3", "adbc", "duckdb-sqlite"):
        try:
            secs = [bare_seconds(measure([PY, "-c", BARE_NSYS, str(path), how, KERNEL_COLS,
                                          RUNTIME_COLS])) for _ in range(repeat)]
            out["bare"][how] = min(secs)
        except RuntimeError as e:
            out["bare"][how] = "not available: " + _why_not(how, str(e))
    return out


def _why_not(how: str, err: str) -> str:
    if how == "duckdb-sqlite" and "xtension" in err:
        import duckdb

        return (f"DuckDB's sqlite extension is not installed for DuckDB {duckdb.__version__} "
                "(the registry's duckdb-ext-sqlite must match that version)")
    if "ModuleNotFoundError" in err:
        return err.split("ModuleNotFoundError: ")[-1].splitlines()[0][:100]
    lines = [x for x in err.splitlines() if "Error" in x]
    return (lines[-1] if lines else err)[:140]


def fmt_ratio(x: float, target: float, higher_is_better: bool) -> str:
    ok = x >= target if higher_is_better else x <= target
    return f"{x:.2f}× ({'≥' if higher_is_better else '≤'} {target:g}: {'PASS' if ok else 'FAIL'})"


def report(res: dict[str, Any], tg: dict[str, Any]) -> str:
    lines = [f"load average at start {res['load_start']}, at end {res['load_end']}; "
             f"{os.cpu_count()} cores", "",
             "| bench | crossview | peer / limit (same run) | ratio | target |",
             "|---|---|---|---|---|"]
    k = tg["kineto"]
    for r in res.get("kineto", []):
        where = (f"Kineto {res['kineto_name']} ({res['kineto_mb']:,.0f} MB), {r['cores']} "
                 f"core{'s' * (r['cores'] > 1)}")
        cv = f"{r['crossview_s']:.2f} s, {r['crossview_rss_mib']:,.0f} MiB"
        if "hta_s" in r:
            speed = fmt_ratio(r["hta_s"] / r["crossview_s"], k["min_speedup_vs_hta"], True)
            mem = fmt_ratio(r["crossview_rss_mib"] / r["hta_rss_mib"],
                            k["max_rss_ratio_vs_hta"], False)
            lines.append(f"| {where}: vs HTA wall | {cv} | HTA {r['hta_s']:.2f} s | {speed}"
                         " | HTA wall / crossview wall |")
            lines.append(f"| {where}: vs HTA peak RSS | {r['crossview_rss_mib']:,.0f} MiB | "
                         f"HTA {r['hta_rss_mib']:,.0f} MiB | {mem} | crossview RSS / HTA RSS |")
        elif "hta" in r:
            lines.append(f"| {where}: vs HTA | {cv} | {r['hta']} | — | |")
        bare = fmt_ratio(r["crossview_s"] / r["bare_parse_s"], k["max_ratio_vs_bare_parse"],
                         False)
        lines.append(f"| {where}: vs bare parse | {cv} | DuckDB read_json "
                     f"{r['bare_parse_s']:.2f} s | {bare} | crossview wall / parse |")
    if "nsys" in res:
        n = res["nsys"]
        nums = {h: v for h, v in n["bare"].items() if isinstance(v, float)}
        fastest = min(nums, key=nums.get) if nums else None
        peers = "; ".join(f"{h} {v:.2f} s" if isinstance(v, float) else f"{h}: {v}"
                          for h, v in n["bare"].items())
        where = f"nsys {n['kernels'] / 1e6:.2f} M kernels + {n['api_rows'] / 1e6:.2f} M API rows"
        ratio = (fmt_ratio(n["crossview_s"] / nums[fastest],
                           tg["nsys"]["max_ratio_vs_bare_scan"], False) if fastest else "—")
        lines.append(f"| {where}: analyze vs bare scan | {n['crossview_s']:.2f} s, "
                     f"{n['crossview_rss_mib']:,.0f} MiB | {peers} | {ratio} | crossview / "
                     f"fastest ({fastest}) |")
        cap = tg["nsys"]["max_peak_rss_mib"]
        verdict = "PASS" if n["crossview_rss_mib"] <= cap else "FAIL"
        lines.append(f"| {where}: analyze peak RSS | {n['crossview_rss_mib']:,.0f} MiB | — | "
                     f"≤ {cap:,} MiB: {verdict} | target set for 5 M kernels |")
    limit = tg["queries"]["max_p95_warm_ms"]
    for q in res.get("queries", []):
        worst = max(q["calls"].items(), key=lambda kv: kv[1]["p95_ms"])
        lines.append(f"| MCP tools on {Path(q['input']).name}: warm p95 (worst call) | "
                     f"{worst[0]} {worst[1]['p95_ms']:.1f} ms (open {q['open_s']:.1f} s) | — | "
                     f"{'PASS' if worst[1]['p95_ms'] < limit else 'FAIL'} | < {limit:g} ms |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="small inputs (47 MB Kineto, 100 k-kernel nsys), one repeat")
    ap.add_argument("--kineto", type=Path, default=Path("/tmp/kineto_300mb.json"))
    ap.add_argument("--nsys", type=Path)
    ap.add_argument("--nsys-kernels", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip", default="", help="comma list of: kineto, hta, nsys, queries")
    ap.add_argument("--hta-python", default=bench_ingest.DEFAULT_HTA_PYTHON)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    skip = set(filter(None, a.skip.split(",")))
    if a.quick:
        trace, kernels = QUICK_KINETO, 100_000
    else:
        trace, kernels = bench_queries.ensure_kineto(a.kineto, 300), a.nsys_kernels
    sqlite = a.nsys or Path(f"/tmp/nsys_{kernels // 1000}k.sqlite")
    if "nsys" not in skip or "queries" not in skip:
        bench_queries.ensure_nsys(sqlite, kernels)
    compile_sources()
    res: dict[str, Any] = {"load_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                           "kineto_mb": trace.stat().st_size / 1e6, "kineto_name": trace.name}
    if shutil.which("taskset") is None:
        skip.add("kineto")
        print("taskset absent: the Kineto rows need it (util-linux)", file=sys.stderr)
    if "kineto" not in skip:
        res["kineto"] = kineto(trace, a.repeat, skip, a.hta_python)
    if "nsys" not in skip:
        res["nsys"] = nsys(sqlite, a.repeat)
    if "queries" not in skip:
        res["queries"] = [bench_queries.run_child(p, "file", 5 if a.quick else 20)
                          for p in (trace, sqlite)]
    res["load_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(report(res, bench_queries.targets()))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
