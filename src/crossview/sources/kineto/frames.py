"""Call-tree frames of a Kineto artifact: legacy "Call stack" prefixes and the frames table."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from crossview.store.store import Store


def call_stack_prefixes(
    stacks: list[tuple[int, str]], depth: np.ndarray, first_label: int, store: Store
) -> tuple[np.ndarray | None, dict[str, list[Any]]]:
    """Legacy traces carry python frames as args["Call stack"] on operators (innermost
    first, ';'-separated). Root events with one hang under the chain of those frames."""
    prefixes = CallStackPrefixes(first_label, store)
    return prefixes.add(stacks, depth), prefixes.out


class CallStackPrefixes:
    """`call_stack_prefixes` over batches of events: chains and labels are shared across
    batches and node ids reserved in event order, as one pass over all events would."""

    def __init__(self, first_label: int, store: Store) -> None:
        self.out: dict[str, list[Any]] = {"labels": [], "node": [], "parent": [], "label": []}
        self._first_label = first_label
        self._store = store
        self._chain_node: dict[tuple[str, ...], int] = {}
        self._label_ids: dict[str, int] = {}

    def add(self, stacks: list[tuple[int, str]], depth: np.ndarray) -> np.ndarray | None:
        """`stacks`: (index into `depth`, call stack) → root parent node per event, or None."""
        if not stacks:
            return None
        out, chain_node, label_ids = self.out, self._chain_node, self._label_ids
        root_parent = np.full(len(depth), -1, dtype=np.int64)
        for i, s in stacks:
            if depth[i] != 0:
                continue
            frames = tuple(f.strip() for f in reversed(s.split(";")) if f.strip())
            parent = -1
            for k in range(1, len(frames) + 1):
                path = frames[:k]
                if path not in chain_node:
                    if frames[k - 1] not in label_ids:
                        label_ids[frames[k - 1]] = self._first_label + len(out["labels"])
                        out["labels"].append(("python", frames[k - 1]))
                    nid = self._store.reserve_nodes(1)
                    chain_node[path] = nid
                    out["node"].append(nid)
                    out["parent"].append(parent)
                    out["label"].append(label_ids[frames[k - 1]])
                parent = chain_node[path]
            root_parent[i] = parent
        return root_parent


def append_frames(
    store: Store,
    prefix: dict[str, list[Any]],
    node_parent: np.ndarray,
    node_label: np.ndarray,
    label_rows: list[tuple[str, str]],
    first_node: int,
) -> None:
    ids = np.concatenate([np.array(prefix["node"], dtype=np.int64),
                          np.arange(first_node, first_node + len(node_parent), dtype=np.int64)])
    parents = np.concatenate([np.array(prefix["parent"], dtype=np.int64), node_parent])
    labels = np.concatenate([np.array(prefix["label"], dtype=np.int64), node_label])
    if len(ids) == 0:
        return
    # by list index (a few thousand nodes): Array.take would import pyarrow.compute (~0.1-0.3 s)
    rows = [label_rows[i] for i in labels.tolist()]
    kind = pa.array([k for k, _ in rows], pa.string())
    name = pa.array([nm for _, nm in rows], pa.string())
    # depth of a node = depth of its parent + 1; parents always precede children in `ids`
    pos = {int(v): i for i, v in enumerate(ids)}
    depth = np.zeros(len(ids), dtype=np.int32)
    for i, p in enumerate(parents):
        if p >= 0:
            depth[i] = depth[pos[int(p)]] + 1
    store.append("frames", pa.table({
        "node_id": pa.array(ids), "parent_node": pa.array(parents, mask=parents < 0),
        "name": name, "kind": kind, "depth": pa.array(depth),
    }))
