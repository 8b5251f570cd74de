"""Ingest benchmark: crossview vs Holistic Trace Analysis (HTA) on one Kineto trace.

    python bench/bench_ingest.py TRACE [--hta-python PATH] [--crossview-cmd CMD]
                                       [--repeat N] [--tools crossview,hta] [--json OUT]

Each tool runs in its own child process, started from this (small) parent:

1. crossview: ``<project venv python> -m crossview analyze TRACE --format json -o /dev/null``
   (override with ``--crossview-cmd``, a shell-style string where ``{trace}`` is
   replaced by the trace path).
2. HTA: the HTA venv's python runs a small script that builds
   ``TraceAnalysis(trace_dir=DIR)`` on a temp dir holding a symlink to TRACE.
   HTA maps every ``*.json``/``*.gz`` file in the dir to a rank, which it reads
   from ``"rank": N`` in the file's ``distributedInfo``. It parses with its
   default backend (``ParserBackend.JSON``: ``json.loads`` then a pandas
   DataFrame). Then it runs ``get_temporal_breakdown(visualize=False)``, so
   both sides ingest and analyze.

Per child it measures the wall time (``time.perf_counter`` from spawn to reap)
and the peak RSS (``ru_maxrss`` of the rusage that ``os.wait4`` returns, KiB on
Linux). On Linux a child's ``ru_maxrss`` also counts the parent's RSS at
fork/exec time, so the parent never loads the trace itself. The event count
comes from a separate helper process. Throughput is file size / wall time,
with 1 MB = 10**6 bytes. Targets: crossview throughput >= 10x HTA's, and
crossview peak RSS <= 0.5x HTA's.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MB = 1_000_000
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_HTA_PYTHON = "/tmp/hta-venv/bin/python"
RESULT_MARK = "BENCH_RESULT "
TARGET_THROUGHPUT_RATIO = 10.0
TARGET_RSS_RATIO = 0.5

HTA_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
import importlib.metadata as md
t1 = time.perf_counter()
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
breakdown = analyzer.get_temporal_breakdown(visualize=False)
t3 = time.perf_counter()
rows = sum(len(df) for df in analyzer.t.traces.values())
print("BENCH_RESULT " + json.dumps({
    "import_s": t1 - t0, "load_s": t2 - t1, "analysis_s": t3 - t2,
    "ranks": analyzer.t.get_ranks(), "df_rows": rows,
    "hta_version": md.version("HolisticTraceAnalysis"),
    "pandas_version": md.version("pandas"),
    "temporal_breakdown": json.loads(breakdown.to_json(orient="records")),
}), flush=True)
"""

COUNT_SCRIPT = r"""
import gzip, json, sys
p = sys.argv[1]
with (gzip.open(p, "rb") if p.endswith(".gz") else open(p, "rb")) as fh:
    print(len(json.load(fh)["traceEvents"]))
"""


@dataclass
class Run:
    tool: str
    cmd: list[str]
    label: str = ""
    rc: int | None = None
    wall_s: float = float("nan")
    peak_rss_kib: int = 0
    timed_out: bool = False
    error: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.timed_out


def run_measured(tool: str, cmd: list[str], timeout: float | None) -> Run:
    """Spawn ``cmd``; reap it with ``os.wait4`` to get its own rusage."""
    run = Run(tool=tool, cmd=cmd)
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
    ):
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err, start_new_session=True)
        except OSError as exc:
            run.error = f"cannot start: {exc}"
            return run
        timer = None
        if timeout:

            def _kill() -> None:
                run.timed_out = True
                os.killpg(proc.pid, signal.SIGKILL)

            timer = threading.Timer(timeout, _kill)
            timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        run.wall_s = time.perf_counter() - start
        if timer:
            timer.cancel()
        run.rc = os.waitstatus_to_exitcode(status)
        proc.returncode = run.rc  # reaped by wait4; keep Popen from waiting again
        run.peak_rss_kib = usage.ru_maxrss  # KiB on Linux
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    for line in stdout.splitlines():
        if line.startswith(RESULT_MARK):
            run.detail = json.loads(line[len(RESULT_MARK) :])
    if not run.ok:
        tail = "\n".join((stderr or stdout).strip().splitlines()[-15:])
        why = "timed out" if run.timed_out else f"exit code {run.rc}"
        run.error = f"{why}\n{tail}"
    return run


