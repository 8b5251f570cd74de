"""Each correlation id's launching call, from the host columns numpy sorted (host_table).

A kernel's launch is the first runtime call (in `_host` order: thread, start, …) that carries
its correlation id; `graph` says whether any runtime call with that id launches a CUDA/HIP
graph. The reader's SQL computes the same table from `_host` when DuckDB sorted it
(reader._LAUNCH_SQL); here it is a stable sort of the runtime calls' ids, so the GPU insert
joins a small table instead of grouping every host row (docs/decisions/0681).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from crossview.sources.kineto.host_table import HostTable


def launch_table(host: HostTable, op_base: int, graph_names: Iterable[str]) -> pa.Table:
    """(correlation, op_id, graph): one row per correlation id some runtime call carries;
    op_id = op_base + the first such call's row. `host.cols` must be present."""
    c = host.cols
    if c is None:
        raise ValueError("launch_table needs the host columns sorted in numpy")
    graph = set(graph_names)
    runtime = np.array([k == "runtime" for k, _ in host.labels] + [False], dtype=bool)
    launches_graph = np.array([k == "runtime" and nm in graph for k, nm in host.labels]
                              + [False], dtype=bool)
    rows = np.flatnonzero(runtime[c.label] & ~c.no_corr)
    corr = c.corr[rows]
    order = np.argsort(corr, kind="stable")  # rows ascending within one id
    by_id = corr[order]
    first = np.ones(len(by_id), dtype=bool)
    first[1:] = by_id[1:] != by_id[:-1]
    starts = np.flatnonzero(first)
    if len(starts):
        any_graph = np.logical_or.reduceat(launches_graph[c.label[rows[order]]], starts)
    else:
        any_graph = np.zeros(0, dtype=bool)
    return pa.table({
        "correlation": pa.array(by_id[starts], pa.int64()),
        "op_id": pa.array(op_base + rows[order[starts]], pa.int64()),
        "graph": pa.array(any_graph, pa.bool_()),
    })
