"""The dependency graph of one capture (Daydream-style): host segments, GPU ops, and the
constraints that decided when each started, read from the store tables.

Every node keeps its measured duration. A constraint says "this node starts no earlier than
PRED's start (or end) + OFFSET". Offsets are set from the measured timeline so that replaying
the unchanged graph reproduces it: the constraint that actually decided a node's start (its
*binding* one) gets the measured offset, the others a typical offset capped at the measured
one (so they can only bind when a lever moves things).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from crossview.knowledge.loader import load_yaml
from crossview.replay.graph_gpu import build_gpu
from crossview.replay.graph_host import CALL as CALL
from crossview.replay.graph_host import CPU as CPU
from crossview.replay.graph_host import GAP as GAP
from crossview.replay.graph_host import WAIT as WAIT
from crossview.replay.graph_host import build_host
from crossview.replay.lane_index import LaneIndex
from crossview.store.store import Store
from crossview.views import replay_rows
from crossview.views.distributed import collective_loops

# node kinds: host segments (graph_host.py) and GPU ops
KERNEL, MEMCPY, MEMSET = "kernel", "memcpy", "memset"
GPU_KINDS = frozenset({KERNEL, MEMCPY, MEMSET})


class Cons(NamedTuple):
    pred: int
    at_end: bool  # False: from the pred's start (a kernel's launch call)
    offset: int
    why: str  # chain | launch | stream | event | sync | thread


@dataclass
class Graph:
    """Parallel lists, one entry per node."""

    kind: list[str] = field(default_factory=list)
    lane: list[str] = field(default_factory=list)  # "T pid/tid" or "S dev/stream"
    name: list[str] = field(default_factory=list)
    dur: list[int] = field(default_factory=list)
    mstart: list[int] = field(default_factory=list)  # measured start (ns)
    cons: list[list[Cons]] = field(default_factory=list)
    family: list[str | None] = field(default_factory=list)
    tags: list[AbstractSet[str]] = field(default_factory=list)  # dataloader, startup, …
    nbytes: list[int | None] = field(default_factory=list)
    op_ref: list[int | None] = field(default_factory=list)  # host op_id / gpu_op_id
    # host node starting at a host op's measured start, per thread: (lane, ns) → node
    at: LaneIndex = field(default_factory=LaneIndex)
    end_at: LaneIndex = field(default_factory=LaneIndex)  # … ending there
    notes: list[str] = field(default_factory=list)
    # a topological order of the nodes (replay.py), shared by copies: levers change
    # durations and drop constraints, which keeps it valid
    order: list[int] | None = None
    labels: list[str] | None = None  # each node's critical-path cause (measure.py), shared
    gpu: npt.NDArray[np.int64] | None = None  # the GPU ops' nodes (measure.py), shared …
    gpu_of: int = -1  # … computed when the graph had this many nodes
    # the kernels by launch start (measure.py `_launches`): the node count, the kernel nodes
    # and their constraint lists then, the result; shared by copies, reused while those are
    # unchanged
    launches: tuple[int, list[int], list[list[Cons]], tuple[list[int], list[int]]] | None = None

    def add(self, kind: str, lane: str, name: str, dur: int, mstart: int,
            family: str | None = None, op_ref: int | None = None,
            nbytes: int | None = None) -> int:
        self.kind.append(kind)
        self.lane.append(lane)
        self.name.append(name)
        self.dur.append(max(0, dur))
        self.mstart.append(mstart)
        self.cons.append([])
        self.family.append(family)
        self.tags.append(set())
        self.nbytes.append(nbytes)
        self.op_ref.append(op_ref)
        return len(self.kind) - 1

    def __len__(self) -> int:
        return len(self.kind)

    def copy(self) -> Graph:
        """A copy for a lever: every list its own, but a node's constraint list and tag set
        shared with this graph — a lever replaces `cons[i]` whole and never edits a node's
        list or set in place (copying 10⁵ small lists and sets cost more than the replay)."""
        return Graph(list(self.kind), list(self.lane), list(self.name), list(self.dur),
                     list(self.mstart), list(self.cons), list(self.family), list(self.tags),
                     list(self.nbytes), list(self.op_ref), self.at.copy(), self.end_at.copy(),
                     list(self.notes), self.order, self.labels, self.gpu, self.gpu_of,
                     self.launches)


def params() -> dict:
    return load_yaml("replay.yaml")


def build(store: Store, artifact_id: int,
          marks: Mapping[str, set[int]] | None = None) -> Graph:
    """The graph of one artifact (one process's Kineto trace or one nsys report). `marks`:
    per host lane, more times to cut its thread at (the steps' bounds, replay/steps.py).
    Host lanes first (graph_host.py), then the GPU streams (graph_gpu.py)."""
    p = params()
    loops: dict[str, list[tuple[int, int]]] = {}  # per lane: its per-tensor collective loops
    for x in collective_loops.loops(store, artifact_id, scoped=False):
        loops.setdefault(x.lane, []).append((x.start_ns, x.end_ns))
    nodes = build_host(replay_rows.host_rows(store, artifact_id), marks or {}, loops, p["graph"],
                       p["levers"]["graph-region"])
    build_gpu(nodes, replay_rows.gpu_rows(store, artifact_id), p["graph"])
    new = tuple.__new__  # Cons without its Python-level __new__ (10⁵ constraints)
    cons: list[list[Cons]] = [[] for _ in range(len(nodes))]
    for n0, n1 in nodes.chains:  # a chain's constraint first: the order `binding` indexes
        cons[n0 + 1:n1 + 1] = [[new(Cons, (i - 1, True, 0, "chain"))]
                               for i in range(n0 + 1, n1 + 1)]
    for e in nodes.edges:
        cons[e[0]].append(new(Cons, e[1:]))
    return Graph(nodes.kind, nodes.lane, nodes.name, nodes.dur, nodes.mstart, cons,
                 nodes.family, nodes.tags, nodes.nbytes, nodes.op_ref, nodes.at, nodes.end_at)
