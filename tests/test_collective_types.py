"""Collective types: the kernel's args, then the op holding its launch call, then its name
(knowledge/collectives.yaml; views/distributed/comm_bandwidth.py and collectives.py; the NCCL
finding's "by collective" sentence).

The real case is hta_a100_16rank_training_graphs: all 80 NCCL kernels are named
`ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t` (NCCL 2.12–2.13 name kernels after one function,
NVIDIA/nccl#714), while the ProcessGroupNCCL range around each launch says all_reduce,
all_to_all, _all_gather_base or _reduce_scatter_base. The expected counts and times are
recomputed here from the raw trace JSON (kernel → runtime call by correlation id → the
`nccl:*` event on the same thread that contains the call), not from crossview's store.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from functools import cache
from pathlib import Path

from conftest import SHARED_DATA, shared_file
from crossview.analysis import Analysis, analyze
from crossview.knowledge.collectives import collective_type, name_misleads, normalize, typed
from crossview.views.distributed.collectives import calls_of

A100_16 = SHARED_DATA / "kineto" / "hta_a100_16rank_training_graphs.json.gz"
B200 = SHARED_DATA / "kineto" / "tracelens_b200_vllm_eager_prefill_tp8.json.gz"
SENDRECV = "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"


@cache
def _analysis(path: Path) -> Analysis:
    return analyze([shared_file(path)])


@cache
def _raw_types(path: Path) -> dict[str, tuple[int, int]]:
    """type → (kernels, summed µs) from the raw JSON; "?" for kernels with no launch call or
    no `nccl:` range around it."""
    with gzip.open(shared_file(path)) as f:
        ev = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    launches = {e["args"]["correlation"]: e for e in ev
                if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    ranges = [e for e in ev if str(e.get("name", "")).startswith("nccl:")]
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for k in ev:
        if k.get("cat") != "kernel" or not k["name"].startswith("ncclKernel"):
            continue
        call = launches.get(k["args"].get("correlation"))
        kind = "?"
        if call is not None:
            around = [r for r in ranges if r["tid"] == call["tid"] and r["pid"] == call["pid"]
                      and r["ts"] <= call["ts"] and call["ts"] + call["dur"] <= r["ts"] + r["dur"]]
            if around:
                kind = normalize(min(around, key=lambda r: r["dur"])["name"][len("nccl:"):])
        out[kind][0] += 1
        out[kind][1] += k["dur"]
    return {t: (n, us) for t, (n, us) in out.items()}


def test_generic_nccl_kernels_are_typed_by_their_launching_op() -> None:
    raw = _raw_types(A100_16)
    # checked by hand too: every ncclKernel of this trace is named SendRecv
    assert set(raw) == {"allreduce", "alltoall", "allgatherbase", "reducescatterbase", "?"}
    assert raw["allreduce"][0] == 10 and raw["alltoall"][0] == 45 and raw["?"][0] == 5
    a = _analysis(A100_16)
    assert a.views is not None
    colls = a.views.comm_bandwidth.collectives
    got: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for c in colls:
        key = "?" if c.typed_by_name == c.count else c.op
        got[key][0] += c.count
        got[key][1] += c.time_ns
    assert {t: (n, ns // 1000) for t, (n, ns) in got.items()} == raw
    # the kernels named SendRecv that ran all-to-all are not "misnamed"; the others are
    assert sum(c.kernel_name_differs for c in colls) == sum(
        raw[t][0] for t in ("allreduce", "allgatherbase", "reducescatterbase"))
    assert "NVIDIA/nccl#714" in a.views.comm_bandwidth.note


def test_dense_allreduce_message_and_a_disproved_ceiling() -> None:
    """The big all-reduce's message is its `nccl:all_reduce` range's input ([[447923396]]
    float in the raw JSON: 1,791,693,584 bytes); its busbw is above one IB NDR NIC, so no
    percentage of that ceiling is printed."""
    a = _analysis(A100_16)
    assert a.views is not None
    big = max((c for c in a.views.comm_bandwidth.collectives if c.op == "allreduce"),
              key=lambda c: c.time_ns)
    assert big.message_bytes == 447_923_396 * 4 and big.count == 5 and big.ranks == 16
    assert big.busbw_bytes_per_s is not None and big.busbw_bytes_per_s > 50e9
    assert big.pct_of_ceiling is None and big.ceiling_bytes_per_s is None
    assert big.ceiling.startswith("none: the busbw exceeds InfiniBand NDR")
    small = min((c for c in a.views.comm_bandwidth.collectives if c.op == "allreduce"),
                key=lambda c: c.time_ns)
    # the same group (stream 84, 16 ranks): the ceiling its big all-reduce disproved does not
    # score the small one either (decision 0803)
    assert (small.group, small.ranks) == (big.group, big.ranks)
    assert small.pct_of_ceiling is None and small.ceiling == big.ceiling


def test_nccl_finding_says_which_collectives_ran() -> None:
    raw = _raw_types(A100_16)
    a = _analysis(A100_16)
    f = next(x for x in a.findings if x.pattern == "nccl-collective-bound")
    n, us = raw["allreduce"]
    assert f"allreduce ×{n} ({us / 1000:.2f} ms)" in f.observation
    n, us = raw["?"]
    assert f"{n} more ({us / 1000:.2f} ms) that record no collective" in f.observation
    assert "NVIDIA/nccl#714" in f.observation
    # the cross-rank records carry the same types
    assert a.views is not None
    store = a.views.store
    aid = store.sql("SELECT artifact_id FROM artifacts").fetchall()[0][0]
    calls = calls_of(store, aid, scoped=False)
    ops: dict[str, int] = defaultdict(int)
    for c in calls:
        ops[c.op] += 1
    assert ops["allreduce"] == raw["allreduce"][0] and ops["alltoall"] == raw["alltoall"][0]


def test_kernels_named_after_their_collective_get_no_sentence() -> None:
    """B200: the all_gather_base kernel (ncclDevKernel_AllGather) records `_allgather_base`:
    the same collective; nothing is said about kernel names."""
    a = _analysis(B200)
    assert a.views is not None
    assert not any(c.kernel_name_differs for c in a.views.comm_bandwidth.collectives)
    assert "NVIDIA/nccl#714" not in a.views.comm_bandwidth.note


def test_type_precedence_and_runs_as() -> None:
    """Synthetic names (no capture needed): args, then the launching op, then the name."""
    assert typed("allreduce", SENDRECV, "nccl:all_to_all") == ("allreduce", False)
    assert typed(None, SENDRECV, "nccl:all_reduce") == ("allreduce", False)
    assert typed(None, SENDRECV, "aten::mm") == ("sendrecv", True)
    assert collective_type(None, SENDRECV) == "sendrecv"
    assert name_misleads(SENDRECV, "allreduce")
    assert not name_misleads(SENDRECV, "alltoall")
    assert not name_misleads("ncclDevKernel_AllGather_RING_LL(x)", "allgatherbase")
    assert not name_misleads("ncclKernel_AllReduce_RING_LL_Sum_float(x)", "allreduce")


def test_one_huge_gradient_bucket_gets_the_bucket_size_fix() -> None:
    """The 16-rank capture's top collective (by kernel time) is DDP's gradient all-reduce of
    447,923,396 fp32 per call (its `nccl:all_reduce` range, raw JSON), ≥ 256 MiB: the NCCL
    fix says to all-reduce in DDP-sized buckets; a cut above the message size turns it off."""
    import msgspec

    from crossview.knowledge.thresholds import defaults

    a = _analysis(A100_16)
    f = next(x for x in a.findings if x.pattern == "nccl-collective-bound")
    assert f.details["big_bucket"]["message_bytes"] == 447_923_396 * 4
    assert f.details["big_bucket"]["calls"] == 5
    assert "1.79 GB in one call (5 such calls" in f.fix and "bucket_cap_mb=25" in f.fix
    assert "The largest all-reduce moves 1.79 GB per call" in f.observation
    cut = msgspec.structs.replace(defaults(), nccl_big_bucket_bytes=447_923_396 * 4 + 1)
    f2 = next(x for x in analyze([shared_file(A100_16)], limits=cut).findings
              if x.pattern == "nccl-collective-bound")
    assert "big_bucket" not in f2.details
    assert f2.fix.startswith("Overlap communication with compute")
    # DDP's own 8–31 MB buckets (A100 DDP ResNet) are not a huge bucket
    a100 = _analysis(SHARED_DATA / "kineto" / "hta_a100_ddp_resnet_nccl.json.gz")
    f3 = next((x for x in a100.findings if x.pattern == "nccl-collective-bound"), None)
    assert f3 is None or "big_bucket" not in f3.details
