"""Markdown for workload metrics — counters, serving-engine metrics, benchmark trials — shown
first in the recap (conventions §1 step 2). Formats only; the numbers come from the views."""

from __future__ import annotations

from pathlib import Path

from crossview.core.bench_arm import BenchArm
from crossview.core.device_counters import DeviceCounters, util
from crossview.core.finding import Finding
from crossview.render import host_cpu_md
from crossview.sol.workload import DeviceSol
from crossview.units import duration
from crossview.views.views import Views
from crossview.views.workload.histogram import HistStat
from crossview.views.workload.serving import ServingSummary

_NAMES = {"gpu_util": "util", "sm_active": "SM active", "sm_occupancy": "SM occupancy",
          "tensor_active": "tensor active", "dram_active": "DRAM active",
          "gr_engine_active": "graphics engine active", "mem_copy_util": "memory-controller busy",
          "power": "power", "sm_clock": "SM clock", "mem_clock": "memory clock",
          "gpu_temp": "GPU temp", "pcie_tx": "PCIe TX", "pcie_rx": "PCIe RX",
          "nvlink_tx": "NVLink TX", "nvlink_rx": "NVLink RX"}
_ACTIVITY = ("sm_active", "tensor_active", "dram_active")


def qty(x: float | None, unit: str) -> str:
    """A number with its unit, scaled for reading."""
    if x is None:
        return "n/a"
    if unit == "%":
        return f"{x:.1f}%"
    if unit == "B/s":
        for div, u in ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s")):
            if abs(x) >= div:
                return f"{x / div:,.2f} {u}"
        return f"{x:,.0f} B/s"
    if unit == "s":
        return f"{x * 1e3:,.1f} ms" if abs(x) < 1 else f"{x:,.2f} s"
    if unit == "ms":
        return f"{x:,.1f} ms"
    if unit == "C":
        return f"{x:.0f} °C"
    return f"{x:,.1f} {unit}".rstrip() if x != int(x) else f"{x:,.0f} {unit}".rstrip()


def _device_line(d: DeviceCounters) -> str:
    parts: list[str] = []
    u = util(d)
    if u is not None:
        parts.append(f"util **{u:.1f}%**")
    for m in ("sm_active", "sm_occupancy", "tensor_active", "dram_active", "mem_copy_util"):
        s = d.get(m)
        if s is not None:
            parts.append(f"{_NAMES[m]} {qty(s.mean, s.unit)}")
    used, total = d.get("mem_used"), d.get("mem_total")
    if used is not None:
        parts.append(f"memory used {qty(used.max, used.unit)} peak"
                     + (f" of {qty(total.max, total.unit)}" if total else ""))
    elif total is not None:
        parts.append(f"memory total {qty(total.max, total.unit)}")
    pw, lim = d.get("power"), d.get("power_limit")
    if pw is not None:
        parts.append(f"power {qty(pw.mean, 'W')}" + (f" (limit {qty(lim.max, 'W')})"
                                                    if lim else ""))
    elif lim is not None:
        parts.append(f"power limit {qty(lim.max, 'W')}")
    for m in ("sm_clock", "gpu_temp", "pcie_tx", "pcie_rx", "nvlink_tx", "nvlink_rx"):
        s = d.get(m)
        if s is not None:
            parts.append(f"{_NAMES[m]} {qty(s.mean, s.unit)}")
    span = f"{d.samples} sample{'s' if d.samples != 1 else ''}" + (
        f" over {duration(d.window_s * 1e9)}" if d.window_s else "")
    line = (f"- {d.label} — {'/'.join(d.sources)}, {span} ({Path(d.artifact).name}; means "
            f"unless noted): " + " · ".join(parts) + ".")
    if u is not None and not any(d.get(m) for m in _ACTIVITY):
        line += (" Utilization only: it counts time any kernel runs, not how well — SM/tensor/"
                 "DRAM activity (DCGM profiling fields, `dcgmi dmon -e 1002,1004,1005`) or ncu "
                 "would tell efficient from inefficient kernels.")
    return line


def _hist(h: HistStat | None) -> str | None:
    if h is None:
        return None
    def q(x: object) -> str:
        return x.text(lambda v: qty(v, h.unit)) if x is not None else "n/a"  # type: ignore[attr-defined]
    return (f"p50 {q(h.p50)} / p90 {q(h.p90)} / p99 {q(h.p99)} "
            f"(mean {qty(h.mean, h.unit)}, {h.count:,.0f} obs.; quantiles as bucket bounds)")


