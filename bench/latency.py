"""One latency table (issue 38): every capture of ../shared/data, first run and cached run,
`--help`, traceinsight 0.6.1 on the same Kineto files, the DuckDB parse floor — in one run,
with the machine's load printed — then the large-input rows of run_all.py (a 150 MB Kineto
trace against traceinsight and the bare parse, the 1 M / 5 M-kernel nsys exports).

    python bench/latency.py [--repeat 3] [--skip large,traceinsight,nsys5m] [--json OUT]

- **first**: `crossview --cache-dir EMPTY analyze CAPTURE --format json -o /dev/null`, a fresh
  empty cache folder per run (the parse, the analysis, and the cache entry written beside
  them); **cached**: the same command again on that folder (the store loaded, not parsed).
  Whole CLI, spawn to reap; best wall of `--repeat` runs, with that run's CPU (user + sys).
- **--help**: `crossview --help` and `crossview analyze --help` (stdout a pipe), beside
  `python -c pass` (the interpreter's own start).
- **traceinsight 0.6.1** (HTA's successor; pandas 3): in its own venv under bench/out/, made
  here on first use (`pip install traceinsight==0.6.1`; never in the project's .venv). Its
  load (`TraceAnalysis`), temporal breakdown and idle-time breakdown of the same file.
- **parse floor**: DuckDB's `read_json` of the same event bytes into the reader's columns
  (the reader's staging done first, untimed: run_all.py's BARE_KINETO).
- **large**: run_all.py's Kineto rows (2 cores and pinned to one) on a 150 MB trace made by
  scale_trace.py in /tmp, against traceinsight instead of HTA 0.5.0, and its nsys rows on the
  1 M-kernel export (analyze vs the bare scans) and the 5 M one (peak RSS). Those run with
  `--no-cache`: they measure a first parse, as before the cache.
- **second looks**: `report`, `whatif`, `diff` and `kernels` with their captures' stores
  cached (by an `analyze` first), then again: the kept answer (decision 0914).

Targets: bench/targets.yaml (`latency`, plus the issue-20 rows). Generated inputs go to /tmp.
Exit 0 when every row ran (PASS / FAIL is in the table).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

import bench_ingest  # noqa: E402
import bench_queries  # noqa: E402
import run_all  # noqa: E402

PY = sys.executable
DATA = bench_queries.DATA
EXAMPLE = REPO / "examples" / "cpu_tiny_decode.pt.trace.json.gz"
TI_VERSION = "0.6.1"
TI_VENV = BENCH / "out" / "traceinsight-venv"

TI_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis  # the traceinsight distribution installs `hta`
t1 = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
a.get_temporal_breakdown(visualize=False)
a.get_idle_time_breakdown(ranks=a.t.get_ranks(), visualize=False)  # default: rank 0 only
t3 = time.perf_counter()
print("TI " + json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "analysis_s": t3 - t2}))
"""


MCP_FIRST = r"""
import json, sys, time
from pathlib import Path
from crossview.cache.settings import from_env
from crossview.mcp.cache import AnalysisCache
from crossview.mcp.safety import Roots
from crossview.mcp.tools_views import ViewTools
p = Path(sys.argv[1])
tools = ViewTools(AnalysisCache(Roots([p.parent]), persistent=from_env()))
t = time.perf_counter()
out = json.loads(tools.gpu_metrics([str(p)]))
print("MCP", time.perf_counter() - t, out["store"]["state"])
"""


# run_all.BARE_KINETO with the reader's fallback: a trace whose fast split cuts an event
# (Qwen's) is staged again exactly, untimed, as kineto/reader.py does; the parse alone timed
BARE_EXACT = r"""
import os, sys, tempfile, time
from pathlib import Path
import duckdb
from crossview.sources.kineto import categories as C, staging
threads = int(sys.argv[2])
con = duckdb.connect()
con.execute(f"SET threads={threads}")
SQL = ("CREATE OR REPLACE TABLE ev AS SELECT * FROM read_json($f, format='array', "
       f"columns={C.COLUMNS}, maximum_object_size=16777216)")
staged = staging.stage(Path(sys.argv[1]), tempfile.mkdtemp(prefix="crossview-bare-"), threads,
                       exact=False, stream=False)
staged.finish()
try:
    t = time.perf_counter()
    con.execute(SQL, {"f": staged.files})
except duckdb.Error:
    staged = staging.stage(Path(sys.argv[1]), tempfile.mkdtemp(prefix="crossview-bare-"), 1,
                           exact=True, stream=False)
    staged.finish()
    t = time.perf_counter()
    con.execute(SQL, {"f": staged.files})
dt = time.perf_counter() - t
n = con.execute("SELECT count(*) FROM ev").fetchall()[0][0]
for f in staged.files: os.unlink(f)
print("BARE", dt, n)
"""


