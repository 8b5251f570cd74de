"""store/host_calls.py: typed host-call selections compile to one SQL condition on f_host.
Counts and host time are checked against the raw Kineto JSON, read here without crossview
(complete "X" events; dur is in µs)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from crossview.knowledge import api_roles, frames
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.sources.registry import read_all
from crossview.store import host_calls
from crossview.store.store import Store

KINETO = Path(__file__).resolve().parents[2] / "shared" / "data" / "kineto"
QWEN = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
RESNET = KINETO / "kineto_v100_resnet50_workers4.pt.trace.json.gz"
SYNC = tuple(n for r in ("sync", "sync_memcpy", "async_memcpy")
             for n in api_roles.names_with_role(r))


def _store(path: Path) -> Store:
    if not path.exists():
        pytest.skip(f"{path} is absent")
    store = Store()
    read_all([path], store)
    resolve(store, Filter())
    return store


def _events(path: Path) -> list[dict]:
    if not path.exists():
        pytest.skip(f"{path} is absent")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]


def test_runtime_calls_match_the_raw_trace() -> None:
    # 4 blocking runtime calls, 16.29 ms host time, in the Qwen forward pass
    raw = [e for e in _events(QWEN) if e.get("cat") in ("cuda_runtime", "cuda_driver")
           and e["name"] in SYNC]
    n, ns = host_calls.count_and_ns(_store(QWEN), host_calls.RuntimeCalls(SYNC))
    assert (n, ns) == (len(raw), round(sum(e["dur"] for e in raw) * 1000)) == (4, 16289829)


def test_names_matching_finds_the_dataloader_fetches() -> None:
    pattern = frames.dataloader_pattern()
    raw = [e for e in _events(RESNET)
           if "dataloader" in e["name"].lower() and re.search(pattern, e["name"])]
    store = _store(RESNET)
    sel = host_calls.NamesMatching("dataloader", pattern)
    assert host_calls.count_and_ns(store, sel) == (
        len(raw), round(sum(e["dur"] for e in raw) * 1000)) == (6, 8540000)
    assert sorted(host_calls.names(store, sel)) == sorted({e["name"] for e in raw})


@pytest.mark.parametrize("sel", [
    host_calls.RuntimeCalls(("cudaDeviceSynchronize",)),
    host_calls.NamesMatching("dataloader", "x"),
    host_calls.NameOrRuntime("x", ("cudaMalloc",)),
    host_calls.CopyLaunches("memcpy", ("cudaMemcpy",)),
    host_calls.CopyLaunches("memcpy", ("cudaMemcpy",), except_copy_kind="DtoD"),
    host_calls.CopyLaunches("memset", ("cudaMemset",), mem_kinds=("Pinned", "Managed")),
])
def test_every_parameter_is_used_and_none_is_left_out(sel: host_calls.HostSelection) -> None:
    # DuckDB refuses a parameter the SQL does not use and one it uses but is not given
    cond, params = host_calls.where(sel)
    assert set(re.findall(r"\$(\w+)", cond)) == set(params)