def count_events(trace: Path, python: str) -> int | None:
    """Count traceEvents in a helper process, so this parent stays small."""
    res = subprocess.run(
        [python, "-c", COUNT_SCRIPT, str(trace)], capture_output=True, text=True, check=False
    )
    try:
        return int(res.stdout.strip())
    except ValueError:
        return None


def warm_page_cache(trace: Path) -> None:
    """Read the file once so both tools start from the same (warm) page cache."""
    with trace.open("rb") as fh:
        while fh.read(16 * 1024 * 1024):
            pass


def hta_trace_dir(trace: Path, tmp: Path) -> Path:
    name = trace.name
    if not (name.endswith(".json") or name.endswith(".gz")):
        name += ".json"
    (tmp / name).symlink_to(trace.resolve())
    return tmp


def summarize(runs: list[Run]) -> Run | None:
    """Best (minimum) wall time; peak RSS is the max over the runs."""
    if not runs:
        return None
    good = [r for r in runs if r.ok]
    if not good:
        return runs[-1]
    best = min(good, key=lambda r: r.wall_s)
    best.peak_rss_kib = max(r.peak_rss_kib for r in good)
    if len(good) > 1:
        best.detail["wall_s_all"] = [round(r.wall_s, 3) for r in good]
        best.detail["wall_s_median"] = statistics.median(r.wall_s for r in good)
    return best


def fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None or value != value else format(value, spec)