def captures() -> list[Path]:
    """The shared captures as same_answers.py runs them (a folder is one capture), and the
    shipped example."""
    found = sorted(p for d in ("kineto", "nsys", "ncu", "metrics") if (DATA / d).is_dir()
                   for p in (DATA / d).iterdir())
    return [*found, EXAMPLE] if EXAMPLE.exists() else found


def is_kineto(p: Path) -> bool:
    return p.parent.name == "kineto" or p == EXAMPLE


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall s, user + sys CPU s) of one child, spawn to reap; raises on a failed run."""
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err,
                                env=run_all.child_env(env))
        _, status, use = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status):
            err.seek(0)
            raise RuntimeError(f"{' '.join(cmd[2:5])}: {err.read()[-400:].strip()}")
    return wall, use.ru_utime + use.ru_stime


def best(cmd: list[str], repeat: int, env: dict[str, str] | None = None,
         before: Any = None) -> tuple[float, float]:
    """Best wall of `repeat` runs (`before()` runs untimed before each one)."""
    runs = []
    for _ in range(repeat):
        if before is not None:
            before()
        runs.append(timed(cmd, env))
    return min(runs)


def analyze_cmd(cache: str, capture: Path) -> list[str]:
    return [PY, "-m", "crossview", "-q", "--cache-dir", cache, "analyze", str(capture),
            "--format", "json", "-o", os.devnull]


def one_capture(cap: Path, repeat: int, ti: str | None) -> dict[str, Any]:
    row: dict[str, Any] = {"capture": str(cap.relative_to(REPO.parent)) if cap.is_relative_to(
        REPO.parent) else str(cap), "bytes": _size(cap)}
    env = {"CROSSVIEW_NO_CACHE": ""}
    with tempfile.TemporaryDirectory(prefix="crossview-latency-") as root:
        folder = Path(root) / "cache"

        def empty() -> None:
            subprocess.run(["rm", "-rf", str(folder)], check=False)

        try:
            row["first_s"], row["first_cpu_s"] = best(analyze_cmd(str(folder), cap), repeat,
                                                      env, empty)
            row["cached_s"], row["cached_cpu_s"] = best(analyze_cmd(str(folder), cap),
                                                        repeat, env)
            row["cache_entries"] = len(list(folder.rglob("*.crossview.duckdb")))
            if cap.is_file():  # an agent's first call on a capture the cache holds
                try:
                    row["mcp_first_s"] = min(_mcp_first(cap, folder) for _ in range(repeat))
                except (RuntimeError, StopIteration) as e:
                    row["mcp_first_s"] = "failed: " + (str(e).splitlines() or [""])[-1][:100]
        except RuntimeError as e:  # a capture crossview rejects (nsys-rep without nsys)
            row["error"] = str(e).splitlines()[-1][:160]
    if is_kineto(cap) and cap.is_file():
        try:
            row["bare_parse_s"] = min(run_all.bare_seconds(run_all.measure(
                [PY, "-c", BARE_EXACT, str(cap), "2"])) for _ in range(repeat))
        except RuntimeError as e:
            row["bare_parse_s"] = "failed: " + str(e).splitlines()[-1][:100]
    if ti is not None and is_kineto(cap):
        row["traceinsight_s"] = traceinsight(ti, cap, repeat)
    return row


def _mcp_first(cap: Path, folder: Path) -> float:
    """The MCP server's first tool call (gpu_metrics) on `cap`, its store in the cache: the
    server already running (imports untimed), as an agent's session sees it."""
    run = run_all.measure([PY, "-c", MCP_FIRST, str(cap)],
                          {"CROSSVIEW_CACHE_DIR": str(folder), "CROSSVIEW_NO_CACHE": ""})
    line = next(x for x in run.out.splitlines() if x.startswith("MCP "))
    return float(line.split()[1])


