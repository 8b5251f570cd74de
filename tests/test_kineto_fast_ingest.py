"""The Kineto reader's fast host path (numpy sort, host_ops straight from the arrays) against
its plain path (DuckDB's ORDER BY, `_nestres`, SQL insert), on real captures from
../shared/data/kineto: every column of every table the reader writes is the same.

The plain path is the one traces past `kineto_host_sort_rows` take; forcing the threshold to 0
runs it on the same bytes. Each fast-path step is also checked to have run (a spy), so a
silent fallback cannot make the comparison vacuous.
"""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from conftest import SHARED_DATA
from crossview.knowledge.thresholds import defaults
from crossview.sources.kineto import host_nesting, host_table
from crossview.sources.kineto import reader as kineto
from crossview.store.store import Store

KINETO = SHARED_DATA / "kineto"
# (trace, kernels launched through a CUDA/HIP graph): a DDP training step with NCCL, an HF
# forward with recorded shapes (op_args), a vLLM TP8 prefill, a V100 trace with dataloader
# workers, and two traces with graph launches (via_graph, linked from numpy on the fast path)
REAL = [("hta_a100_ddp_resnet_nccl.json.gz", False),
        ("tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz", False),
        ("tracelens_b200_vllm_eager_prefill_tp8.json.gz", False),
        ("kineto_v100_resnet50_workers4.pt.trace.json.gz", False),
        ("hta_a100_16rank_training_graphs.json.gz", True),
        ("tracelens_mi300x_vllm_decode_full_graph.json.gz", True)]
TABLES = {
    "host_ops": "op_id", "gpu_ops": "gpu_op_id", "frames": "node_id",
    "op_args": "op_id, on_gpu", "devices": "device",
}


def _read(path: Path, plain: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Store, int]:
    calls = []
    fast = host_nesting._insert_from_arrays

    def spy(*a: object, **k: object) -> None:
        calls.append(1)
        fast(*a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(host_nesting, "_insert_from_arrays", spy)
    if plain:
        s = msgspec.structs.replace(defaults(), kineto_host_sort_rows=0)
        monkeypatch.setattr(host_table, "defaults", lambda: s)
    store = Store(threads=2)
    kineto.read(path, store)
    monkeypatch.undo()
    return store, len(calls)


@pytest.mark.parametrize(("name", "graphs"), REAL)
def test_fast_host_path_equals_plain_path(name: str, graphs: bool,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = KINETO / name
    if not path.exists():
        pytest.skip(f"real trace {path} absent (../shared/data not mounted)")
    fast, n_fast = _read(path, False, monkeypatch)
    plain, n_plain = _read(path, True, monkeypatch)
    assert (n_fast, n_plain) == (1, 0)  # each path ran as named
    for table, key in TABLES.items():
        q = f"SELECT * FROM {table} ORDER BY {key}"
        assert fast.sql(q).fetchall() == plain.sql(q).fetchall(), table
    # a real host timeline with launches linked and correlation ids kept (NULL where none)
    n_host, n_corr, n_null, n_linked, n_graph = fast.sql(
        "SELECT count(*), count(correlation), count(*) - count(correlation),"
        " (SELECT count(launch_op_id) FROM gpu_ops),"
        " (SELECT count(*) FILTER (WHERE via_graph) FROM gpu_ops) FROM host_ops").fetchall()[0]
    assert n_host > 1_000 and n_corr >= 20 and n_null > 400 and n_linked > 400
    assert (n_graph > 300) == graphs
