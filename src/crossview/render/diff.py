"""Format a `Diff` (experiments/diff.py) as Markdown or JSON. Computes nothing."""

from __future__ import annotations

import msgspec

from crossview.core import inert
from crossview.experiments.account_diff import AccountDiff
from crossview.experiments.diff import OPS_SHOWN, Change, Diff, Row
from crossview.render import diff_lead
from crossview.render.md_text import code
from crossview.schema import versioned
from crossview.units import duration

_MAX_KERNEL_ROWS = 25  # the Markdown table; JSON keeps every row


def _signed(ns: float) -> str:
    return ("+" if ns > 0 else "") + duration(ns) if ns else "0 ns"


def _mean(ns: float | None) -> str:
    return duration(ns) if ns is not None else "—"


def _share(x: float | None) -> str:
    return f"{100 * x:+.1f}%" if x is not None else "—"


def _value(unit: str, x: float) -> str:
    if unit == "ns":
        return duration(x)
    if unit == "%":
        return f"{x:.1f}%"
    return f"{int(x):,}"


def _delta(c: Change) -> str:
    if c.unit == "ns":
        return _signed(c.delta)
    if c.unit == "%":
        return f"{c.delta:+.1f} pp"
    return f"{int(c.delta):+,}"


def _cell(text: str) -> str:
    text = inert.name(text).replace("|", "\\|")  # a name is data: one line
    return text if len(text) <= 70 else text[:67] + "…"


def _row(r: Row, with_family: bool, drift: bool) -> str:
    cells = [f"`{_cell(r.key)}`"] + ([r.family] if with_family else []) + [
        duration(r.a_time_ns), f"{r.a_count:,}", _mean(r.a_mean_ns),
        duration(r.b_time_ns), f"{r.b_count:,}", _mean(r.b_mean_ns),
        _signed(r.delta_ns), _share(r.share_of_change),
    ] + ([_signed(r.beyond_drift_ns or 0)] if drift else [])
    if r.presence != "both":
        cells[0] += " (only in " + r.presence[-1].upper() + ")"
    return "| " + " | ".join(cells) + " |"


def _table(rows: list[Row], with_family: bool, drift: bool = False) -> list[str]:
    head = "| kernel | family " if with_family else "| family "
    cols = "| A time | A count | A mean | B time | B count | B mean | Δ time (B − A) | share of Δ |"
    cols += " Δ beyond the GPU's factor |" if drift else ""
    sep = "|---" * (9 + with_family + drift) + "|"
    return [head + cols, sep] + [_row(r, with_family, drift) for r in rows]


def _account(a: AccountDiff) -> list[str]:
    """Per steady step, through the time account (experiments/account_diff.py)."""
    noise = (f"step-to-step noise ± {duration(a.noise_ns)} (the larger standard deviation "
             "of the two sides' steady steps)" + (
                 "." if a.beyond_noise else
                 " — the change is within the noise, so no share of change is given.")
             if a.noise_ns is not None else
             "step-to-step noise unknown (too few steady steps on a side): no share of "
             "change is given and no change is called one.")
    out = ["## Per step, through the time account", "",
           f"Step time (mean of the steady steps, which the causes below add up to): A "
           f"{duration(a.a_step_ns)} "
           f"({a.a_steps} steps) → B {duration(a.b_step_ns)} ({a.b_steps} steps): "
           f"{_signed(a.step_delta_ns)} per step; {noise}", ""]
    main = a.main_change
    if main is not None and a.noise_known:
        out += [f"Main per-step change: **{main.label}** {_signed(main.delta_ns)} per step.",
                ""]
    elif main is not None:
        out += [f"Largest per-step difference: {main.label} {_signed(main.delta_ns)} per step "
                "(not called a change: the noise is unknown).", ""]
    share = a.beyond_noise
    drift = a.drift_factor is not None
    out += ["| cause | kind | A per step | B per step | Δ per step |"
            + (" share of change |" if share else "")
            + (f" Δ beyond the GPU's {a.drift_factor:.2f}× |" if drift else ""),
            "|---|---|---|---|---|" + ("---|" if share else "") + ("---|" if drift else "")]
    for c in a.causes:
        if not c.a_ns and not c.b_ns:
            continue
        beyond = ("—" if c.beyond_drift_ns is None else _signed(c.beyond_drift_ns))
        out.append(f"| {_cell(c.label)} | {'idle' if c.idle else 'busy'} | "
                   f"{duration(c.a_ns)} | {duration(c.b_ns)} | {_signed(c.delta_ns)} |"
                   + (f" {_share(c.share_of_change)} |" if share else "")
                   + (f" {beyond} |" if drift else ""))
    if drift:
        out += ["", "Busy causes run on the GPU, whose every kernel took the factor longer: "
                "their change beyond it is B − A × factor. Idle causes are compared as they "
                "are."]
    if a.cpu_frames:
        out += ["", "CPU side: host self time by frame per steady step (top by |Δ|), next to "
                "the GPU-side causes above.", "",
                "| frame | A per step | B per step | Δ per step |", "|---|---|---|---|"]
        out += [f"| `{_cell(f.frame)}` | {duration(f.a_ns)} | {duration(f.b_ns)} | "
                f"{_signed(f.delta_ns)} |" for f in a.cpu_frames]
    return out + [""]