def _size(p: Path) -> int:
    return sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() \
        else p.stat().st_size


def traceinsight(python: str, cap: Path, repeat: int, cores: int = 2) -> float | str:
    """Best wall of traceinsight's load + temporal + idle breakdown (one rank per file: a
    folder of ranks is passed as is)."""
    walls = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as d:
            where = cap if cap.is_dir() else bench_ingest.hta_trace_dir(cap, Path(d))
            try:
                walls.append(timed(run_all.pinned([python, "-c", TI_SCRIPT, str(where)],
                                                  cores))[0])
            except RuntimeError as e:
                return "failed: " + str(e).splitlines()[-1][:120]
    return min(walls)


def ensure_traceinsight() -> str:
    """traceinsight's own venv under bench/out (made once; nothing in the project's .venv)."""
    py = TI_VENV / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(TI_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"traceinsight=={TI_VERSION}"],
                       check=True)
    return str(py)


# the other commands that keep their answer (decision 0914): each on a capture it takes
KINETO = DATA / "kineto"
SECOND_LOOKS = {
    "report": ["report", str(KINETO / "hta_v100_ddp_training.json.gz"), "-o", os.devnull],
    "whatif": ["whatif", str(KINETO / "hta_v100_ddp_training.json.gz"), "--lever",
               "cuda-graphs"],
    "diff": ["diff", str(KINETO / "kineto_v100_resnet50_workers4.pt.trace.json.gz"),
             str(KINETO / "kineto_v100_resnet50_workers0.pt.trace.json.gz")],
    "kernels": ["kernels", str(DATA / "ncu" / "esmm_a10g_sgemm_variants.ncu-rep")],
}


def second_looks(repeat: int) -> dict[str, dict[str, float]]:
    """Per command: its first run with the capture's store already cached (an `analyze` of
    the same files before it, untimed), then the same command again (its kept answer): best
    wall of `repeat` each, a fresh cache folder per command."""
    out: dict[str, dict[str, float]] = {}
    env = {"CROSSVIEW_NO_CACHE": ""}
    for name, args in SECOND_LOOKS.items():
        if not all(Path(a).exists() for a in args if a.startswith(str(DATA))):
            continue
        with tempfile.TemporaryDirectory(prefix="crossview-second-") as root:
            cache = str(Path(root) / "cache")
            cmd = [PY, "-m", "crossview", "-q", "--cache-dir", cache, *args]
            # the stores stay, the kept answers go
            stores_only = partial(subprocess.run, ["rm", "-rf", str(Path(cache) / "answers")],
                                  check=False)

            for a in (x for x in args[1:] if x.startswith(str(DATA))):
                timed([PY, "-m", "crossview", "-q", "--cache-dir", cache, "analyze", a,
                       "-o", os.devnull], env)
            first = best(cmd, repeat, env, stores_only)[0]
            out[name] = {"store_cached_s": first, "second_look_s": best(cmd, repeat, env)[0]}
    return out


def help_rows(repeat: int) -> dict[str, float]:
    return {"python -c pass": best([PY, "-c", "pass"], repeat)[0],
            "crossview --help": best([PY, "-m", "crossview", "--help"], repeat)[0],
            "crossview analyze --help": best([PY, "-m", "crossview", "analyze", "--help"],
                                             repeat)[0]}


