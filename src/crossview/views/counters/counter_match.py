"""Whether a GPU's counters describe the traced GPU: the same model, and samples taken while
the trace ran. Counters of another GPU model, or recorded at another time, are reported as
what they are and never cross-checked against the trace's busy % (issue 40)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crossview.knowledge.hardware import match
from crossview.scope.runs import CLOCK_SLACK_NS
from crossview.scope.trace_clock import TraceClock, span_text, trace_clocks
from crossview.store.store import Store


@dataclass(frozen=True)
class Traced:
    """What the selected traces ran on and when."""

    gpus: tuple[str, ...]  # names of the GPUs the traces ran ops on
    clocks: tuple[TraceClock, ...]  # traces whose wall-clock span is known


def traced(store: Store, paths: Sequence[str]) -> Traced:
    gpus = [str(n) for n, in store.sql(
        "SELECT DISTINCT d.name FROM devices d JOIN (SELECT DISTINCT artifact_id, device FROM"
        " gpu_ops) g USING (artifact_id, device) JOIN artifacts a USING (artifact_id)"
        " WHERE a.path IN (SELECT unnest($p)) AND coalesce(d.name, '') <> ''",
        {"p": list(paths)}).fetchall()]
    return Traced(tuple(sorted(set(gpus))), tuple(trace_clocks(store, list(paths))))


def _same_model(a: str, b: str) -> bool:
    if a.strip().lower() == b.strip().lower():
        return True
    ha, hb = match(a), match(b)
    return ha is not None and hb is not None and ha.hw_key == hb.hw_key


def apart(t: Traced, name: str | None, first_ns: int | None, last_ns: int | None
          ) -> str | None:
    """Why counters of GPU `name` sampled over [first_ns, last_ns] (epoch) do not describe the
    traced GPUs — another model, or no sample while a trace ran — or None."""
    if name and t.gpus and not any(_same_model(name, g) for g in t.gpus):
        return f"another GPU model ({name}) than the trace's ({', '.join(t.gpus)})"
    if first_ns is None or last_ns is None or not t.clocks:
        return None
    if any(first_ns <= c.epoch_span()[1] + CLOCK_SLACK_NS
           and last_ns >= c.epoch_span()[0] - CLOCK_SLACK_NS for c in t.clocks):
        return None
    c = t.clocks[0]
    return (f"recorded {span_text(first_ns, last_ns)}, not while the trace ran ({c.name}: "
            f"{span_text(*c.epoch_span())})")
