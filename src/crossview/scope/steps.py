"""`--step N|A:B`: the steps selected, as the trace-clock window the filter applies."""

from __future__ import annotations

from collections.abc import Sequence

from crossview.errors import UsageError
from crossview.scope import step_detect as steps
from crossview.store.store import Store


def selected(store: Store, ids: Sequence[int], spec: str
             ) -> tuple[steps.StepSet, list[steps.Step]]:
    """Steps found over the whole capture of these artifacts (so numbering and flags do not
    depend on the filter), and those `spec` selects. One-line UsageError when none matches."""
    found = steps.detect(store, whole=ids)
    try:
        return found, steps.select(found, spec)
    except ValueError as e:
        raise UsageError(str(e)) from None


def window(store: Store, ids: Sequence[int], spec: str, window_ns: tuple[int, int] | None
           ) -> tuple[tuple[int, int], str]:
    """The window covering the selected steps (intersected with `--window` when given) and a
    note naming them."""
    found, got = selected(store, ids, spec)
    lo, hi = min(s.start_ns for s in got), max(s.end_ns for s in got)
    if window_ns is not None:
        lo, hi = max(lo, window_ns[0]), min(hi, window_ns[1])
        if hi <= lo:
            raise UsageError(f"--step {spec}: the steps lie outside --window")
    names = ", ".join(s.name for s in got[:4]) + (", …" if len(got) > 4 else "")
    return (lo, hi), (f"--step {spec}: {len(got)} step(s) from {found.source} ({names}), "
                      f"window {lo}–{hi} ns")