def large(repeat: int, ti: str | None, skip: set[str], mb: float = 150,
          kernels: tuple[int, int] = (1_000_000, 5_000_000)) -> dict[str, Any]:
    """run_all.py's rows on a 150 MB Kineto trace (traceinsight as the peer) and the nsys
    exports, first parse (no cache)."""
    env = {"CROSSVIEW_NO_CACHE": "1"}
    trace = bench_queries.ensure_kineto(Path(f"/tmp/kineto_{mb:g}mb.json"), mb)
    out: dict[str, Any] = {"kineto_mb": trace.stat().st_size / 1e6, "kineto": []}
    for cores in (2, 1):
        cenv = {**env, "CROSSVIEW_THREADS": str(cores)}
        cv = run_all.best(run_all.pinned([PY, "-m", "crossview", "analyze", str(trace),
                                          "--format", "json", "-o", os.devnull], cores),
                          repeat, cenv)
        bare = min(run_all.bare_seconds(run_all.measure(run_all.pinned(
            [PY, "-c", run_all.BARE_KINETO, str(trace), str(cores)], cores)))
            for _ in range(repeat))
        row: dict[str, Any] = {"cores": cores, "crossview_s": cv.wall_s,
                               "crossview_rss_mib": cv.rss_mib, "bare_parse_s": bare}
        if ti is not None:
            with tempfile.TemporaryDirectory() as d:
                where = bench_ingest.hta_trace_dir(trace, Path(d))
                try:
                    t = run_all.best(run_all.pinned([ti, "-c", TI_SCRIPT, str(where)], cores),
                                     1)
                    row.update(traceinsight_s=t.wall_s, traceinsight_rss_mib=t.rss_mib)
                except RuntimeError as e:
                    row["traceinsight"] = "failed: " + str(e).splitlines()[-1][:120]
        out["kineto"].append(row)
    os.environ.update(env)  # run_all.nsys's children inherit it
    for n, key in zip(kernels, ("nsys_1m", "nsys_5m"), strict=True):
        if key == "nsys_5m" and "nsys5m" in skip:
            continue
        path = bench_queries.ensure_nsys(Path(f"/tmp/nsys_{n // 1000}k.sqlite"), n)
        out[key] = run_all.nsys(path, 1 if key == "nsys_5m" else repeat)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip", default="", help="comma list of: large, traceinsight, nsys5m")
    ap.add_argument("--only", default="", help="comma list of capture names (default: all)")
    ap.add_argument("--large-mb", type=float, default=150, help="the large Kineto trace's MB")
    ap.add_argument("--nsys-kernels", default="1000000,5000000",
                    help="the two nsys exports' kernels (the second: peak RSS)")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    skip = set(filter(None, a.skip.split(",")))
    ti = None if "traceinsight" in skip else ensure_traceinsight()
    run_all.compile_sources()
    res: dict[str, Any] = {"load_start": _load(), "cores": os.cpu_count()}
    res["help"] = help_rows(a.repeat)
    res["second_looks"] = second_looks(a.repeat)
    only = set(filter(None, a.only.split(",")))
    res["captures"] = [one_capture(c, a.repeat, ti) for c in captures()
                       if not only or c.name in only]
    if "large" not in skip:
        k1, k2 = (int(x) for x in a.nsys_kernels.split(","))
        try:
            res["large"] = large(1, ti, skip, a.large_mb, (k1, k2))
        except RuntimeError as e:  # a failed large run: the capture table still prints
            res["large_failed"] = str(e).splitlines()[-1][:300]
    res["load_end"] = _load()
    print(report(res, bench_queries.targets()))
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _num(x: object) -> str:
    return f"{x:.2f}" if isinstance(x, float) else (str(x) if x else "—")


