"""The store's captures by id and path, and the GPUs each one names (artifacts, devices).

Lookups code outside store/ and views/ needs without reading those tables itself (decision
0905): which file a row came from, the id of a file read into a store, and the GPU rows of
the captures in scope (a trace's deviceProperties, an nsys target's GPUs)."""

from __future__ import annotations

from typing import NamedTuple

from crossview.store.store import Store


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
