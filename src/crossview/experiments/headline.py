"""What `crossview diff` leads with (issue 39 items 2–4): whether the runs compare, the
machine's drift when the GPU itself changed speed, the noise, and "nothing changed" when that
is the truth. Sentences built from the Diff's typed fields (the renderer prints them as
they are); every number carries its unit."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from crossview.experiments.comparable import DIFFERS, SAME, UNKNOWN
from crossview.knowledge.loader import load_yaml
from crossview.units import duration

if TYPE_CHECKING:
    from crossview.experiments.diff_rows import Diff


def _ms(ns: float) -> str:
    return duration(ns)


def code_changes(d: Diff) -> list[str]:
    """What differs in the work itself (kernels, launch configurations, shapes, host ops and
    host time) — the code's changes, as opposed to the machine's."""
    out: list[str] = []
    for side, rows in (("A", d.only_a), ("B", d.only_b)):
        if rows:
            out.append(f"{len(rows)} kernels only in {side} "
                       f"({_ms(sum(r.a_time_ns + r.b_time_ns for r in rows))})")
    counted = [r for r in d.kernels if r.presence == "both" and r.a_count != r.b_count]
    if counted:
        out.append(f"{len(counted)} kernels launched another number of times (e.g. "
                   f"`{counted[0].key}` {counted[0].a_count:,} → {counted[0].b_count:,})")
    c = d.comparability
    for what in ("launch configurations (grid, block)", "input shapes (host ops)"):
        ch = c.check(what) if c else None
        if ch is not None and ch.status == DIFFERS:
            out.append(f"{what}: {ch.detail}")
    if d.drift is not None and d.drift.detected and d.drift.off:
        o = d.drift.off[0]
        out.append(f"{len(d.drift.off)} kernels off the GPU's factor by more than "
                   f"{load_yaml('diff.yaml')['drift']['kernel_tolerance']:.0%} (e.g. "
                   f"`{o.kernel}` {o.ratio:.2f}× vs {d.drift.factor:.2f}×)")
    if d.ops is not None:
        only = d.ops.count("only_a") + d.ops.count("only_b")
        if only:
            out.append(f"{d.ops.count('only_a')} host op names only in A, "
                       f"{d.ops.count('only_b')} only in B")
    host = _host_change(d)
    if host is not None:
        out.append(host)
    return out


def _host_change(d: Diff) -> str | None:
    """Host self time per steady step moved (Σ |Δ| over frames) by more than the noise, or
    with the noise unknown more than `same_within_share` of A's step."""
    a = d.account
    if a is None or not a.cpu_frames:
        return None
    moved = sum(abs(f.delta_ns) for f in a.cpu_frames)
    limit = a.noise_ns if a.noise_ns is not None else (
        load_yaml("diff.yaml")["comparable"]["same_within_share"] * a.a_step_ns)
    if moved <= limit:
        return None
    top = max(a.cpu_frames, key=lambda f: abs(f.delta_ns))
    return (f"host self time per step moved {_ms(moved)} over its top frames (largest "
            f"`{top.frame}` {'+' if top.delta_ns > 0 else ''}{_ms(top.delta_ns)})")


def nothing_changed(d: Diff) -> None:
    """Set comparability.nothing_changed when the same work ran in the same time."""
    c, a = d.comparability, d.account
    if c is None or not c.comparable or not c.same_work or code_changes(d):
        return
    if d.drift is not None and d.drift.detected:
        return
    share = load_yaml("diff.yaml")["comparable"]["same_within_share"]
    total = next((m.a for m in d.metrics if m.metric == "kernel time"), 0.0)
    if total and abs(d.net_change_ns) > share * total:
        return
    if a is not None:
        limit = a.noise_ns if a.noise_ns is not None else share * a.a_step_ns
        if abs(a.step_delta_ns) > limit:
            return
    c.nothing_changed = True
    c.nothing_changed_why = (
        "the same kernels with the same counts and launch configurations, the same host ops "
        "and input shapes, and the same times: kernel time "
        f"{'+' if d.net_change_ns > 0 else ''}{_ms(d.net_change_ns)}"
        + (f", step {'+' if a.step_delta_ns > 0 else ''}{_ms(a.step_delta_ns)} per step "
           + (f"(noise ± {_ms(a.noise_ns)})" if a.noise_ns is not None else
              f"(within {share:.0%}; noise unknown)") if a is not None else ""))


