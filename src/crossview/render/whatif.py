"""`crossview whatif` as text and JSON (formatting only: the numbers come from replay/)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from crossview.core import inert
from crossview.render import rank_whatif
from crossview.replay.whatif import WhatIf

if TYPE_CHECKING:
    from crossview.replay.rank_whatif import RankWhatIf

PATH_LINES = 4  # causes shown under "now bounded by"


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.2f} ms"


def render(w: WhatIf | RankWhatIf) -> str:
    if not isinstance(w, WhatIf):  # the ranks of one job (render/rank_whatif.py)
        return rank_whatif.render(w)
    m = w.medians()
    n = len(w.baseline)
    lines = [f"whatif {inert.name(w.capture)} — levers: {', '.join(w.levers) or 'none (baseline)'}"]
    lines += [f"  {c}" for c in w.changes]
    lines += [f"rejected {inert.name(p)}: {inert.name('; '.join(why))}" for p, why in w.rejected]
    lines.append(f"self-check: the unchanged replay reproduces the {n} measured steps "
                 f"({w.steps_from}) within {w.selfcheck_max_error:.2%} "
                 f"(limit {w.selfcheck_limit:.0%}); {w.nodes_moved:,} of {w.nodes:,} graph "
                 "nodes off their measured start")
    if not w.selfcheck_ok:
        lines.append("prediction withheld: the self-check failed, so the graph does not "
                     "model this capture well enough to trust a predicted number")
        return "\n".join(lines + [f"note: {x}" for x in w.notes]) + "\n"
    meas, pred = m["measured_step_ns"], m["predicted_step_ns"]
    delta = pred - meas
    sign = "+" if delta >= 0 else "−"
    pct = f", {sign}{abs(delta) / meas:.1%}" if meas else ""
    k = int(m["steps"])
    steady = f"{k} steady steps" if k == n else (
        f"{k} steady steps of {n}; not steady: " + "; ".join(
            f"{name} ({why})" for name, why in w.unsteady.items()))
    lines.append(f"step time (median of {steady}): measured {_ms(meas)} → predicted "
                 f"{_ms(pred)} ({sign}{_ms(abs(delta))}{pct})")
    rng = w.range_ns()
    if rng is not None and w.unknowns:
        lines.append(f"range of the prediction: {_ms(rng[0])} … {_ms(rng[1])}, the levers "
                     "replayed at the bounds of what they cannot know:")
        lines += [f"  {u}" for u in w.unknowns]
    bb, pb = m["baseline_gpu_busy_ns"], m["predicted_gpu_busy_ns"]
    head = "GPU busy per step (median; kernels, copies and memsets)"
    lines.append(f"{head}: {_ms(bb)} ({bb / meas:.1%} of the step) → "
                 f"{_ms(pb)} ({pb / pred:.1%} of the predicted step)" if meas and pred else
                 f"{head}: {_ms(bb)} → {_ms(pb)}")
    path = w.bound_by()
    total = sum(v for _, v in path) or 1.0
    mid = w.median_step()
    lines.append(f"now bounded by (critical path of {mid.name if mid else '?'}, the median "
                 f"predicted step, {_ms(total)}):")
    lines += [f"  {k}: {_ms(v)} ({v / total:.1%})" for k, v in path[:PATH_LINES]]
    lines += [f"note: {x}" for x in w.notes]
    return "\n".join(lines) + "\n"


def render_json(w: WhatIf | RankWhatIf) -> str:
    return json.dumps(w.to_dict(), indent=2) + "\n"
