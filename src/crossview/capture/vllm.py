"""`crossview capture vllm --url U -o B [--bench "vllm bench serve …"]`: a serving capture.

Order: check the engine answers (/v1/models; else one error line, nothing written) → read
/version → scrape /metrics (before, every --interval s, after) → POST /start_profile → run the
bench (or wait --duration s while load comes from elsewhere) → POST /stop_profile → collect
the trace files the server wrote into its VLLM_TORCH_PROFILER_DIR (--trace-dir) since the
start → bundle.yaml. A failure after the engine answered (a profile toggle, the bench) is
recorded under capture.problems and the bundle is still written.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from crossview.capture import bench_cmd, machine
from crossview.capture.bundle_file import BundleMeta, now_iso
from crossview.capture.engine_http import HttpFailure, get_json, post
from crossview.capture.scraper import Scraper
from crossview.capture.session import say
from crossview.errors import InputError, UsageError

METRICS_FILE = "metrics/vllm.prom"
TRACE_DIR = "traces"
_LOCAL = {"127.0.0.1", "localhost", "::1", "0.0.0.0"}


@dataclass
class VllmOptions:
    url: str
    bench: str | None = None
    interval_s: float = 5.0
    trace_dir: Path | None = None
    duration_s: float | None = None  # without --bench: how long the outside load runs
    trace_wait_s: float = 120.0  # how long to wait for the server's traces to appear
    profile: bool = True


def _engine_facts(base: str, meta: BundleMeta) -> None:
    """Model and version from the engine; raises InputError when it does not answer at all."""
    try:
        models = get_json(f"{base}/v1/models", timeout=10)
    except HttpFailure as e:
        raise InputError(base, f"engine unreachable: {e}") from None
    data = models.get("data") if isinstance(models, dict) else None
    if isinstance(data, list) and data and isinstance(data[0], dict):
        meta.set("model", data[0].get("id"))
        meta.set("max_model_len", data[0].get("max_model_len"))
    meta.set("engine", "vllm")
    try:
        ver = get_json(f"{base}/version", timeout=10)
        meta.set("engine_version", ver.get("version") if isinstance(ver, dict) else None)
    except HttpFailure as e:
        meta.note(f"engine version unknown: {e}")


def _wait_for_traces(src: Path, since: float, wait_s: float) -> list[Path]:
    """Trace files modified since the start, once their count and sizes stop changing."""
    deadline, last, stable = time.time() + wait_s, None, 0
    while True:
        files = sorted(p for p in src.rglob("*") if p.is_file() and p.stat().st_mtime >= since
                       and not p.name.endswith((".tmp", ".part")))
        sig = [(p, p.stat().st_size) for p in files]
        stable = stable + 1 if files and sig == last else 0
        if stable >= 2 or time.time() >= deadline:
            return files
        last = sig
        time.sleep(1.0)


def _run_load(opts: VllmOptions, bundle: Path, meta: BundleMeta) -> tuple[int, Path | None]:
    if opts.bench is None:
        time.sleep(opts.duration_s or 0)
        return 0, None
    uuids = meta.context.get("gpu_uuids")
    node = {"hostname": str(meta.context.get("hostname") or ""),
            "gpu_uuids": ",".join(uuids) if isinstance(uuids, list) else str(uuids or "")}
    cmd = bench_cmd.prepare(opts.bench, bundle, node)
    meta.context.setdefault("metadata", {}).update(cmd.metadata)
    for k, v in cmd.context.items():
        meta.context.setdefault(k, v)
    try:
        rc = subprocess.run(cmd.argv).returncode
    except OSError as e:
        meta.note(f"bench command failed to start: {e}")
        return 127, None
    if rc != 0:
        meta.note(f"bench command exited with status {rc}")
    if not cmd.result.exists():
        meta.note(f"bench wrote no result at {cmd.result}")
        return rc, None
    return rc, cmd.result


def capture_vllm(bundle: Path, opts: VllmOptions) -> int:
    """Run the serving capture; returns the bench's exit status (0 without a bench)."""
    if opts.bench is None and opts.duration_s is None:
        raise UsageError("give --bench \"vllm bench serve …\" or --duration S (load from "
                         "elsewhere)")
    base = opts.url.rstrip("/")
    meta = BundleMeta(command=f"crossview capture vllm --url {base}"
                      + (f" --bench {shlex.quote(opts.bench)}" if opts.bench else ""))
    _engine_facts(base, meta)  # before anything is written: unreachable → no bundle
    bundle.mkdir(parents=True, exist_ok=True)
    host = urllib.parse.urlparse(base).hostname or ""
    if host in _LOCAL:  # the engine runs here: this machine's GPUs are its GPUs
        meta.add_machine(machine.probe())
    else:
        meta.set("hostname", host)
    meta.extra["regime"] = "serving"
    trace_src = opts.trace_dir or (Path(os.environ["VLLM_TORCH_PROFILER_DIR"])
                                   if os.environ.get("VLLM_TORCH_PROFILER_DIR") else None)
    scraper = Scraper(f"{base}/metrics", bundle / METRICS_FILE, opts.interval_s)
    scraper.start()
    started = time.time() - 1.0  # mtime granularity
    profiling = False
    if opts.profile:
        try:
            post(f"{base}/start_profile")
            profiling = True
        except HttpFailure as e:
            meta.note(f"profiler not started: {e} (is VLLM_TORCH_PROFILER_DIR set on the "
                      "server?)")
    rc, result = 1, None
    try:
        rc, result = _run_load(opts, bundle, meta)
    finally:
        stopped = False
        if profiling:
            try:
                post(f"{base}/stop_profile")
                stopped = True
            except HttpFailure as e:
                meta.note(f"profiler stop failed: {e}; traces may be missing or partial")
        scraper.stop()
        for p in scraper.problems():
            meta.note(p)
        _finish(bundle, meta, scraper, result, trace_src, started,
                opts.trace_wait_s if stopped else min(opts.trace_wait_s, 5.0), profiling)
    return rc


