"""Embedding lookups: bytes only (no arithmetic). Minimal bytes = the looked-up rows read
(n_idx·D·b), the indices read (n_idx·b_idx) and the result written (n_idx·D·b); the table
itself is not streamed, only the rows used."""

from __future__ import annotations

from crossview.opmodels.inputs import OpCost, OpInputs, numel


def embedding(inp: OpInputs) -> OpCost | None:
    """aten::embedding(weight[V,D], indices[...]). Bytes = 2·n·D·b_w + n·b_idx, n =
    numel(indices)."""
    w, idx = inp.shape(0), inp.shape(1)
    tw, ti = inp.dtype(0), inp.dtype(1)
    if w is None or idx is None or tw is None or ti is None or len(w) != 2:
        return None
    n, d = numel(idx), w[1]
    nbytes = 2.0 * n * d * tw.bytes + n * ti.bytes
    return OpCost(0.0, nbytes, tw, f"table={list(w)} indices={list(idx)}", "embedding",
                  "embedding")


def index_select(inp: OpInputs) -> OpCost | None:
    """aten::index_select(x[V,D…], dim, index[n]) on dim 0: the same bytes as an embedding,
    2·n·(row size)·b + n·b_idx; other dims are unmodeled."""
    x, idx = inp.shape(0), inp.shape(2)
    tx, ti = inp.dtype(0), inp.dtype(2)
    if x is None or idx is None or tx is None or ti is None or inp.concrete_at(1) != "0":
        return None
    n, row = numel(idx), numel(x[1:])
    return OpCost(0.0, 2.0 * n * row * tx.bytes + n * ti.bytes, tx,
                  f"table={list(x)} indices={list(idx)}", "index_select", "embedding")
