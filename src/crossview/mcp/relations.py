"""What MCP `query` reads beyond the tables: the store's named views (store/stdlib), created
on the store at the first query, and the relations the analysis computes (`steps`,
`step_idle`: store/stdlib/computed/ documents their columns), registered on the call's
connection only when the SQL names them (the time account is computed once per entry, and
only for a query that asks for it)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence

import duckdb
import pyarrow as pa

from crossview.knowledge import causes
from crossview.mcp.safety import Refused
from crossview.store import stdlib
from crossview.store.store import Store
from crossview.views.views import Views

_STRINGS = re.compile(r"'(?:[^']|'')*'")  # literals: a name inside one is not a reference


def _steps(v: Views) -> pa.Table:
    found = v.steps
    rows = [{"artifact_id": s.artifact_id, "step": s.number, "idx": s.index, "name": s.name,
             "source": found.source, "start_ns": s.start_ns, "end_ns": s.end_ns,
             "wall_ns": s.wall_ns, "gpu_busy_ns": s.gpu_busy_ns, "steady": s.steady,
             "flags": ",".join(s.flags)} for s in found.steps]
    return _table("steps", rows)


def _step_idle(v: Views) -> pa.Table:
    acc = v.account
    ids = {s.artifact: s.artifact_id for s in v.steps.steps}
    steady = {(s.artifact, s.number): s.steady for s in v.steps.steps}
    r = causes.rules()
    labels = {c.id: c.label for c in r.causes}
    rows = [{"artifact_id": ids.get(d.artifact), "device": d.device, "step": s.step,
             "cause": c, "label": labels.get(c, c), "idle_ns": ns, "step_idle_ns": s.idle_ns,
             "step_wall_ns": s.wall_ns, "startup": c in r.startup_causes,
             "steady": steady.get((d.artifact, s.step), False)}
            for d in (acc.per_device if acc else []) for s in d.steps
            for c, ns in sorted(s.idle_by_cause.items()) if ns]
    return _table("step_idle", rows)


_UNITS = {"ns": pa.int64(), "count": pa.int64(), "index": pa.int64(), "id": pa.int64(),
          "bool": pa.bool_(), "text": pa.string()}


def _table(name: str, rows: Sequence[Mapping[str, object]]) -> pa.Table:
    """Rows as the documented columns, in their order and with their units' types."""
    cols = stdlib.doc(name).columns
    return pa.table({c.name: pa.array([r[c.name] for r in rows], type=_UNITS[c.unit])
                     for c in cols})


COMPUTED: dict[str, Callable[[Views], pa.Table]] = {"steps": _steps, "step_idle": _step_idle}


def prepare(store: Store, views: Views | None, sql: str) -> None:
    """The named views on the store (once) and the computed relations `sql` names on this
    connection. Called under the entry's lock, before safety.run_query."""
    store.define_deferred()  # the filtered forms a query may name (run_query reads `con`)
    stdlib.ensure(store)
    text = _STRINGS.sub("''", sql)
    for name, build in COMPUTED.items():
        if not re.search(rf"\b{name}\b", text, re.IGNORECASE):
            continue
        if views is None:
            raise Refused(f"query: {name} needs a capture with a trace (no views here)")
        with contextlib.suppress(duckdb.Error):  # a relation of an earlier call
            store.con.unregister(name)
        store.con.register(name, build(views))
