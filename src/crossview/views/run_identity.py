"""What two captures are compared on before their numbers are (experiments/comparable.py): the
GPU models that ran the filter's GPU ops, and the (host event, recorded input shapes) pairs
of the filter's host events. Read under the analysis' filter (`f_gpu`, `f_host`)."""

from __future__ import annotations

from crossview.store.store import Store


def gpu_names(store: Store) -> set[str]:
    """Names of the GPUs whose device index ran an op (kernel, copy, memset, sync) in scope,
    as any file of the store records them (a counter file may name the trace's GPU)."""
    return {str(n) for n, in store.sql(
        "SELECT DISTINCT name FROM gpu_devices WHERE name IS NOT NULL AND device IN"
        " (SELECT DISTINCT device FROM f_gpu)").fetchall()}


def recorded_shapes(store: Store) -> list[tuple[str, str]]:
    """(event name, `Input Dims` as recorded) of every host event in scope that recorded
    shapes: framework ops, and annotations where the profiler attached them."""
    return [(str(n), str(d)) for n, d in store.sql(
        "SELECT DISTINCT h.name, a.input_dims FROM f_host h JOIN op_args a"
        " ON a.op_id = h.op_id AND NOT a.on_gpu WHERE a.input_dims IS NOT NULL").fetchall()]
