"""A `Profile` → interned `frames` + `samples` rows + one artifact row (rigor L1).

Stacks are interned by path (one node per distinct root → frame path, as nsys sampling and
Kineto do), so the views walk them like any other call tree. Identical (stack, pid, tid) rows
are merged: `count` keeps the samples, `weight_ns` the time. Sampled stacks from these files
carry no timestamps (ts_ns NULL): a `--window` / `--annotation` cannot select inside them.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from crossview.errors import InputError
from crossview.sources import guard
from crossview.sources.artifact_report import ArtifactReport
from crossview.sources.stacks import leaves
from crossview.sources.stacks.model import Profile
from crossview.store.store import Store


def check(path: Path, p: Profile, what: str) -> None:
    """Empty or nonsensical profiles are one InputError line, never a store write."""
    if not p.stacks:
        raise InputError(path, f"{what} holds no stacks (empty profile)", "empty")
    if all(s.count == 0 and s.weight_ns == 0 for s in p.stacks):
        raise InputError(path, f"{what}: every stack has zero weight (nothing was sampled)",
                         "empty")
    deepest = max(len(s.frames) for s in p.stacks)
    if deepest > (cap := int(guard.limit("max_stack_depth"))):
        # refused alone: the call trees built from it are walked and serialized per level
        raise InputError(path, f"{what}: a stack of {deepest:,} frames is deeper than "
                         f"{cap:,} (input_limits.yaml max_stack_depth): refused")


def ingest(store: Store, path: Path, kind: str, p: Profile, what: str) -> ArtifactReport:
    check(path, p, what)
    view, why = leaves.decide_view(p)
    Key = tuple[tuple[str, ...], str | None, str | None, str]
    merged: dict[Key, list[int]] = defaultdict(lambda: [0, 0])
    for s in p.stacks:
        acc = merged[(s.frames, s.pid, s.tid, s.view or view)]
        acc[0] += s.weight_ns
        acc[1] += s.count

    # (parent node, frame) → node; a root's parent is its view, so a GPU and a CPU stack never
    # share nodes
    node_of: dict[tuple[int | str, str], int] = {}
    ids: list[int] = []
    parents: list[int | None] = []
    names: list[str] = []
    kinds: list[str] = []
    depths: list[int] = []
    leaf_node: list[int] = []
    for frames_path, _pid, _tid, sview in merged:
        parent: int | None = None
        for depth, name in enumerate(frames_path):
            key = (sview if parent is None else parent, name)
            node = node_of.get(key)
            if node is None:
                node = node_of[key] = store.reserve_nodes(1)
                leaf = depth == len(frames_path) - 1
                caller = frames_path[depth - 1] if depth else None
                kernel = sview == "gpu" and leaf and leaves.is_kernel_leaf(name, caller)
                ids.append(node)
                parents.append(parent)
                names.append(leaves.strip_marker(name))
                kinds.append("kernel" if kernel else leaves.frame_kind(name, p.kinds))
                depths.append(depth)
            parent = node
        assert parent is not None  # readers never yield an empty stack
        leaf_node.append(parent)

    aid = store.new_artifact_id()
    store.append("frames", pa.table({
        "node_id": pa.array(ids, pa.int64()), "parent_node": pa.array(parents, pa.int64()),
        "name": pa.array(names, pa.string()), "kind": pa.array(kinds, pa.string()),
        "depth": pa.array(depths, pa.int32())}))
    weights = [v[0] for v in merged.values()]
    counts = [v[1] for v in merged.values()]
    n = len(leaf_node)
    store.append("samples", pa.table({
        "artifact_id": pa.array([aid] * n, pa.int32()),
        "view": pa.array([k[3] for k in merged], pa.string()),
        "node_id": pa.array(leaf_node, pa.int64()), "weight_ns": pa.array(weights, pa.int64()),
        "count": pa.array(counts, pa.int32()),
        "pid": pa.array([k[1] for k in merged], pa.string()),
        "tid": pa.array([k[2] for k in merged], pa.string())}))
    total = sum(counts)
    views = sorted({k[3] for k in merged})
    side = (f"{view.upper()} view ({why})" if views == [view] else
            " and ".join(f"{x.upper()} view" for x in views) + " (stated per stack)")
    notes = [f"{what}: {total:,} samples in {n:,} distinct stacks, weights in {p.unit}; "
             f"{side}", *p.notes]
    status = "partial" if p.partial else "ok"
    store.add_artifact(artifact_id=aid, path=str(path), kind=kind, bytes=path.stat().st_size,
                       status=status, problems=list(p.partial), rigor="L1", events=total,
                       notes=notes)
    return ArtifactReport(path=str(path), kind=kind, status=status, problems=list(p.partial),
                          artifact_id=aid, notes=notes)