def render(d: Diff) -> str:
    out = ["# crossview diff", "",
           "A: " + ", ".join(code(p) for p in d.a_paths),
           "B: " + ", ".join(code(p) for p in d.b_paths), "",
           "Evidence: each side's `gpu_ops` kernel rows and its whole-capture metrics "
           "(busy = union of kernel intervals, idle = its gaps by HTA's rule). Δ = B − A; "
           "share of Δ = a row's Δ over the net change of kernel time "
           f"({_signed(d.net_change_ns)})"
           + (f": the net change is under {d.noise_share:.0%} of A's kernel time, within "
              "run-to-run noise, so no row is shown as a share of it." if d.net_in_noise
              else "."), ""]
    out += diff_lead.summary(d.headline)
    if d.lever is not None:
        out += diff_lead.lever(d.lever)
    if d.gate is not None:
        out += diff_lead.gate(d.gate)
    if d.comparability is not None:
        out += diff_lead.comparability(d.comparability)
    if d.account is not None:
        out += _account(d.account)
    if d.ops is not None:
        out += diff_lead.ops(d.ops, OPS_SHOWN)
    out += ["## Whole capture", "", "| metric | A | B | Δ (B − A) |", "|---|---|---|---|"]
    out += [f"| {c.metric} | {_value(c.unit, c.a)} | {_value(c.unit, c.b)} | {_delta(c)} |"
            for c in d.metrics]
    drift = d.drift is not None and d.drift.detected
    out += ["", "## Kernel families", ""] + _table(d.families, False, drift)
    shown = d.kernels[:_MAX_KERNEL_ROWS]
    out += ["", f"## Kernels (top {len(shown)} of {len(d.kernels)} by |Δ|)", "",
            f"Matching: {d.matching}.", ""] + _table(shown, True, drift)
    for s in d.swaps:
        out += ["", f"Kernel swaps in `{s.family}`: its kernels moved {duration(s.gross_ns)} "
                f"in both directions ({s.only_a} only in A, {s.only_b} only in B) while the "
                f"family changed {_signed(s.net_ns)}: the library chose other kernels for the "
                "same work (cuDNN / cuBLAS algorithm selection, `torch.backends.cudnn.benchmark`"
                " autotuning), not necessarily the change under test. Read the family's net; "
                "to compare kernel by kernel, fix the choice in both runs "
                "(`torch.backends.cudnn.benchmark = False`, "
                "`torch.backends.cudnn.deterministic = True`)."]
    for side, rows in (("A", d.only_a), ("B", d.only_b)):
        total = sum(r.a_time_ns + r.b_time_ns for r in rows)
        out += ["", f"Only in {side}: {len(rows)} kernels, {duration(total)}"
                + (" — " + ", ".join(f"`{_cell(r.key)}`" for r in rows[:10]) if rows else "")
                + (" …" if len(rows) > 10 else "")]
    return "\n".join(out) + "\n"


def render_json(d: Diff) -> str:
    doc = msgspec.json.encode(versioned(d.to_dict()))
    return msgspec.json.format(doc, indent=2).decode() + "\n"
