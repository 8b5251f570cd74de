"""Kernels inserted from numpy (sources/nsys/kernel_insert.py) equal the SQL insert.

On every real export in ../shared/data/nsys, gpu_ops read with `gpu.KERNELS_FROM_ARRAYS` on
equals the store read through the SQL insert of `gpu.ingest`, row by row and column by column
(names, families, geometry texts, registers, launch op ids, via_graph), in whole batches and
in batches of 5 ops (several kernel batches, then the copies by SQL). The kernel count and the
summed kernel time are checked against the SQLite tables themselves (`kernel_truth`).
"""

from __future__ import annotations

import shutil
import sqlite3
import stat
from pathlib import Path

import pyarrow as pa
import pytest

from crossview.sources.nsys import enums, gpu, kernel_insert
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


def test_odd_kernel_rows_equal_the_sql_insert(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Edited copy of the real 2025.1 export: a kernel without any name, one whose name id
    is missing from StringIds, one without grid or registers, one with a graph node id, one
    on the 'no stream' id and one whose correlation matches no API call."""
    path = tmp_path / "odd.sqlite"
    shutil.copyfile(real(REAL[0]), path)
    path.chmod(stat.S_IRUSR | stat.S_IWUSR)
    con = sqlite3.connect(path)
    # the same rows without NOT NULL constraints (older or damaged exports lack them)
    for sql in ("CREATE TABLE k AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid",
                "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL",
                "ALTER TABLE k RENAME TO CUPTI_ACTIVITY_KIND_KERNEL"):
        con.execute(sql)
    ids = [r[0] for r in con.execute(
        "SELECT rowid FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY rowid LIMIT 6")]
    k = "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET"
    for sql in (f"{k} demangledName = NULL, shortName = NULL, mangledName = NULL"
                f" WHERE rowid = {ids[0]}",
                f"{k} demangledName = 987654321, shortName = NULL WHERE rowid = {ids[1]}",
                f"{k} gridX = NULL, registersPerThread = NULL WHERE rowid = {ids[2]}",
                f"{k} graphNodeId = 42 WHERE rowid = {ids[3]}",
                f"{k} streamId = {enums.NO_STREAM} WHERE rowid = {ids[4]}",
                f"{k} correlationId = 999999999 WHERE rowid = {ids[5]}"):
        con.execute(sql)
    gx, gy, gz, bx, by, bz, regs = con.execute(
        "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread"
        f" FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = {ids[3]}").fetchone()
    geometry = (f"[{gx},{gy},{gz}]", f"[{bx},{by},{bz}]", regs)
    con.commit()
    con.close()
    monkeypatch.setattr(gpu, "INSERT_ROWS", 4)
    monkeypatch.setattr(gpu, "KERNELS_FROM_ARRAYS", False)
    sql = rows(path, False, monkeypatch)["gpu_ops"]
    monkeypatch.setattr(gpu, "KERNELS_FROM_ARRAYS", True)
    arrays = rows(path, False, monkeypatch)["gpu_ops"]
    assert arrays == sql
    first = [r for r in arrays if r[3] == "kernel"][:6]
    # (id, device, stream, kind, name, family, start, dur, corr, launch, via_graph, …,
    # grid 14, block 15, regs 16)
    assert first[0][4] == "" and first[1][4] == "(name id 987654321)"
    # a NULL part makes the packed value NULL (gpu._kernel_ints): grid, block, regs all NULL
    assert first[2][14] is None and first[2][15] is None and first[2][16] is None
    assert (first[3][14], first[3][15], first[3][16]) == geometry
    assert first[3][10] is True
    assert first[4][2] is None
    assert first[5][9] is None and first[0][9] is not None


def test_rows_out_of_rowid_order_are_sorted() -> None:
    t = pa.table({"rid": [3, 1, 2], "x": ["c", "a", "b"]})
    assert kernel_insert._by_rid(t, "rid").column("x").to_pylist() == ["a", "b", "c"]