def _drift_lines(d: Diff) -> list[str]:
    dr = d.drift
    assert dr is not None and dr.factor is not None
    out = [f"**The GPU ran {dr.times:.2f}× {dr.direction} on the same work**: {dr.why}."]
    if dr.counters:
        files = [sorted({f for k in dr.counters for f in getattr(k, f"{s}_files")})
                 for s in ("a", "b")]
        cells = [f"{k.metric} {_num(k.a)} → {_num(k.b)} {k.unit}" for k in dr.counters]
        out.append("GPU counters given with the captures (medians A → B; A: "
                   + (", ".join(f"`{f}`" for f in files[0]) or "none") + "; B: "
                   + (", ".join(f"`{f}`" for f in files[1]) or "none") + "): "
                   + "; ".join(cells) + ".")
    else:
        out.append("No GPU counters (nvidia-smi, DCGM, NVML) were given with either capture: "
                   "the cause cannot be read from them.")
    out.append("Likely causes: " + "; ".join(_causes(d)) + ".")
    out.append(f"Fix: {dr.fix}")
    changes = code_changes(d)
    out.append("Beyond that factor: " + ("; ".join(changes) + "." if changes else
               "no code cause — the same kernels with the same counts and launch "
               "configurations, each within the factor, and the same host work. The per-cause "
               "and per-kernel rows below also give each change beyond the factor."))
    return out


def _causes(d: Diff) -> list[str]:
    """The drift's likely causes; the last (another GPU / driver) says what this pair shows."""
    assert d.drift is not None
    out = dict(d.drift.causes)
    c = d.comparability
    gpu = c.check("GPU model") if c else None
    drv = c.check("driver (CUDA version it supports)") if c else None
    if "hardware" in out and gpu is not None and drv is not None:
        seen = [f"{x.what.split(' (')[0]} {x.a}" + ("" if x.status == SAME else f" vs {x.b}")
                for x in (gpu, drv) if x.status != UNKNOWN]
        if any(x.status == DIFFERS for x in (gpu, drv)):
            out["hardware"] += f" — this pair differs: {', '.join(seen)}"
        elif seen:
            out["hardware"] += (f" — not the model or driver here: the same "
                                f"{' and '.join(seen)} on both sides")
    return list(out.values())


def lever_line(d: Diff) -> str | None:
    """The --lever check in one sentence."""
    c = d.lever
    if c is None or c.predicted_ns is None or c.error_pct is None:
        return None
    rng = (f" (range {_ms(c.low_ns)} … {_ms(c.high_ns)})"
           if c.low_ns is not None and c.high_ns is not None else "")
    inside = ("" if c.inside is None else
              "; inside the range" if c.inside else "; OUTSIDE the range")
    return (f"Prediction checked (`--lever {' '.join(c.levers)}`): predicted median step "
            f"{_ms(c.predicted_ns)}{rng} vs measured {_ms(c.measured_ns)}: error "
            f"{c.error_pct:+.1f}%{inside}.")


def gate_line(d: Diff) -> str | None:
    g = d.gate
    if g is None:
        return None
    return f"Regression gate ({g.metric}, +{g.threshold_pct:g}%): **{g.verdict}** — {g.why}."


def _num(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


def lead(d: Diff) -> list[str]:
    out: list[str] = []
    c = d.comparability
    if c is not None:
        out.append(("Comparable: " if c.comparable else "**Not comparable**: ") + c.why + ".")
    if d.drift is not None and d.drift.detected:
        out += _drift_lines(d)
    a = d.account
    if a is not None and a.noise_ns is None:
        least = load_yaml("diff.yaml")["noise"]["min_steady_steps"]
        out.append(f"Step-to-step noise: **unknown** ({a.a_steps} steady step(s) in A, "
                   f"{a.b_steps} in B; it needs ≥ {least} on each side): no per-step change "
                   "below is called a change. Capture more steps (`schedule(active=N)`) or ≥ 3 "
                   "captures per arm and use `crossview ab`.")
    elif a is not None and a.noise_ns is not None:
        out.append(f"Step-to-step noise: ± {_ms(a.noise_ns)} (the larger standard deviation "
                   f"of {a.a_steps} and {a.b_steps} steady steps).")
    if c is not None and c.nothing_changed:
        out.append(f"**Nothing changed**: {c.nothing_changed_why}.")
    elif a is not None and a.beyond_noise:
        pct = 100 * a.step_delta_ns / a.a_step_ns if a.a_step_ns else math.nan
        main = a.main_change
        out.append(f"Step time {_ms(a.a_step_ns)} → {_ms(a.b_step_ns)} per step "
                   f"({'+' if a.step_delta_ns > 0 else ''}{_ms(a.step_delta_ns)}, {pct:+.1f}%)"
                   ", beyond the noise" + (f"; main per-step change: {main.label} "
                                           f"{'+' if main.delta_ns > 0 else ''}"
                                           f"{_ms(main.delta_ns)}" if main else "") + ".")
    return out
