"""The captures (artifacts) a store holds: their paths, reader kinds and what each holds, for
code that names a capture (evidence, the replay's refusals)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from crossview.store.store import Store

if TYPE_CHECKING:  # the replay reads paths here without the views' imports
    from crossview.views.views import Views


class Holds(NamedTuple):
    """What one readable capture holds (whatif picks the timelines it can replay)."""

    artifact_id: int
    path: str
    kind: str  # reader kind: kineto, nsys, …
    runtime_calls: int  # host ops of kind 'runtime'
    gpu_ops: int
    summary_rows: int  # nsys stats CSV rows


def kinds(v: Views) -> dict[str, str]:
    """Reader kind (kineto, nsys, …) of each artifact in scope, by path."""
    return dict(v.store.sql(
        "SELECT path, kind FROM artifacts WHERE path IN (SELECT unnest($p))",
        {"p": list(v.filter.artifacts)}).fetchall())


def path_of(store: Store, artifact_id: int) -> str:
    return str(store.sql("SELECT path FROM artifacts WHERE artifact_id = ?", [artifact_id]
                         ).fetchall()[0][0])


def paths_of(store: Store, ids: list[int]) -> list[str]:
    """The paths of these artifacts, sorted."""
    return [str(p) for (p,) in store.sql("SELECT path FROM artifacts WHERE artifact_id IN "
                                         "(SELECT unnest($a)) ORDER BY 1", {"a": ids}
                                         ).fetchall()]


def readable_paths(store: Store) -> list[str]:
    """The paths of the artifacts read without a refusal (status ok)."""
    return [str(r[0]) for r in store.sql("SELECT path FROM artifacts WHERE status = 'ok'"
                                         ).fetchall()]


def holdings(store: Store) -> list[Holds]:
    """What each readable artifact holds, by artifact id."""
    return [Holds(int(a), str(p), str(k), int(h), int(g), int(s)) for a, p, k, h, g, s in
            store.sql(
        "SELECT a.artifact_id, a.path, a.kind, "
        "(SELECT count(*) FROM host_ops h WHERE h.artifact_id = a.artifact_id "
        " AND h.kind = 'runtime'), "
        "(SELECT count(*) FROM gpu_ops g WHERE g.artifact_id = a.artifact_id), "
        "(SELECT count(*) FROM summary_stats s WHERE s.artifact_id = a.artifact_id) "
        "FROM artifacts a WHERE a.status = 'ok' ORDER BY a.artifact_id").fetchall()]


def holds_ncu(store: Store) -> bool:
    """The store holds ncu kernel profiles (profiled_kernels rows)."""
    return bool(store.sql("SELECT count(*) FROM profiled_kernels").fetchall()[0][0])
