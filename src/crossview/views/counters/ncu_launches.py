"""The Nsight Compute rows of the captures in scope: each profiled launch (its exports of one
launch share a launch key), the counters collected for it and ncu's own rule results
(profiled_kernels, kernel_metrics, kernel_rules), for the per-kernel roofline
(sol/roofline.py)."""

from __future__ import annotations

from collections.abc import Sequence

from crossview.sol.roofline import Metric, NcuRows, ProfiledLaunch, Rule
from crossview.store.store import Store


def read(store: Store, paths: Sequence[str]) -> NcuRows:
    """The launches of the artifacts read ok from `paths`, with their counters and rules."""
    found = launches(store, paths)
    ids = [int(r.kernel_id) for r in found]
    return NcuRows(found, metrics(store, ids) if found else {},
                   rules(store, ids) if found else {})


def launches(store: Store, paths: Sequence[str]) -> list[ProfiledLaunch]:
    """The profiled launches of the artifacts read ok from `paths`, by artifact and id."""
    return [ProfiledLaunch(*r) for r in store.sql(
        "SELECT p.launch_key, p.kernel_id, a.path, p.name, p.family, p.device_name, p.cc,"
        " p.sm_count, p.mem_bytes, p.grid, p.block, p.device_name_source"
        " FROM profiled_kernels p JOIN artifacts a USING (artifact_id)"
        " WHERE a.status = 'ok' AND a.path IN (SELECT unnest($p))"
        " ORDER BY p.artifact_id, p.kernel_id", {"p": list(paths)}).fetchall()]


def metrics(store: Store, kernel_ids: list[int]) -> dict[int, list[Metric]]:
    """kernel id → its counters, in artifact order."""
    out: dict[int, list[Metric]] = {}
    for kid, sec, met, val, unit, path in store.sql(
        "SELECT m.kernel_id, m.section, m.metric, m.value, m.unit, a.path FROM kernel_metrics m"
        " JOIN artifacts a USING (artifact_id) WHERE m.kernel_id IN (SELECT unnest($k))"
        " ORDER BY m.artifact_id, m.kernel_id", {"k": kernel_ids},
    ).fetchall():
        out.setdefault(int(kid), []).append((sec, met, val, unit, path))
    return out


def rules(store: Store, kernel_ids: list[int]) -> dict[int, list[Rule]]:
    """kernel id → ncu's rule results for it, in artifact order."""
    out: dict[int, list[Rule]] = {}
    for row in store.sql(
        "SELECT kernel_id, section, rule, type, title, message, speedup_type, speedup_pct"
        " FROM kernel_rules WHERE kernel_id IN (SELECT unnest($k)) ORDER BY artifact_id",
        {"k": kernel_ids},
    ).fetchall():
        out.setdefault(int(row[0]), []).append(row[1:])
    return out
