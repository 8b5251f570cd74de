"""Kineto event categories and the column schema DuckDB parses events into (data, not logic).

Modern `cat` values and their legacy (2021) equivalents, from formats.md and real traces.
Every `args` field is read as VARCHAR and cast with TRY_CAST, so a hostile or odd value
becomes NULL instead of failing the whole file.
"""

from __future__ import annotations

# Event fields and the `args` fields crossview uses. (DuckDB matches keys case-sensitively
# and a STRUCT cannot hold both "External id" and legacy "external id"; linking uses
# `correlation`, which both schemas carry, so the external id is not read.)
_ARGS = ", ".join(
    f'"{k}" VARCHAR'
    for k in (
        "correlation", "device", "stream", "Call stack", "bytes", "grid", "block",
        "registers per thread", "Collective name", "Process Group Name", "Seq",
        # recorded shapes (record_shapes=True) and collective sizes: stored as read in
        # op_args (JSON text for the lists); the operator models (crossview.opmodels) read them
        "Input Dims", "Input type", "Concrete Inputs", "In msg nelems", "Out msg nelems",
        "Group size", "dtype",
    )
)
COLUMNS = (
    "{ph: 'VARCHAR', cat: 'VARCHAR', name: 'VARCHAR', ts: 'DOUBLE', dur: 'DOUBLE', "
    "pid: 'VARCHAR', tid: 'VARCHAR', "
    f"args: 'STRUCT({_ARGS})'}}"
)
# flow events (ph s/f), parsed only when some GPU op lacks a correlation id
FLOW_COLUMNS = (
    "{ph: 'VARCHAR', cat: 'VARCHAR', id: 'VARCHAR', ts: 'DOUBLE', pid: 'VARCHAR', "
    "tid: 'VARCHAR'}"
)

HOST_KINDS = {
    "cuda_runtime": "runtime", "cuda_driver": "runtime", "Runtime": "runtime",
    "cpu_op": "op", "Operator": "op",
    "python_function": "python",
    "user_annotation": "annotation",
}
GPU_KINDS = {
    "kernel": "kernel", "Kernel": "kernel",
    "gpu_memcpy": "memcpy", "Memcpy": "memcpy",
    "gpu_memset": "memset", "Memset": "memset",
}
FLOW_CATS = ("ac2g", "async_cpu_to_gpu", "async")


def _in(values: object) -> str:
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"  # type: ignore[attr-defined]


def _case(mapping: dict[str, str]) -> str:
    whens = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in mapping.items())
    return f"CASE cat {whens} END"


HOST_CATS = _in(HOST_KINDS)
COPY_CATS = _in(k for k, v in GPU_KINDS.items() if v != "kernel")
GPU_CATS = _in(GPU_KINDS)
HOST_KIND_SQL = _case(HOST_KINDS)
# `ev.side`, computed once at parse time so later scans filter on a small integer instead of
# comparing `cat` strings (each such scan of 0.9 M events: ~25 ms → ~3 ms). A CASE, not
# `cat IN (…)`: DuckDB plans a long IN list as a join, which would not keep the file's order
HOST_SIDE, GPU_SIDE = 1, 2
SIDE_SQL = (
    "CAST(CASE cat "
    + " ".join(f"WHEN '{k}' THEN {HOST_SIDE}" for k in HOST_KINDS)
    + " " + " ".join(f"WHEN '{k}' THEN {GPU_SIDE}" for k in GPU_KINDS)
    + " ELSE 0 END AS UTINYINT)"
)
IS_HOST = f"side = {HOST_SIDE}"
IS_GPU = f"side = {GPU_SIDE}"
GPU_KIND_SQL = _case(GPU_KINDS)


def _first(a: str, b: str) -> str:
    """coalesce(a, b) as a CASE: DuckDB evaluates a CASE branch only on the rows that take
    it, a coalesce's every argument on every row (the regexp on `tid`: 156 k kernels,
    35 → 14 ms)."""
    return f"CASE WHEN {a} IS NOT NULL THEN {a} ELSE {b} END"


# Modern traces put device/stream in args; legacy ones use pid = device, tid = "stream N".
DEVICE_SQL = _first("TRY_CAST(args.device AS INTEGER)", "TRY_CAST(pid AS INTEGER)")
STREAM_OF_TID = "TRY_CAST(nullif(regexp_extract(tid, '(\\d+)\\s*$', 1), '') AS BIGINT)"
STREAM_SQL = _first("TRY_CAST(args.stream AS BIGINT)", STREAM_OF_TID)
FLOW_CATS_SQL = _in(FLOW_CATS)
