"""The predicted-vs-measured panel (issue 16): findings whose lever was replayed, with the
measured median step, the predicted one and the self-check. Numbers come from
replay/findings.py (Finding.details["replay"]); this module only formats."""

from __future__ import annotations

from crossview.core.finding import Finding
from crossview.render.html.esc import esc, section, table
from crossview.units import duration


def rows(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if "replay" in f.details]


def whatif_panel(findings: list[Finding]) -> str:
    out = []
    for f in rows(findings):
        rp = f.details["replay"]
        assert isinstance(rp, dict)
        meas, pred = float(rp["measured_step_ns"]), float(rp["predicted_step_ns"])
        out.append([esc(f.pattern), f"<code>--lever {esc(str(rp['lever']))}</code>",
                    esc(duration(meas)), esc(duration(pred)),
                    esc(f"{(pred - meas) / meas:+.1%}" if meas else "n/a"),
                    esc(f"{float(rp['selfcheck_max_step_error']):.2%}")])
    return section("whatif", "What-if (replay)", table(
        ["finding", "lever", "measured median step", "predicted median step", "change",
         "self-check error"], out, num={2, 3, 4, 5}),
        "The capture's dependency graph replayed with the lever applied (<code>crossview "
        "whatif</code>, docs/whatif.md). The self-check is the unchanged replay against the "
        "measured steps; predictions stay DRAFT until an A/B.")
