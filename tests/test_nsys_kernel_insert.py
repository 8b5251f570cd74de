"""Kernels inserted from numpy (sources/nsys/kernel_insert.py) equal the SQL insert.

On every real export in ../shared/data/nsys, gpu_ops read with `gpu.KERNELS_FROM_ARRAYS` on
equals the store read through the SQL insert of `gpu.ingest`, row by row and column by column
(names, families, geometry texts, registers, launch op ids, via_graph), in whole batches and
in batches of 5 ops (several kernel batches, then the copies by SQL). The kernel count and the
summed kernel time are checked against the SQLite tables themselves (`kernel_truth`).
"""

from __future__ import annotations

import pytest

from crossview.sources.nsys import gpu
from test_nsys_native import REAL, kernel_truth, kernels, real, rows


@pytest.mark.parametrize("batch", [None, 5], ids=["whole", "tiny"])
@pytest.mark.parametrize("name", REAL)
def test_kernels_from_arrays_equal_the_sql_insert(name: str, batch: int | None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = real(name)
    if batch:
        monkeypatch.setattr(gpu, "INSERT_ROWS", batch)
    monkeypatch.setattr(gpu, "KERNELS_FROM_ARRAYS", False)
    sql = rows(path, False, monkeypatch)
    monkeypatch.setattr(gpu, "KERNELS_FROM_ARRAYS", True)
    arrays = rows(path, False, monkeypatch)
    for t in sql:
        assert arrays[t] == sql[t], t
    assert kernels(arrays) == kernel_truth(path)
    linked = [r for r in arrays["gpu_ops"] if r[3] == "kernel" and r[9] is not None]
    if kernel_truth(path)[0]:
        assert linked, "kernels linked to their launch calls"
