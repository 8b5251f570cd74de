"""The captures (artifacts) a store holds: their ids, paths, reader kinds, what each holds
and the GPUs each names (artifacts, devices) — lookups code outside store/ and views/ needs
without reading those tables itself (decision 0905): evidence, the replay's refusals, which
file a row came from, the GPU rows of the captures in scope."""

from __future__ import annotations

from typing import NamedTuple, Protocol

from crossview.scope.filter import ResolvedFilter
from crossview.store.store import Store


class Scoped(Protocol):
    """What `kinds` reads of a Views (views.py imports this module: no import back)."""

    @property
    def store(self) -> Store: ...

    @property
    def filter(self) -> ResolvedFilter: ...


class Holds(NamedTuple):
    """What one readable capture holds (whatif picks the timelines it can replay)."""

    artifact_id: int
    path: str
    kind: str  # reader kind: kineto, nsys, …
    runtime_calls: int  # host ops of kind 'runtime'
    gpu_ops: int
    summary_rows: int  # nsys stats CSV rows


def kinds(v: Scoped) -> dict[str, str]:
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


class Device(NamedTuple):
    """One GPU as a capture names it (devices row); None where the capture does not say."""
    artifact_id: int
    device: int | None
    name: str | None
    sm_count: int | None
    mem_bytes: int | None
    cc_major: int | None
    cc_minor: int | None


def paths(store: Store) -> dict[int, str]:
    """artifact id → path, every artifact of the store (ok or not)."""
    return dict(store.sql("SELECT artifact_id, path FROM artifacts").fetchall())


def artifact_id(store: Store, path: str) -> int:
    """The id of the artifact read from `path` (it must be in the store)."""
    return int(store.sql("SELECT artifact_id FROM artifacts WHERE path = $p",
                         {"p": path}).fetchall()[0][0])


def first_ok(store: Store) -> int | None:
    """The lowest id of an artifact read ok; None when none was."""
    got = store.sql("SELECT min(artifact_id) FROM artifacts WHERE status = 'ok'"
                    ).fetchall()[0][0]
    return None if got is None else int(got)


def devices(store: Store, in_scope: bool = False) -> list[Device]:
    """The GPUs the captures name, by artifact and device; `in_scope`: only those of the
    artifacts with GPU ops under the filter (f_gpu)."""
    where = " WHERE artifact_id IN (SELECT DISTINCT artifact_id FROM f_gpu)" if in_scope else ""
    return [Device(*r) for r in store.sql(
        "SELECT artifact_id, device, name, sm_count, mem_bytes, cc_major, cc_minor FROM devices"
        + where + " ORDER BY artifact_id, device").fetchall()]


def gpu_artifacts(store: Store) -> list[int]:
    """The artifacts with GPU ops under the filter (f_gpu), ascending."""
    return [int(a) for (a,) in store.sql(
        "SELECT DISTINCT artifact_id FROM f_gpu ORDER BY 1").fetchall()]
