"""views/top_entities.py (what MCP `topentities` serves) on a real capture, against numbers
computed here from the raw JSON with tests/oracle.py (no crossview):
hta_v100_ddp_training.json.gz: 19,370 kernels on device 1, 17,350 on stream 7 (620,516,000
ns) and 2,020 NCCL all-reduce kernels on stream 14 (357,343,000 ns)."""

from __future__ import annotations

from collections import defaultdict

import oracle
from conftest import SHARED_DATA, shared_file
from crossview.scope.filter import Filter
from crossview.scope.resolve import resolve
from crossview.sources.registry import read_all
from crossview.store.store import Store
from crossview.views.top_entities import top_entities

TRACE = SHARED_DATA / "kineto" / "hta_v100_ddp_training.json.gz"


def test_devices_streams_and_ranks_by_kernel_time() -> None:
    path = shared_file(TRACE)
    ks = oracle.kernels(oracle.load_trace(path))
    per_stream: dict[object, list[oracle.Kernel]] = defaultdict(list)
    for k in ks:
        per_stream[k.stream].append(k)
    store = Store()
    read_all([path], store)
    resolve(store, Filter())
    top = top_entities(store, 20)
    (dev,) = top.devices
    assert (dev.device, dev.kernels, dev.gpu_kernel_ns) == (1, 19370, oracle.kernel_time_ns(ks))
    assert dev.gpu_all_ops_ns >= dev.gpu_kernel_ns
    assert [(s.stream, s.kernels, s.gpu_kernel_ns) for s in top.streams] == [
        (7, 17350, 620_516_000), (14, 2020, 357_343_000)]
    assert [(s, len(v), oracle.kernel_time_ns(v)) for s, v in sorted(per_stream.items())] == [
        (7, 17350, 620_516_000), (14, 2020, 357_343_000)]
    (rank,) = top.ranks
    assert rank.gpu_kernel_ns == oracle.kernel_time_ns(ks) and rank.cpu_self_ns
    # every kernel of this trace has its launch call: the launching process owns them all
    assert top.processes[0].gpu_kernel_ns == oracle.kernel_time_ns(ks)
    # one row of each only: the limit applies
    assert [len(x) for x in top_entities(store, 1).to_dict().values()] == [1, 1, 1, 1]
