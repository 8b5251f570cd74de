"""The steps and time-account panel (scope/step_detect.py, views/device/account.py).
Format only."""

from __future__ import annotations

from crossview.render.html.esc import code, esc, section, table
from crossview.units import duration
from crossview.views.views import Views


def account_panel(v: Views) -> str:
    s, acc = v.steps, v.account
    summ = s.summary()
    parts: list[str] = []
    if summ is not None:
        parts.append(f"<p>{len(s.steps)} steps from {esc(s.source)}; wall time over "
                     f"{summ.n} {'(all: none steady)' if s.steady_fallback else 'steady'} "
                     f"steps: median {esc(duration(summ.median_ns))}, p90 "
                     f"{esc(duration(summ.p90_ns))}, min {esc(duration(summ.min_ns))}, max "
                     f"{esc(duration(summ.max_ns))}.</p>")
    parts.append(table(
        ["step", "wall", "GPU busy (of the step)", "kept out because"],
        [[code(x.name), esc(duration(x.wall_ns)),
          esc(f"{duration(x.gpu_busy_ns)} ({x.gpu_busy_ns / x.wall_ns:.0%})"
              if x.wall_ns else "—"),
          esc("; ".join(x.reasons) or "steady")] for x in s.steps], num={1, 2}))
    if acc is not None:
        parts.append(table(
            ["cause", "per step", "% of step", "top frames", "evidence"],
            [[esc(c.label + (" (start-up / boundary: not a steady-state lever)"
                          if c.startup else "")), esc(duration(c.ns)),
              esc(f"{100 * c.share_of_step:.1f}%"),
              "; ".join(f"{code(f.frame)} {esc(duration(f.ns))}"
                        for f in c.top_frames), esc(c.evidence)]
             for c in acc.steady_state], num={1, 2}))
    return section("account", "Steps and time account", "".join(parts),
                   "Per steady step, every nanosecond in one row: busy by kernel family, idle "
                   "by what the launching host thread was doing (knowledge/account.yaml).")