def report(
    trace: Path, size: int, events: int | None, res: dict[str, Run | None]
) -> dict[str, Any]:
    mb = size / MB
    print(f"\ntrace: {trace}")
    print(f"file size: {mb:.1f} MB ({size} bytes), events: {events if events else 'n/a'}\n")
    header = f"{'tool':<10} {'status':<8} {'wall s':>9} {'MB/s':>9} {'peak RSS MiB':>13}"
    print(header)
    print("-" * len(header))
    table: dict[str, Any] = {"trace": str(trace), "bytes": size, "mb": mb, "events": events}
    for tool, run in res.items():
        if run is None:
            continue
        ok = run.ok
        thr = mb / run.wall_s if ok else None
        rss = run.peak_rss_kib / 1024 if ok else None
        status = "ok" if ok else "FAILED"
        print(
            f"{tool:<10} {status:<8} {fmt(run.wall_s if ok else None, '.2f'):>9} "
            f"{fmt(thr, '.2f'):>9} {fmt(rss, '.1f'):>13}"
        )
        table[tool] = {**asdict(run), "ok": ok, "mb_per_s": thr, "peak_rss_mib": rss}
    print()
    for tool, run in res.items():
        if run is not None and not run.ok:
            indented = run.error.replace("\n", "\n  ")
            print(f"{tool} FAILED: {run.label or shlex.join(run.cmd)}\n  {indented}\n")
    hta, cv = res.get("hta"), res.get("crossview")
    if hta and hta.ok and hta.detail:
        d = hta.detail
        print(
            f"HTA phases: import {d['import_s']:.2f} s, TraceAnalysis() load "
            f"{d['load_s']:.2f} s, get_temporal_breakdown {d['analysis_s']:.2f} s "
            f"(hta {d.get('hta_version')}, pandas {d.get('pandas_version')}, "
            f"{d.get('df_rows')} rows kept)"
        )
    if hta and cv and hta.ok and cv.ok:
        thr_ratio = hta.wall_s / cv.wall_s  # same file: MB/s ratio == inverse wall ratio
        rss_ratio = cv.peak_rss_kib / hta.peak_rss_kib
        thr_pass = thr_ratio >= TARGET_THROUGHPUT_RATIO
        rss_pass = rss_ratio <= TARGET_RSS_RATIO
        print(
            f"crossview/HTA throughput: {thr_ratio:.2f}x  "
            f"(target >= {TARGET_THROUGHPUT_RATIO:g}x)  {'PASS' if thr_pass else 'FAIL'}"
        )
        print(
            f"crossview/HTA peak RSS:   {rss_ratio:.3f}x  "
            f"(target <= {TARGET_RSS_RATIO:g}x)  {'PASS' if rss_pass else 'FAIL'}"
        )
        verdict = "PASS" if thr_pass and rss_pass else "FAIL"
        table["ratios"] = {"throughput": thr_ratio, "peak_rss": rss_ratio}
    elif cv is not None and hta is not None:
        verdict = "FAIL (no comparison: a tool failed)"
    else:
        verdict = "n/a (only one tool run)"
    print(f"overall: {verdict}")
    table["verdict"] = verdict
    return table


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="crossview vs HTA ingest benchmark")
    p.add_argument("trace", type=Path, help="Kineto trace (.json or .json.gz)")
    p.add_argument("--hta-python", default=DEFAULT_HTA_PYTHON, help="python of the HTA venv")
    venv_py = REPO_ROOT / ".venv" / "bin" / "python"
    default_cv = (
        f"{shlex.quote(str(venv_py if venv_py.exists() else Path(sys.executable)))} "
        "-m crossview analyze {trace} --format json -o /dev/null"
    )
    p.add_argument(
        "--crossview-cmd",
        default=default_cv,
        help="crossview command line, {trace} is replaced (default: %(default)s)",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs per tool (best wall kept)")
    p.add_argument("--tools", default="crossview,hta", help="comma list: crossview,hta")
    p.add_argument("--timeout", type=float, default=None, help="per-run timeout, seconds")
    p.add_argument("--events", type=int, default=None, help="event count (skips counting)")
    p.add_argument("--json", type=Path, default=None, help="also write results as JSON here")
    args = p.parse_args(argv)

    trace: Path = args.trace.resolve()
    if not trace.is_file():
        p.error(f"{trace}: no such file")
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = set(tools) - {"crossview", "hta"}
    if unknown:
        p.error(f"unknown tools: {sorted(unknown)}")

    size = trace.stat().st_size
    events = args.events
    if events is None:
        print("counting events (helper process) ...", flush=True)
        py = args.hta_python if Path(args.hta_python).exists() else sys.executable
        events = count_events(trace, py)
    warm_page_cache(trace)

    runs: dict[str, list[Run]] = {t: [] for t in tools}
    with tempfile.TemporaryDirectory(prefix="bench_hta_") as tmp:
        hta_dir = hta_trace_dir(trace, Path(tmp))
        cmds = {
            "crossview": [
                a.replace("{trace}", str(trace)) for a in shlex.split(args.crossview_cmd)
            ],
            "hta": [args.hta_python, "-c", HTA_SCRIPT, str(hta_dir)],
        }
        labels = {
            "crossview": shlex.join(cmds["crossview"]),
            "hta": f"{args.hta_python} -c <HTA_SCRIPT> {hta_dir}",
        }
        for i in range(args.repeat):
            for tool in tools:
                print(f"[{i + 1}/{args.repeat}] {tool}: {labels[tool]}", flush=True)
                run = run_measured(tool, cmds[tool], args.timeout)
                run.label = labels[tool]
                state = "ok" if run.ok else "FAILED"
                print(
                    f"    {state}: {run.wall_s:.2f} s, peak RSS {run.peak_rss_kib / 1024:.1f} MiB",
                    flush=True,
                )
                runs[tool].append(run)

    res = {tool: summarize(rs) for tool, rs in runs.items()}
    table = report(trace, size, events, res)
    if args.json:
        args.json.write_text(json.dumps(table, indent=2, default=str))
    return 0 if all(r is not None and r.ok for r in res.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
