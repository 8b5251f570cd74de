"""Cold-start trials (issue 17): a trial whose first request was a cold outlier (its mean TTFT
≥ cold_mean_over_median × its median TTFT) or an arm's first trial far off the others in the
bad direction is flagged `cold`; every other trial is `warm`. Flagged trials stay in the
comparison unless the user asks to leave them out (`crossview ab --exclude-cold`).
With per-request data (`--save-detailed`) the first request's TTFT against the trial's median
TTFT is checked too. Thresholds: ab_gates.yaml. Pure: trials in, flags out."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from crossview.knowledge.loader import load_yaml

Trial = dict[str, float]  # metric → value of one trial


def flags(trials: list[Trial], direction: Callable[[str], str | None],
          first_ttft: list[tuple[float, float] | None] | None = None) -> list[str | None]:
    """One reason per trial (None = warm), in the arm's trial order. `first_ttft`: per trial,
    (first request's TTFT, the trial's median TTFT) in seconds when per-request data exists."""
    cfg = load_yaml("ab_gates.yaml")
    k_req, k_first = float(cfg["cold_mean_over_median"]), float(cfg["cold_first_trial_factor"])
    out: list[str | None] = []
    for i, t in enumerate(trials):
        why = None
        mean, med = t.get("mean_ttft_ms"), t.get("median_ttft_ms")
        if mean is not None and med and mean >= k_req * med:
            why = (f"cold first request(s): mean TTFT {mean:.4g} ms ≥ {k_req:g} × median "
                   f"{med:.4g} ms")
        ft = first_ttft[i] if first_ttft and i < len(first_ttft) else None
        if why is None and ft and ft[1] and ft[0] >= k_req * ft[1]:
            why = (f"cold first request: its TTFT {1e3 * ft[0]:.4g} ms ≥ {k_req:g} × the "
                   f"trial's median {1e3 * ft[1]:.4g} ms (per-request data)")
        if why is None and i == 0 and len(trials) >= 3:
            for m, v in sorted(t.items()):
                rest = [o[m] for o in trials[1:] if m in o]
                d = direction(m)
                if len(rest) < 2 or d is None:
                    continue
                ref = statistics.median(rest)
                if ref > 0 and ((d == "lower" and v >= k_first * ref)
                                or (d == "higher" and v * k_first <= ref)):
                    why = (f"cold first trial: {m} {v:.4g} vs the other trials' median "
                           f"{ref:.4g} (beyond {k_first:g}×)")
                    break
        out.append(why)
    return out
