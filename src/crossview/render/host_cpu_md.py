"""Markdown lines for host CPU samples (views/counters/host_cpu.py) in the metrics-first block.
Formats only; the numbers and the regime come from the view."""

from __future__ import annotations

from crossview.knowledge.thresholds import Thresholds
from crossview.views.counters.host_cpu import HostCpu, HostWindow

MAX_CORES_LISTED = 8  # more cores: the busiest few and a count


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f}%"


def _span(w: HostWindow) -> str:
    return f"{w.samples} sample{'s' if w.samples != 1 else ''}" + (
        f" over {w.window_s:,.1f} s" if w.window_s else "")


def _numbers(w: HostWindow) -> str:
    split = "".join(f"; {k} {_pct(x)}" for k, x in (("user", w.user_mean_pct),
                                                      ("system", w.system_mean_pct))
                    if x is not None)
    parts = [f"all CPUs busy **{_pct(w.busy_mean_pct)}** mean (max {_pct(w.busy_max_pct)}"
             f"{split})"]
    if w.iowait_mean_pct is not None:
        parts.append(f"iowait {_pct(w.iowait_mean_pct)} mean (max {_pct(w.iowait_max_pct)})")
    b = w.busiest
    if b is not None:
        parts.append(f"busiest core cpu{b.core} **{b.mean_pct:.1f}%** mean (max "
                     f"{b.max_pct:.1f}%)")
        cores = sorted(w.cores, key=lambda c: -c.mean_pct)
        shown = ", ".join(f"cpu{c.core} {c.mean_pct:.1f}%" for c in cores[:MAX_CORES_LISTED])
        more = (f" (+{len(cores) - MAX_CORES_LISTED} more cores)"
                if len(cores) > MAX_CORES_LISTED else "")
        parts.append(f"per core (mean busy): {shown}{more}")
    if w.mem_used_peak_mib is not None:
        parts.append(f"memory used {w.mem_used_peak_mib:,.0f} MiB peak")
    return " · ".join(parts)


def _reading(w: HostWindow, lim: Thresholds) -> str:
    r = w.regime(lim.host_core_pinned_pct, lim.host_cpu_oversub_pct)
    if r == "oversubscribed":
        return (f" Reading: every CPU is busy (≥ {lim.host_cpu_oversub_pct:.0f}% on average) — "
                "the host is saturated; if the GPU waits, more threads than cores compete "
                "(DataLoader workers × intra-op threads).")
    if r == "pinned":
        b, rest = w.busiest, w.others_mean_pct()
        return (f" Reading: one core (cpu{b.core}) is pinned at ≥ "  # type: ignore[union-attr]
                f"{lim.host_core_pinned_pct:.0f}% while the others average {_pct(rest)} — a "
                "single-threaded host loop; if the GPU waits, that thread is the bottleneck.")
    if w.iowait_mean_pct is not None and w.iowait_mean_pct >= lim.host_iowait_high_pct:
        return f" Reading: iowait {_pct(w.iowait_mean_pct)} — the host waits on storage."
    if not w.cores:
        return " No per-core samples (older sampler): a pinned single core cannot be told apart."
    return ""


def lines(hosts: list[HostCpu], lim: Thresholds) -> list[str]:
    out = []
    for h in hosts:
        who = (f" on {h.host}" if h.host else "") + (f" ({h.cpus} CPUs)" if h.cpus else "")
        w = h.whole
        line = (f"- Host CPU{who} — crossview host sampler, {_span(w)} ({h.name}; whole "
                f"capture; /proc/stat shares, L3): {_numbers(w)}." + _reading(w, lim))
        s = h.scoped
        if s.samples and s.samples != w.samples:
            line += f" Within the filter's window ({_span(s)}): {_numbers(s)}." + _reading(
                s, lim)
        elif not s.samples:
            line += " No host sample falls inside the filter's window."
        out.append(line)
    return out