def _serving_line(s: ServingSummary) -> str:
    parts: list[str] = []
    for key, label in (("requests_running", "running"), ("requests_waiting", "waiting"),
                       ("requests_inflight", "in flight")):
        g = s.gauges.get(key)
        if g is not None:
            parts.append(f"{label} {g.mean:,.1f} mean / {g.max:,.0f} max")
    kv = s.gauges.get("kv_cache_usage")
    if kv is not None:
        parts.append(f"KV cache {kv.mean:.1f}% mean / {kv.max:.1f}% max")
    hit, q = s.prefix_hit_rate_pct, s.counter("prefix_cache_queries")
    if hit is not None or q is not None:
        parts.append(f"prefix-cache hit rate {qty(hit, '%')}"
                     + (f" of {q:,.0f} queried tokens" if q is not None else ""))
    for key, label in (("preemptions", "preemptions"), ("requests_finished", "finished")):
        c = s.counters.get(key)
        if c is not None:
            parts.append(f"{label} {c.value:,.0f}")
    for key, label in (("prompt_tokens", "prompt"), ("generation_tokens", "generation")):
        c = s.counters.get(key)
        if c is not None and c.rate_per_s is not None:
            parts.append(f"{label} {c.rate_per_s:,.1f} tokens/s")
    g = s.gauges.get("gen_throughput")
    if g is not None:
        parts.append(f"generation {g.mean:,.1f} tokens/s (engine gauge)")
    for key, label in (("ttft", "TTFT"), ("itl", "ITL"), ("tpot", "TPOT"),
                       ("e2e_latency", "e2e"), ("queue_time", "queue time")):
        text = _hist(s.hist(key))
        if text:
            parts.append(f"{label} {text}")
    empty = [k.upper() if k != "e2e_latency" else "e2e" for k in ("ttft", "itl", "e2e_latency")
             if k in s.histograms and s.hist(k) is None]
    if empty:
        parts.append(f"{'/'.join(empty)} histograms empty (no request observed)")
    model = f" `{s.model}`" if s.model else ""
    over = (f"{s.scrapes} scrapes, window {s.window_s:,.0f} s" if s.scrapes >= 2 and s.window_s
            else f"{s.scrapes} scrapes, untimed" if s.scrapes >= 2
            else "1 scrape, cumulative since the engine started")
    return (f"- {s.engine}{model} — /metrics ({Path(s.artifact).name}, {over}): "
            + "; ".join(parts) + ".")


def _bench_line(b: BenchArm) -> str:
    c = b.context
    ctx = ", ".join(f"{k} {c.get(k, 'unknown')}" for k in ("model", "concurrency",
                                                             "request_rate", "isl", "osl"))
    meas = c.get("isl_measured_mean")
    if meas not in (None, "unknown"):
        ctx += f" (measured mean prompt {meas} tokens, output {c.get('osl_measured_mean')})"
    parts: list[str] = []
    for key, label in (("output_throughput", "output"), ("total_token_throughput", "total"),
                       ("request_throughput", "requests")):
        m = b.metrics.get(key)
        if m is not None:
            parts.append(f"{label} {qty(m.median, m.unit)}")
    for lat in ("ttft", "tpot", "itl", "e2el"):
        med, p99 = b.metrics.get(f"median_{lat}_ms"), b.metrics.get(f"p99_{lat}_ms")
        if med is not None:
            parts.append(f"{lat.upper()} median {qty(med.median, 'ms')}"
                         + (f" / p99 {qty(p99.median, 'ms')}" if p99 else ""))
    failed = b.metrics.get("failed")
    if failed is not None and failed.max > 0:
        parts.append(f"failed requests {failed.max:,.0f} (max over trials)")
    if b.requests is not None:
        r = b.requests
        parts.append(f"per-request detail: {r.requests:,} requests, {r.itl_count:,} token gaps, "
                     f"ITL max {qty(r.itl_max_ms, 'ms')}")
    differs = f" Context differs across trials: {', '.join(b.context_differs)}." \
        if b.context_differs else ""
    return (f"- Benchmark arm `{b.arm}` — {c.get('bench', 'unknown')} ({Path(b.artifact).name}, "
            f"{b.trials} trial{'s' if b.trials != 1 else ''}, medians): {ctx}; "
            + " · ".join(parts) + "." + differs)


