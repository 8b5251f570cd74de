"""Which timeline inputs are one run: one recap never merges captures of different jobs.

A folder of traces is one run when its traces could be the processes of one job: the same
GPU model and driver, clocks that overlap (another workload ran at another time; kernel
names are no test: the processes and pipeline stages of one job run different kernels).
Ranks of one job (the trace's `distributedInfo`: the same world size, distinct ranks, the
same GPU model) are one run whatever their clocks say: nodes' clocks may be skewed or
per-host monotonic, and the multi-rank views align them (views/distributed).

More than one run: the main one is analyzed and each capture of the others is a rejected
input naming `analyze --each` (`set_apart`); counter, ncu and summary files are not grouped
here (views/counters/counter_match.py says when counters are of another GPU or time).
Readers record no host name: GPU model, driver and clock stand for it. Only inputs the
analysis reads (status ok) are grouped; the clock slack is in knowledge/runs.yaml.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from crossview.errors import UsageError
from crossview.knowledge.loader import load_yaml
from crossview.sources.artifact_report import ArtifactReport
from crossview.store.schema import TABLES
from crossview.store.store import Store
from crossview.units import duration

_RULES = load_yaml("runs.yaml")
CLOCK_SLACK_NS = int(float(_RULES["clock_slack_s"]) * 1e9)


@dataclass
class Capture:
    """One timeline input: what tells its run apart."""

    artifact_id: int
    path: str
    gpus: tuple[str, ...]  # device names of the GPUs its ops ran on (() unknown)
    rank: int | None
    world_size: int | None
    start_ns: int  # first event, on the epoch clock when `epoch`, else on its own clock
    end_ns: int
    epoch: bool  # the span is UTC epoch ns (the trace says its clock base)
    driver: int | None = None  # CUDA version the driver supports (decision 0808)
    events: int = 0  # timed events (GPU ops, host events, samples)

    @property
    def name(self) -> str:
        return Path(self.path).name

    def label(self) -> str:
        gpu = "/".join(self.gpus) or "GPU not named"
        rank = f", rank {self.rank} of {self.world_size}" if self.world_size else ""
        return f"{self.name} ({gpu}{rank})"


def _captures(store: Store) -> list[Capture]:
    rows = store.sql("""
        WITH ev AS (
            SELECT artifact_id, start_ns AS s, start_ns + dur_ns AS e FROM gpu_ops
            UNION ALL SELECT artifact_id, start_ns, start_ns + dur_ns FROM host_ops
            UNION ALL SELECT artifact_id, ts_ns, ts_ns FROM samples WHERE ts_ns IS NOT NULL)
        SELECT a.artifact_id, a.path, a.rank, a.world_size, a.clock_epoch_ns, min(ev.s),
               max(ev.e), a.driver_cuda, count(*)
        FROM artifacts a JOIN ev USING (artifact_id)
        WHERE a.status = 'ok' GROUP BY ALL ORDER BY a.path""").fetchall()
    gpus: dict[int, set[str]] = {}
    for a, name in store.sql(
            "SELECT DISTINCT d.artifact_id, d.name FROM devices d JOIN (SELECT DISTINCT"
            " artifact_id, device FROM gpu_ops) g USING (artifact_id, device)"
            " WHERE coalesce(d.name, '') <> ''").fetchall():
        gpus.setdefault(int(a), set()).add(str(name).strip())
    out = []
    for a, path, rank, world, base, s, e, driver, n in rows:
        b = 0 if base is None else int(base)
        out.append(Capture(int(a), str(path), tuple(sorted(gpus.get(int(a), ()))),
                           None if rank is None else int(rank),
                           None if world is None else int(world), int(s) + b, int(e) + b,
                           base is not None, None if driver is None else int(driver), int(n)))
    return out


def _apart(a: Capture, b: Capture) -> str | None:
    """Why two captures are not one run, or None."""
    if a.gpus and b.gpus and {g.lower() for g in a.gpus} != {g.lower() for g in b.gpus}:
        return "different GPUs"
    if a.driver is not None and b.driver is not None and a.driver != b.driver:
        return "different GPU drivers"
    ranks = a.world_size is not None and b.world_size is not None
    if ranks and a.world_size != b.world_size:
        return "different world sizes"
    if ranks and a.rank == b.rank:
        return "the same rank twice"
    if ranks:  # ranks of one world: their clocks may be skewed (views/distributed aligns them)
        return None
    if a.epoch == b.epoch:  # one kind of clock: comparable
        if a.start_ns > b.end_ns + CLOCK_SLACK_NS or b.start_ns > a.end_ns + CLOCK_SLACK_NS:
            return "clocks that do not overlap"
    else:  # one on the wall clock, one on its own: nothing says they ran together
        return "clocks that cannot be put on one time line"
    return None


def group(store: Store) -> list[list[Capture]]:
    """The timeline inputs in runs: each capture joins the first run it is one with (with
    every member), else starts its own."""
    runs: list[list[Capture]] = []
    for c in _captures(store):
        home = next((r for r in runs if all(_apart(c, m) is None for m in r)), None)
        if home is None:
            runs.append([c])
        else:
            home.append(c)
    return runs


def _why(runs: list[list[Capture]]) -> str:
    reasons: list[str] = []
    for i, r in enumerate(runs):
        for other in runs[i + 1:]:
            why = _apart(r[0], other[0])
            if why and why not in reasons:
                reasons.append(why)
    return ", ".join(reasons) or "they are not one job"


def _span(r: list[Capture]) -> str:
    lo, hi = min(c.start_ns for c in r), max(c.end_ns for c in r)
    return duration(hi - lo)


def _run_label(r: list[Capture]) -> str:
    return (r[0].label() if len(r) == 1 else f"{len(r)} captures {r[0].name}…{r[-1].name} "
            f"({'/'.join(r[0].gpus) or 'GPU not named'})") + f" over {_span(r)}"


def refusal(runs: list[list[Capture]]) -> UsageError:
    """One line naming each run (where a store cannot set runs apart: a lake)."""
    return UsageError(
        f"{len(runs)} captures that are not one run ({_why(runs)}): "
        + "; ".join(_run_label(r) for r in runs) + " — one recap never merges them: "
        "analyze one at a time, or each on its own with `crossview analyze --each`")


OTHER_RUN = "other-run"  # the status of an input set apart as another run


def set_apart(store: Store, reports: list[ArtifactReport]) -> None:
    """Inputs of more than one run: the main run (read whole, then the most captures, then
    the most events) is analyzed. Every capture of another run becomes a rejected input
    (status other-run: one error line naming `--each`, exit 2) and its rows leave the store
    (its report stays): nothing merges, nothing else is lost (a stray file beside a bundle).
    A store that cannot drop rows (a lake's Parquet views) refuses instead, naming each run,
    before any change. The store and the reports change: call it once per read, before any
    filter (the MCP server's cache does so when it opens inputs: every call sees one run)."""
    runs = group(store)
    if len(runs) < 2:
        return
    # the main run: read whole, then the most captures and events. A report can say partial
    # where the store's row says ok (rows a reader skipped after registering the capture):
    # a damaged capture beside a sound one never pushes the sound one out
    # (a capture read whole but with a doubt its reader says counts as partial here too)
    partial = {r.path for r in reports if r.status == "partial"
               or (r.status == "ok" and r.problems)}
    main = max(runs, key=lambda r: (not any(c.path in partial for c in r), len(r),
                                    sum(c.events for c in r)))
    apart = {c.artifact_id: _apart(c, main[0]) or "not one job" for r in runs
             if r is not main for c in r}
    ids = ",".join(str(i) for i in apart)
    tables = [t for t, columns in TABLES.items() if "artifact_id INTEGER" in columns]
    views = {str(v): str(q) for v, q in store.sql(
        "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal").fetchall()}
    # a capture cache hit (cache/entry.py) reads its large tables through views over the
    # read-only entry: those are narrowed to the main run, as a fresh read's rows are deleted
    cached = {t: _select(views[t]) for t in tables if t in views and _CACHED in views[t]}
    if set(views) & set(tables) - set(cached) or None in cached.values():
        raise refusal(runs)  # a lake: its rows are Parquet files, not the store's to drop
    for table in tables:  # the artifacts row too: no view sees it
        if table in cached:
            store.sql(f"CREATE OR REPLACE VIEW {table} AS SELECT * FROM ({cached[table]}) "
                      f"WHERE artifact_id NOT IN ({ids})")
        else:
            store.sql(f"DELETE FROM {table} WHERE artifact_id IN ({ids})")
    paths = {c.artifact_id: c.path for r in runs for c in r}
    for rep in reports:
        aid = rep.artifact_id if rep.artifact_id in apart else next(
            (i for i in apart if paths[i] == rep.path), None)
        if aid is not None:
            rep.status = OTHER_RUN
            rep.problems = [f"not one run with {_run_label(main)} ({apart[aid]}): left out of "
                            "this recap, never merged — `crossview analyze --each` gives "
                            "each run its own", *rep.problems]


# the alias cache/entry.py attaches an entry under (its views read `crossview_cache_N.main.T`)
_CACHED = "crossview_cache_"
_VIEW_SELECT = re.compile(r"\bAS\s+(SELECT\b.*?);?\s*$", re.IGNORECASE | re.DOTALL)


def _select(view_sql: str) -> str | None:
    """The SELECT a view's definition holds (None if it cannot be read)."""
    m = _VIEW_SELECT.search(view_sql)
    return m.group(1) if m else None


def paths_of_runs(store: Store) -> list[list[str]]:
    """The input paths of each run (`analyze --each`)."""
    return [[c.path for c in r] for r in group(store)]