def _mark(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def report(res: dict[str, Any], tg: dict[str, Any]) -> str:
    t = tg["latency"]
    lines = [f"load average at start {res['load_start']}, at end {res['load_end']}; "
             f"{res['cores']} cores", ""]
    h = res["help"]
    lines += ["| start-up | wall s | target |", "|---|---:|---|"]
    for k, v in h.items():
        target = f"≤ {t['help_s']} s: {_mark(v <= t['help_s'])}" if "help" in k else "floor"
        lines.append(f"| `{k}` | {v:.3f} | {target} |")
    lines += ["", "| capture | size | first s (CPU) | cached s (CPU) | MCP first call s "
              "(cached) | traceinsight s | vs traceinsight | parse floor s | targets |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in res["captures"]:
        name, size = r["capture"], f"{r['bytes'] / 1e6:,.2f} MB"
        if "error" in r:
            lines.append(f"| {name} | {size} | rejected: {r['error']} | | | | | | |")
            continue
        ti = r.get("traceinsight_s")
        ratio = ti / r["first_s"] if isinstance(ti, float) else None
        verdicts = []
        if r["bytes"] <= t["small_capture_bytes"] and is_kineto(Path(name)):
            first_max = t["example_first_s"] if name.endswith(EXAMPLE.name) else t["first_s"]
            verdicts.append(f"first ≤ {first_max}: {_mark(r['first_s'] <= first_max)}")
            if ratio is not None:
                verdicts.append(f"≥ {t['min_speedup_vs_traceinsight']}× TI: "
                                f"{_mark(ratio >= t['min_speedup_vs_traceinsight'])}")
        verdicts.append(f"cached ≤ {t['cached_s']}: {_mark(r['cached_s'] <= t['cached_s'])}")
        mcp = r.get("mcp_first_s")
        if isinstance(mcp, float):
            verdicts.append(f"MCP ≤ {t['mcp_first_cached_s']}: "
                            f"{_mark(mcp <= t['mcp_first_cached_s'])}")
        cells = [name, size, f"{r['first_s']:.2f} ({r['first_cpu_s']:.2f})",
                 f"{r['cached_s']:.2f} ({r['cached_cpu_s']:.2f})", _num(mcp), _num(ti),
                 f"{ratio:.2f}×" if ratio else "—", _num(r.get("bare_parse_s")),
                 "; ".join(verdicts)]
        lines.append("| " + " | ".join(cells) + " |")
    if res.get("second_looks"):
        lines += ["", "| command | from the cached store s | second look s | target |",
                  "|---|---:|---:|---|"]
        for name, r in res["second_looks"].items():
            lines.append(f"| `{name}` | {r['store_cached_s']:.2f} | "
                         f"{r['second_look_s']:.2f} | ≤ {t['cached_s']}: "
                         f"{_mark(r['second_look_s'] <= t['cached_s'])} |")
    if "large" in res:
        lines += ["", _large(res["large"], tg)]
    if "large_failed" in res:
        lines += ["", f"large rows failed: {res['large_failed']}"]
    return "\n".join(lines)


def _large(big: dict[str, Any], tg: dict[str, Any]) -> str:
    k = tg["kineto"]
    lines = ["| bench | crossview | peer / limit (same run) | ratio | target |",
             "|---|---|---|---|---|"]
    for r in big["kineto"]:
        where = f"Kineto {big['kineto_mb']:,.0f} MB, {r['cores']} core{'s' * (r['cores'] > 1)}"
        cv = f"{r['crossview_s']:.2f} s, {r['crossview_rss_mib']:,.0f} MiB"
        if "traceinsight" in r:
            lines.append(f"| {where}: vs traceinsight | {cv} | {r['traceinsight']} | — | |")
        if "traceinsight_s" in r:
            lines.append(f"| {where}: vs traceinsight wall | {cv} | traceinsight "
                         f"{r['traceinsight_s']:.2f} s | " + run_all.fmt_ratio(
                             r["traceinsight_s"] / r["crossview_s"], k["min_speedup_vs_hta"],
                             True) + " | peer wall / crossview wall |")
            lines.append(f"| {where}: peak RSS vs traceinsight | {r['crossview_rss_mib']:,.0f}"
                         f" MiB | {r['traceinsight_rss_mib']:,.0f} MiB | " + run_all.fmt_ratio(
                             r["crossview_rss_mib"] / r["traceinsight_rss_mib"],
                             k["max_rss_ratio_vs_hta"], False) + " | crossview / peer |")
        lines.append(f"| {where}: vs bare parse | {cv} | DuckDB read_json "
                     f"{r['bare_parse_s']:.2f} s | " + run_all.fmt_ratio(
                         r["crossview_s"] / r["bare_parse_s"], tg["latency"][
                             "max_ratio_vs_bare_parse_150mb"], False) + " | |")
    table = "\n".join(lines)
    for key in ("nsys_1m", "nsys_5m"):
        if key in big:
            nsys_rows = run_all.report({"load_start": "", "load_end": "", "nsys": big[key]},
                                       tg).splitlines()[4:6]
            table += "\n" + "\n".join(nsys_rows)
    return table


if __name__ == "__main__":
    sys.exit(main())