def block(v: Views) -> list[str]:
    """The workload-metrics block; empty when the bundle holds none."""
    gm = v.gpu_metrics
    if not gm.present:
        return []
    what = [w for w, have in (("GPU counters", gm.devices), ("serving metrics", gm.serving),
                              ("benchmark results", gm.bench),
                              ("host CPU samples", gm.host_cpu)) if have] or ["metrics"]
    # host samples alone are not GPU metrics: a CPU-only bundle says "GPU metrics none" below
    head = "GPU metrics" if gm.devices or gm.serving or gm.bench else "Host metrics"
    lines = [f"**{head}** ({', '.join(what)}; workload level, rigor L3 — read first)"]
    lines += [_device_line(d) for d in gm.devices]
    lines += [_serving_line(s) for s in gm.serving]
    lines += [_bench_line(b) for b in gm.bench]
    lines += host_cpu_md.lines(gm.host_cpu, v.limits)
    for u in gm.unmapped:
        lines.append(f"- {u}: no GPU counter or serving metric crossview knows "
                     "(knowledge/*_metrics.yaml) — stored, not interpreted.")
    lines += sol_lines(v.workload_sol)
    for note in gm.notes:
        lines.append(f"- Note: {note}.")
    for d in gm.devices:  # counters of another GPU or time: said, never compared
        if d.apart and v.has_trace:
            lines.append(f"- Not cross-checked with the trace: {d.label} "
                         f"({Path(d.artifact).name}) — {d.apart}.")
    if v.has_trace and v.metrics.kernel_count and gm.devices:
        utils = [f"{d.label} {util(d):.1f}%" for d in gm.devices
                 if util(d) is not None and not d.apart]
        if utils:
            lines.append(f"- Cross-check with the trace (same filter): counters' GPU "
                         f"utilization {', '.join(utils)} vs the trace's kernel busy "
                         f"{v.metrics.kernel_busy_pct:.1f}% (utilization counts any kernel "
                         "running per sample period, so it reads at or above the busy union; "
                         "windows may differ).")
    lines.append("")
    return lines


def metrics_only_key_findings(v: Views, findings: list[Finding]) -> str:
    """Key findings when the bundle has metrics but no trace."""
    head = next((f for f in findings if f.severity in ("red", "yellow")), None)
    base = ("A metrics-only bundle (no profiler trace): no GPU call tree or CPU view — the "
            "numbers below are workload-level (L3). ")
    if head is not None:
        return base + (f"The dominant pattern is **{head.pattern}** ({head.title}). Capture a "
                       "trace of the same window to name the frames behind it.")
    loaded = [s for s in v.workload_sol if s.regime == "gpu-bound"]
    if loaded:
        return base + " ".join(_gpu_bound(v, s) for s in loaded)
    if all(f.pattern == "capture-window" for f in findings) and findings:
        return base + ("Nothing to judge: the recorded GPUs/engines were idle or the capture "
                       "is incomplete (see Notes) — re-capture under load.")
    return base + "No bottleneck pattern in these metrics."


def _gpu_bound(v: Views, s: DeviceSol) -> str:
    """Which side limits a device busy past the GPU-bound cut, and what would tell more."""
    d = next((d for d in v.gpu_metrics.devices
              if d.label == s.device and d.artifact == s.artifact), None)
    busy = util(d) if d is not None else None
    pw, lim = (d.get("power"), d.get("power_limit")) if d is not None else (None, None)
    power = (f" at {qty(pw.mean, 'W')} of its {qty(lim.max, 'W')} power limit"
             if pw is not None and lim is not None else "")
    said = [x for x in s.verdicts if x.startswith(("memory-bound", "compute-bound", "neither"))]
    how = (f"The counters say: {said[0]}." if said else
           "Utilization cannot say which ceiling the kernels hit: record DCGM's profiling "
           "fields over the same load (`dcgmi dmon -e 1002,1003,1004,1005`: SM, DRAM and "
           "tensor activity) or profile the top kernels with ncu.")
    if busy is None:
        return ""
    procs = d.processes if d is not None else []
    if len(procs) > 1 or any(p.synthetic for p in procs):
        names = "; ".join(f"`{p.name}` {qty(p.mem_mib, 'MiB')}"
                          + (" (a synthetic stress load)" if p.synthetic else "")
                          for p in procs)
        return (f"{s.device} is busy {busy:.1f}% of the time{power} "
                f"({Path(s.artifact).name}) — but {len(procs)} process"
                f"{'es hold' if len(procs) > 1 else ' holds'} memory on it in this window "
                f"({names}): utilization and power count every process's kernels, so they "
                "describe these processes together, not one workload. Record the workload "
                "alone (or trace its process: `nsys profile --trace=cuda` on it) before "
                "judging it.")
    return (f"{s.device} is **GPU-bound** by utilization: a kernel ran "
            f"{busy:.1f}% of the time{power} ({Path(s.artifact).name}), so the host keeps it "
            f"fed and the kernels set the pace. {how}")


def sol_lines(sols: list[DeviceSol]) -> list[str]:
    """Workload speed-of-light per device: % of each ceiling, evidence, verdicts."""
    out: list[str] = []
    for s in sols:
        parts = [f"{r.what.replace('_', ' ')} {qty(r.achieved, r.unit)} = **{r.pct:.1f}%** of "
                 f"{qty(r.ceiling, r.unit)} ({r.evidence})" if r.ceiling else
                 f"{r.what.replace('_', ' ')} {r.pct:.1f}% ({r.evidence})" for r in s.rows]
        text = " · ".join(parts + s.verdicts + s.notes)
        if text:
            out.append(f"- Speed-of-light {s.device} ({Path(s.artifact).name}): {text}.")
    return out
