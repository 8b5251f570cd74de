"""Sample host CPU utilization from /proc/stat (and memory from /proc/meminfo) to JSON lines —
the format sources/counters/host_jsonl.py reads (spec: docs/input-formats.md).

    python -m crossview.capture.host_sampler -o host.jsonl --interval-ms 500 --duration-s 60

Line 1: {"format": "crossview-host", "version": 1, "hostname": …, "interval_ms": …, "cpus": N}
Then one object per tick (shares of all CPUs' time since the previous tick, %):
{"ts_ns": …, "cpu_util_pct": …, "cpu_user_pct": …, "cpu_system_pct": …, "cpu_iowait_pct": …,
 "mem_used_mib": …, "core_util_pct": [busy % of cpu0, cpu1, …]}
core_util_pct (per-core busy share, from the `cpuN` lines) lets a reader tell one pinned core
(a single-threaded host loop) from all cores busy (oversubscription).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

FORMAT = "crossview-host"
PROC_STAT = Path("/proc/stat")
PROC_MEMINFO = Path("/proc/meminfo")


def cpu_times(text: str) -> list[int]:
    """The aggregate `cpu` line: user nice system idle iowait irq softirq steal (jiffies)."""
    for line in text.splitlines():
        if line.startswith("cpu "):
            return [int(x) for x in line.split()[1:9]]
    raise ValueError("no aggregate `cpu` line in /proc/stat")


def core_times(text: str) -> list[list[int]]:
    """The per-core `cpuN` lines (same 8 fields), in the kernel's order."""
    return [[int(x) for x in line.split()[1:9]] for line in text.splitlines()
            if line.startswith("cpu") and line[3:4].isdigit()]


def core_busy(prev: list[list[int]], cur: list[list[int]]) -> list[float] | None:
    """Busy % per core between two readings; None when the core set changed (hotplug)."""
    if len(prev) != len(cur) or not cur:
        return None
    out = []
    for p, c in zip(prev, cur, strict=True):
        d = [max(0, b - a) for a, b in zip(p, c, strict=False)]
        total = sum(d)
        out.append(round(100.0 * (total - d[3] - d[4]) / total, 1) if total else 0.0)
    return out


def shares(prev: list[int], cur: list[int]) -> dict[str, float] | None:
    """Utilization shares between two readings; None when no time passed."""
    d = [max(0, c - p) for p, c in zip(prev, cur, strict=False)]
    total = sum(d)
    if total == 0:
        return None
    user, nice, system, idle, iowait = d[0], d[1], d[2], d[3], d[4]
    return {"cpu_util_pct": round(100.0 * (total - idle - iowait) / total, 2),
            "cpu_user_pct": round(100.0 * (user + nice) / total, 2),
            "cpu_system_pct": round(100.0 * system / total, 2),
            "cpu_iowait_pct": round(100.0 * iowait / total, 2)}


def mem_used_mib(text: str) -> float | None:
    kv = {}
    for line in text.splitlines():
        k, _, rest = line.partition(":")
        parts = rest.split()
        if parts:
            kv[k] = int(parts[0])  # kB
    if "MemTotal" in kv and "MemAvailable" in kv:
        return round((kv["MemTotal"] - kv["MemAvailable"]) / 1024, 1)
    return None


def run(out: IO[str], interval_ms: int, stop: threading.Event,
        clock: Callable[[], int] = time.time_ns, stat: Path = PROC_STAT,
        meminfo: Path = PROC_MEMINFO) -> int:
    """Write the header, then one line per tick until `stop` is set; returns ticks written."""
    out.write(json.dumps({"format": FORMAT, "version": 1, "hostname": socket.gethostname(),
                          "interval_ms": interval_ms, "cpus": os.cpu_count()}) + "\n")
    text = stat.read_text()
    prev, prev_cores = cpu_times(text), core_times(text)
    ticks = 0
    stopped = False
    while not stopped:
        stopped = stop.wait(interval_ms / 1000)  # a last reading when stopped: short captures
        text = stat.read_text()
        cur, cores = cpu_times(text), core_times(text)
        row = shares(prev, cur)
        per_core = core_busy(prev_cores, cores)
        prev, prev_cores = cur, cores
        if row is None:
            continue
        with contextlib.suppress(OSError):  # no /proc/meminfo: CPU shares only
            row["mem_used_mib"] = mem_used_mib(meminfo.read_text())  # type: ignore[assignment]
        line: dict[str, object] = {"ts_ns": clock(), **row}
        if per_core is not None:
            line["core_util_pct"] = per_core
        out.write(json.dumps(line) + "\n")
        out.flush()
        ticks += 1
    return ticks


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Sample host CPU utilization to crossview JSONL.")
    p.add_argument("-o", "--output", required=True, help="file to write (JSON lines)")
    p.add_argument("--interval-ms", type=int, default=500)
    p.add_argument("--duration-s", type=float, default=None, help="stop after (default: Ctrl-C)")
    a = p.parse_args(argv)
    stop = threading.Event()
    if a.duration_s is not None:
        threading.Timer(a.duration_s, stop.set).start()
    with open(a.output, "w", encoding="utf-8") as f, contextlib.suppress(KeyboardInterrupt):
        run(f, a.interval_ms, stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
