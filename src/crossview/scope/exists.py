"""What a filter names must exist in the capture, as `--pid` and `--device` already require:
a `--window` that no event of the capture starts in, or an `--annotation` no range carries,
is one error line naming what the capture holds and the option that reaches it (issue 40).

`--annotation ProfilerStep#N` also reaches a step recorded as an operator event (the older
Kineto format has no user_annotation for it): it then selects that step as `--step N` does.
"""

from __future__ import annotations

from collections.abc import Sequence

from crossview.errors import UsageError
from crossview.knowledge.steps_rules import rules as step_rules
from crossview.scope import step_detect as steps
from crossview.store.store import Store
from crossview.units import duration

SHOWN = 8  # names listed in an error line


def _ids(ids: Sequence[int]) -> str:
    return ",".join(str(int(i)) for i in ids) or "NULL"


def check_window(store: Store, ids: Sequence[int], window: tuple[int, int]) -> None:
    """Refuse a window in which no GPU op, host event or timed sample of these artifacts
    starts (the filter's own rule: an event is in when its start is). Inputs without a
    timeline (metrics only) are not judged here: their samples are scoped on the wall clock
    (scope/counters.py)."""
    a, b = (int(x) for x in window)
    i = _ids(ids)
    events = (f"SELECT start_ns AS s, start_ns + dur_ns AS e FROM gpu_ops WHERE artifact_id"
              f" IN ({i}) UNION ALL SELECT start_ns, start_ns + dur_ns FROM host_ops WHERE"
              f" artifact_id IN ({i}) UNION ALL SELECT ts_ns, ts_ns FROM samples WHERE"
              f" artifact_id IN ({i}) AND ts_ns IS NOT NULL")
    inside = store.sql(f"SELECT EXISTS (SELECT 1 FROM ({events}) WHERE s >= {a} AND s < {b})"
                       ).fetchall()[0][0]
    if inside:
        return
    lo, hi = store.sql(f"SELECT min(s), max(e) FROM ({events})").fetchall()[0]
    if lo is None:
        return
    where = ("before" if b <= lo else "after" if a >= hi else "inside, between")
    raise UsageError(
        f"--window {a}:{b}: no event of the capture starts in it ({where} its events); the "
        f"capture's events span {int(lo)}–{int(hi)} ns on the trace clock "
        f"({duration(int(hi) - int(lo))}): `--window {int(lo)}:{int(hi)}` covers it all, "
        "`--step` selects steps")


def annotation_step(store: Store, ids: Sequence[int], name: str) -> str | None:
    """None when `name` is a user annotation / NVTX range of these artifacts; the step
    number when it is an old-format `ProfilerStep#N` (an operator event: `--annotation`
    then selects that step as `--step N` does); else a UsageError naming what exists."""
    i = _ids(ids)
    kinds = [k for k, in store.sql(
        f"SELECT DISTINCT kind FROM host_ops WHERE artifact_id IN ({i}) AND name = $n",
        {"n": name}).fetchall()]
    if "annotation" in kinds:
        return None
    m = step_rules().profiler_step.match(name)
    if kinds and m:
        return m.group(1)
    have = [n for n, in store.sql(
        f"SELECT DISTINCT name FROM host_ops WHERE artifact_id IN ({i}) AND kind ="
        f" 'annotation' ORDER BY 1 LIMIT {SHOWN + 1}").fetchall()]
    ranges = (f"annotation ranges: {', '.join(have[:SHOWN])}"
              + (", …" if len(have) > SHOWN else "") if have
              else "no user annotation or NVTX range in it")
    raise UsageError(f"--annotation {name!r}: no such range in the capture ({ranges}"
                     f"{_steps_hint(store, ids)})")


def _steps_hint(store: Store, ids: Sequence[int]) -> str:
    """`; its steps X–Y: --step A:B (or --annotation X)` when the capture has steps."""
    found = steps.detect(store, whole=ids)
    if not found.steps or found.source in ("capture", "none"):
        return ""
    first, last = found.steps[0], found.steps[-1]
    span = f"{first.number}:{last.number}" if first.number != last.number else str(first.number)
    names = f"{first.name}–{last.name}" if first is not last else first.name
    also = (f" or `--annotation {first.name}`" if found.source == "profiler-step"
            or found.source.startswith("annotation:") else "")
    return f"; its steps {names} from {steps.source_phrase(found.source)}: `--step {span}`{also}"