def _finish(bundle: Path, meta: BundleMeta, scraper: Scraper, result: Path | None,
            trace_src: Path | None, started: float, wait_s: float, profiling: bool) -> None:
    if scraper.scrapes:
        meta.artifacts[METRICS_FILE] = {"phase": "all", "note": f"{scraper.scrapes} scrapes: "
                                        f"before, every {scraper.interval_s:g} s, after"}
    if result is not None:
        rel = _into_bundle(result, bundle, bench_cmd.RESULT_DIR)
        meta.artifacts[rel] = {"phase": "all", "note": "load generator result (--save-result)"}
    if profiling and trace_src is None:
        meta.note("trace folder unknown: pass --trace-dir (the server's "
                  "VLLM_TORCH_PROFILER_DIR); traces not collected")
    elif profiling and trace_src is not None:
        if not trace_src.is_dir():
            meta.note(f"trace folder {trace_src} does not exist; traces not collected")
        else:
            files = _wait_for_traces(trace_src, started, wait_s)
            if not files:
                meta.note(f"no trace file appeared in {trace_src} after /stop_profile")
            for f in files:
                rel = _into_bundle(f, bundle, TRACE_DIR)
                meta.artifacts[rel] = {"phase": "all", "note": "written by the server between "
                                       "/start_profile and /stop_profile"}
    meta.ended = now_iso()
    meta.write(bundle)
    if meta.problems:
        say(f"bundle written to {bundle} with {len(meta.problems)} problem(s) recorded in "
            "bundle.yaml capture.problems")


def _into_bundle(path: Path, bundle: Path, sub: str) -> str:
    try:
        return str(path.resolve().relative_to(bundle.resolve()))
    except ValueError:
        dest = bundle / sub / path.name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
        return str(dest.relative_to(bundle))
