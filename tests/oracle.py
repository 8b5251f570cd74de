"""Independent, standard-library-only oracle for Kineto (PyTorch profiler) Chrome traces.

The tests compare crossview's output against numbers computed here straight from the raw JSON
(``gzip`` + ``json`` + ``decimal``), so this module must never import crossview. Floats are parsed
as ``Decimal`` so that µs → ns conversion (ns = round(µs × 1000)) is exact.

Numbers this oracle produced on ../shared/data/kineto (``python tests/oracle.py`` prints them),
cross-checked against the independently measured facts in ../shared/data/README.md:

| trace (kineto/…)                        | kernels | kernel time ns | busy ns     | span ns       |
|-----------------------------------------|---------|----------------|-------------|---------------|
| hta_a100_16rank_training_graphs         |   6,080 |    401,445,000 | 396,315,000 | 1,227,177,000 |
| hta_a100_ddp_resnet_nccl                |   2,700 |    162,532,340 | 155,215,315 |   660,551,005 |
| hta_v100_ddp_training                   |  19,370 |    977,859,000 | 977,859,000 | 1,732,965,000 |
| tracelens_b200_vllm_eager_prefill_tp8   |     768 |     10,862,916 |  10,793,638 |    83,365,710 |
| tracelens_h100_hf_qwen1.5_0.5b_forward  |   1,465 |     45,432,698 |  45,432,698 |    49,652,832 |
| tracelens_mi300x_vllm_decode_full_graph |     425 |     10,674,517 |  10,674,517 |    10,699,981 |

| trace        | busy %  | streams | nccl % | comm % | exposed comm | graph → kernels | no launch |
|--------------|---------|---------|--------|--------|--------------|-----------------|-----------|
| a100_16rank  | 32.2949 |       5 | 47.415 | 47.415 |  185,317,000 | 70 cuda → 135   |       705 |
| a100_ddp     | 23.4979 |       2 | 28.841 | 28.841 |   39,559,468 |  0 → 0          |         0 |
| v100_ddp     | 56.4269 |       2 | 36.543 | 36.543 |  357,343,000 |  0 → 0          |         0 |
| b200_eager   | 12.9473 |       1 |  0.202 | 19.714 |    2,141,501 |  0 → 0          |         0 |
| h100_qwen    | 91.5007 |       1 |  0.000 |  0.000 |            0 |  0 → 0          |       436 |
| mi300x_graph | 99.7620 |       1 |  0.000 |  0.000 |            0 |  1 hip → 421    |         0 |

(Rows of the second table are the same traces in the same order. nccl % / comm % are shares of
kernel time; "exposed comm" is comm kernel time (ns) that no non-comm kernel on any stream overlaps;
"graph → kernels" counts cudaGraphLaunch / hipGraphLaunch calls and the kernels sharing their
correlation; "no launch" counts kernels whose correlation matches no runtime/driver event.)

README check: every README fact matches (2,700 / 6,080 / 19,370 / 768 / 1,465 kernels; busy ~24%,
~32%, ~56%, ~13%, ~92%, ~99.8%; comm ≈ 29%, ≈ 47%, ≈ 36%; 21 NCCL kernels in the DDP ResNet
trace, 2,020 in the V100 one; 70 cudaGraphLaunch → 135 kernels; 705 uncaptured launches; one
hipGraphLaunch → 421 kernels; 5 streams in the 16-rank trace, streams 7 and 40 in the DDP one).

Comm kernel names (checked by hand): A100/V100 traces hold only ``ncclKernel_*`` kernels
(AllReduce/Broadcast RING_LL in the DDP ResNet trace, SendRecv RING_SIMPLE in the 16-rank one,
AllReduce RING_LL in the V100 one), so "nccl" share == comm share there. The B200 trace has ONE
NCCL kernel (``ncclDevKernel_AllGather_RING_LL``, 0.2% of kernel time) plus 73
``(anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>`` kernels (PyTorch
symmetric-memory all-reduce, no "nccl" in the name): comm share 19.7% vs nccl share 0.2%.
Note that this name also contains "reduce_kernel" (the formats.md *reduction* family), so a
classifier must test comm before reduction (the table's order) to get 19.7%.
``comm_share`` uses the comm substrings of the kernel-family table in ../shared/docs/formats.md;
``nccl_share`` only "nccl". H100 and MI300X traces have no comm kernels.

Surprises found while building this:
- The H100 trace also has 436 kernels (the first ~14 ms of the kernel span) whose launch call is
  not in the trace, although README only mentions this for the 16-rank A100 trace. Their ``ac2g``
  flow has only the "f" (GPU) end, and these kernels carry no ``External id``.
- In the 16-rank A100 trace, 12 of the 705 uncaptured kernels are graph replays too (one
  correlation shared by 8 kernels, two by 2) whose cudaGraphLaunch happened before the window;
  they count as "launch not captured", not as graph kernels. The 70 captured graph launches
  replay 1 (35×), 2 (30×) or 8 (5×) kernels.
- The 16-rank A100 and V100 traces carry ``cuda_runtime`` events named "INVALID" (cbid 409) that
  correlate with no GPU activity.
- B200: 74 kernels start before the previous kernel on the SAME stream has ended (69.3 µs of
  overlap in all), every one of them launched with cudaLaunchKernelExC / cuLaunchKernelEx
  (programmatic dependent launch). So busy (union) < kernel time even on one stream; summing
  durations instead of a union gives 13.03% busy instead of 12.95%.
- V100: the NCCL stream (14) and the compute stream (7) never overlap (busy == kernel time), so
  all 357 ms of all-reduce is exposed. 16-rank A100: 97.4% of the SendRecv time is exposed.
- MI300X (ROCm) kernels sit on pid 2 / tid 0 with ``args.stream`` 0; timestamps are floats.
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path

from conftest import SHARED_DATA

KERNEL_CATS = frozenset({"kernel", "Kernel"})  # modern / legacy (2021) Kineto
LAUNCH_CATS = frozenset({"cuda_runtime", "cuda_driver", "Runtime", "Driver"})
GRAPH_LAUNCH_NAMES = frozenset({"cudaGraphLaunch", "hipGraphLaunch"})
# "comm" family substrings from the kernel-family table in ../shared/docs/formats.md.
COMM_SUBSTRINGS = (
    "nccl",
    "all_reduce",
    "allreduce",
    "all_gather",
    "reduce_scatter",
    "alltoall",
    "sendrecv",
    "multimem",
    "cross_device_reduce",
    "deepep",
)

DATA_DIR = SHARED_DATA
KINETO_DIR = DATA_DIR / "kineto"

TRACES = (
    "hta_a100_16rank_training_graphs.json.gz",
    "hta_a100_ddp_resnet_nccl.json.gz",
    "hta_v100_ddp_training.json.gz",
    "tracelens_b200_vllm_eager_prefill_tp8.json.gz",
    "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz",
    "tracelens_mi300x_vllm_decode_full_graph.json.gz",
)


# --------------------------------------------------------------------------- loading


def load_trace(path: str | Path) -> dict:
    """Load a .json or .json.gz Chrome trace (gzip detected by its magic bytes).

    A bare JSON array (the Chrome trace "array form") is wrapped as ``{"traceEvents": [...]}``.
    """
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw, parse_float=Decimal)
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError(f"{path}: not a Chrome trace (no traceEvents list)")
    if not all(isinstance(e, dict) for e in doc["traceEvents"]):
        raise ValueError(f"{path}: traceEvents holds non-object entries")
    return doc


def us_to_ns(value: int | Decimal | float | str) -> int:
    """Kineto µs (int, float or Decimal) → integer ns, ns = round(µs × 1000)."""
    return int(round(Decimal(str(value)) * 1000))


def events(trace: dict) -> list[dict]:
    return trace["traceEvents"]


def complete_events(path: str | Path) -> list[dict]:
    """The timed (``ph`` X) events of a trace file, ts/dur as Decimal µs."""
    return [e for e in events(load_trace(path)) if e.get("ph") == "X"]


# --------------------------------------------------------------------------- kernels


@dataclass(frozen=True)
class Kernel:
    name: str
    start_ns: int
    dur_ns: int
    device: object
    stream: object
    correlation: object

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.dur_ns


def kernels(trace: dict) -> list[Kernel]:
    out = []
    for e in events(trace):
        if e.get("ph") != "X" or e.get("cat") not in KERNEL_CATS:
            continue
        args = e.get("args") or {}
        out.append(
            Kernel(
                name=str(e.get("name", "")),
                start_ns=us_to_ns(e["ts"]),
                dur_ns=us_to_ns(e.get("dur", 0)),
                device=args.get("device", e.get("pid")),
                stream=args.get("stream", e.get("tid")),
                correlation=args.get("correlation"),
            )
        )
    out.sort(key=lambda k: (k.start_ns, k.end_ns))
    return out


def kernel_count(ks: list[Kernel]) -> int:
    return len(ks)


def kernel_time_ns(ks: Iterable[Kernel]) -> int:
    return sum(k.dur_ns for k in ks)


def kernel_span_ns(ks: list[Kernel]) -> int:
    if not ks:
        return 0
    return max(k.end_ns for k in ks) - min(k.start_ns for k in ks)


def union_intervals(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge [start, end) intervals into a sorted list of disjoint ones."""
    merged: list[list[int]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def union_length(intervals: Iterable[tuple[int, int]]) -> int:
    return sum(e - s for s, e in union_intervals(intervals))


def kernel_busy_ns(ks: Iterable[Kernel]) -> int:
    return union_length((k.start_ns, k.end_ns) for k in ks)


def kernel_busy_pct(ks: list[Kernel]) -> float:
    span = kernel_span_ns(ks)
    return 100.0 * kernel_busy_ns(ks) / span if span else 0.0


def streams(ks: Iterable[Kernel]) -> set[tuple[object, object]]:
    return {(k.device, k.stream) for k in ks}


# --------------------------------------------------------------------------- communication


def is_nccl(name: str) -> bool:
    return "nccl" in name.lower()


def is_comm(name: str) -> bool:
    low = name.lower()
    return any(s in low for s in COMM_SUBSTRINGS)


def nccl_share(ks: list[Kernel]) -> float:
    """Fraction (0..1) of kernel time in kernels whose name contains "nccl"."""
    total = kernel_time_ns(ks)
    return kernel_time_ns(k for k in ks if is_nccl(k.name)) / total if total else 0.0


def comm_share(ks: list[Kernel]) -> float:
    """Fraction (0..1) of kernel time in communication kernels (formats.md comm family)."""
    total = kernel_time_ns(ks)
    return kernel_time_ns(k for k in ks if is_comm(k.name)) / total if total else 0.0


def exposed_comm_ns(ks: list[Kernel]) -> int:
    """Comm kernel time not overlapped by any non-comm kernel (any stream)."""
    comm = union_intervals((k.start_ns, k.end_ns) for k in ks if is_comm(k.name))
    other = union_intervals((k.start_ns, k.end_ns) for k in ks if not is_comm(k.name))
    exposed = 0
    j = 0
    for cs, ce in comm:
        covered = 0
        while j < len(other) and other[j][1] <= cs:
            j += 1
        i = j
        while i < len(other) and other[i][0] < ce:
            covered += min(ce, other[i][1]) - max(cs, other[i][0])
            i += 1
        exposed += (ce - cs) - covered
    return exposed


# --------------------------------------------------------------------------- launches / graphs


def launch_events(trace: dict) -> dict[object, list[dict]]:
    """Runtime/driver API events keyed by ``args.correlation``."""
    out: dict[object, list[dict]] = defaultdict(list)
    for e in events(trace):
        if e.get("ph") == "X" and e.get("cat") in LAUNCH_CATS:
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                out[corr].append(e)
    return out


def idle_breakdown(trace: dict, ks: list[Kernel] | None = None, short_ns: int = 30_000) -> dict:
    """Per-stream GPU idle gaps split the way formats.md describes HTA's method.

    A gap before a kernel is *host wait* when that kernel's launch call started at or after the
    previous kernel (on the same stream) ended; else *kernel wait* when shorter than
    ``short_ns`` (HTA: 30 µs); else *other*. Kernels with no launch call in the trace cannot be
    host wait. Only used to explain findings; the tests check the parts' sum, not the split.
    """
    ks = kernels(trace) if ks is None else ks
    launches = launch_events(trace)
    per_stream: dict[tuple[object, object], list[Kernel]] = defaultdict(list)
    for k in ks:
        per_stream[(k.device, k.stream)].append(k)
    out = {"host_wait_ns": 0, "kernel_wait_ns": 0, "other_ns": 0}
    for sk in per_stream.values():
        sk.sort(key=lambda k: (k.start_ns, k.end_ns))
        prev_end = sk[0].end_ns
        for k in sk[1:]:
            gap = k.start_ns - prev_end
            if gap > 0:
                calls = launches.get(k.correlation)
                if calls and us_to_ns(calls[0]["ts"]) >= prev_end:
                    out["host_wait_ns"] += gap
                elif gap < short_ns:
                    out["kernel_wait_ns"] += gap
                else:
                    out["other_ns"] += gap
            prev_end = max(prev_end, k.end_ns)
    return out


def graph_attribution(trace: dict, ks: list[Kernel] | None = None) -> list[tuple[dict, list]]:
    """For each graph-launch runtime event, the kernels sharing its correlation."""
    ks = kernels(trace) if ks is None else ks
    by_corr: dict[object, list[Kernel]] = defaultdict(list)
    for k in ks:
        by_corr[k.correlation].append(k)
    out = []
    for e in events(trace):
        if (
            e.get("ph") == "X"
            and e.get("cat") in LAUNCH_CATS
            and e.get("name") in GRAPH_LAUNCH_NAMES
        ):
            corr = (e.get("args") or {}).get("correlation")
            out.append((e, by_corr.get(corr, [])))
    return out


def graph_kernel_count(trace: dict, ks: list[Kernel] | None = None) -> int:
    return sum(len(g) for _, g in graph_attribution(trace, ks))


def missing_launch_kernels(trace: dict, ks: list[Kernel] | None = None) -> list[Kernel]:
    """Kernels whose correlation matches no runtime/driver event in the trace."""
    ks = kernels(trace) if ks is None else ks
    launches = launch_events(trace)
    return [k for k in ks if k.correlation not in launches]


# --------------------------------------------------------------------------- summary


@cache
def summarize(path: str) -> dict:
    """All oracle numbers for one trace (cached per process)."""
    trace = load_trace(path)
    ks = kernels(trace)
    graphs = graph_attribution(trace, ks)
    span = kernel_span_ns(ks)
    busy = kernel_busy_ns(ks)
    return {
        "kernel_count": kernel_count(ks),
        "kernel_time_ns": kernel_time_ns(ks),
        "kernel_span_ns": span,
        "kernel_busy_ns": busy,
        "kernel_busy_pct": 100.0 * busy / span if span else 0.0,
        "streams": len(streams(ks)),
        "nccl_share": nccl_share(ks),
        "comm_share": comm_share(ks),
        "nccl_kernels": sum(1 for k in ks if is_nccl(k.name)),
        "comm_kernels": sum(1 for k in ks if is_comm(k.name)),
        "exposed_comm_ns": exposed_comm_ns(ks),
        "graph_launches": len(graphs),
        "graph_launch_names": sorted({str(e.get("name")) for e, _ in graphs}),
        "graph_kernels": sum(len(g) for _, g in graphs),
        "missing_launch_kernels": len(missing_launch_kernels(trace, ks)),
        "idle": idle_breakdown(trace, ks),
        "python_function_events": sum(
            1 for e in events(trace) if e.get("cat") == "python_function"
        ),
    }


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv] or [KINETO_DIR / t for t in TRACES]
    for p in paths:
        s = summarize(str(p))
        print(p.name)
        for key, value in s.items():
            if isinstance(value, float):
                value = f"{value:.6f}"
            elif isinstance(value, int) and not isinstance(value, bool):
                value = f"{value:,}"
            print(f"  {key:24s} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
