"""Bad and edge-case inputs to ``crossview analyze``.

All inputs here are SYNTHETIC edge cases written into ``tmp_path`` (empty, truncated, corrupt,
wrong-format, CPU-only files), except that the truncated gzip and the bundle's good member are
made from the small real MI300X capture in ../shared/data (those tests skip without it).

Contract (conventions.md §8 and the CLI brief): exit 2 when any input is rejected, exactly one
``crossview: error: <path>: <problem>`` line on stderr per rejected input, never a traceback;
the other inputs of a bundle are still analyzed and printed.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import oracle
from conftest import SHARED_DATA, SHARED_DATA_ABSENT, run_cli

DATA_DIR = SHARED_DATA
MI300X = DATA_DIR / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
SKIP_REASON = SHARED_DATA_ABSENT
ERROR_PREFIX = "crossview: error:"
CLI_TIMEOUT_S = 300


def analyze_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("analyze", *args, timeout=CLI_TIMEOUT_S)  # a hang is a failure too


def real_mi300x() -> Path:
    if not MI300X.is_file():
        pytest.skip(SKIP_REASON)
    return MI300X


def assert_one_error_line(proc: subprocess.CompletedProcess[str], file_name: str) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    assert "Traceback" not in proc.stdout, proc.stdout[-4000:]
    assert proc.returncode == 2, f"exit {proc.returncode}; stderr:\n{proc.stderr[-4000:]}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected exactly one stderr line, got {len(lines)}:\n{proc.stderr}"
    line = lines[0]
    assert line.startswith(ERROR_PREFIX), line
    assert file_name in line, f"{file_name!r} not named in {line!r}"
    return line


# --------------------------------------------------------------------------- synthetic files


def write_empty(tmp: Path) -> Path:
    path = tmp / "empty.json"
    path.write_bytes(b"")
    return path


def write_truncated_gzip(tmp: Path) -> Path:
    raw = real_mi300x().read_bytes()
    path = tmp / "truncated.pt.trace.json.gz"
    path.write_bytes(raw[: len(raw) // 2])
    return path


def write_invalid_json(tmp: Path) -> Path:
    path = tmp / "invalid.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.0,')
    return path


def write_not_a_trace_object(tmp: Path) -> Path:
    path = tmp / "not_a_trace_object.json"
    path.write_text(json.dumps({"foo": 1}))
    return path


def write_not_a_trace_list(tmp: Path) -> Path:
    path = tmp / "not_a_trace_list.json"
    path.write_text(json.dumps([1, 2, 3]))
    return path


def write_empty_trace_events(tmp: Path) -> Path:
    path = tmp / "empty_events.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": []}))
    return path


def write_binary_garbage(tmp: Path) -> Path:
    path = tmp / "garbage.json"
    # Starts with bytes that are neither a gzip magic nor JSON; seeded so it is reproducible.
    path.write_bytes(b"\x00\xff\xfe\x7f" + random.Random(20240101).randbytes(8192))
    return path


BAD_INPUTS: dict[str, Callable[[Path], Path]] = {
    "empty-file": write_empty,
    "truncated-gzip": write_truncated_gzip,
    "invalid-json": write_invalid_json,
    "json-object-not-a-trace": write_not_a_trace_object,
    "json-list-not-a-trace": write_not_a_trace_list,
    "empty-traceEvents": write_empty_trace_events,
    "binary-garbage": write_binary_garbage,
}


@pytest.mark.parametrize("writer", BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
def test_bad_input_is_rejected_with_one_line(tmp_path: Path, writer: Callable) -> None:
    path = writer(tmp_path)
    proc = analyze_cli(str(path), "--format", "json")
    assert_one_error_line(proc, path.name)


def test_nonexistent_path(tmp_path: Path) -> None:
    path = tmp_path / "does_not_exist.pt.trace.json.gz"
    proc = analyze_cli(str(path), "--format", "json")
    assert_one_error_line(proc, path.name)


# --------------------------------------------------------------------------- bundle


@pytest.mark.parametrize(
    "writer", [write_truncated_gzip, write_invalid_json], ids=["truncated-gzip", "invalid-json"]
)
def test_bundle_with_one_bad_file_still_analyzes_the_good_one(
    tmp_path: Path, writer: Callable
) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    good = bundle / MI300X.name
    shutil.copyfile(real_mi300x(), good)
    bad = writer(bundle)

    want = oracle.summarize(str(good))["kernel_count"]
    assert want == 425  # the small MI300X capture (oracle == README's 421 graph + 4 eager)

    proc = analyze_cli(str(bundle), "--format", "json")
    assert_one_error_line(proc, bad.name)
    doc = json.loads(proc.stdout)
    assert doc["metrics"]["kernel_count"] == want

    by_name = {Path(a["path"]).name: a for a in doc["artifacts"]}
    assert bad.name in by_name, doc["artifacts"]
    assert good.name in by_name, doc["artifacts"]
    rejected = by_name[bad.name]
    assert rejected["status"] != "ok", rejected
    assert isinstance(rejected["problems"], list) and rejected["problems"], rejected
    assert all(isinstance(p, str) and p for p in rejected["problems"]), rejected
    assert by_name[good.name]["status"] == "ok", by_name[good.name]


# --------------------------------------------------------------------------- CPU-only


def write_cpu_only_trace(tmp: Path) -> Path:
    # Synthetic: a host-only capture (profiler run without CUDA activity): python frames and
    # operators on one thread, no kernels, no runtime calls.
    events = [
        {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "python3"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "main"}},
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 7,
            "tid": 7,
            "ts": 1000.0,
            "dur": 900.0,
            "args": {},
        },
        {
            "ph": "X",
            "cat": "python_function",
            "name": "train.py(12): step",
            "pid": 7,
            "tid": 7,
            "ts": 1010.0,
            "dur": 800.0,
            "args": {"Python id": 1},
        },
        {
            "ph": "X",
            "cat": "python_function",
            "name": "torch/nn/modules/linear.py(116): forward",
            "pid": 7,
            "tid": 7,
            "ts": 1020.0,
            "dur": 400.0,
            "args": {"Python id": 2},
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::linear",
            "pid": 7,
            "tid": 7,
            "ts": 1030.0,
            "dur": 380.0,
            "args": {"External id": 1},
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::addmm",
            "pid": 7,
            "tid": 7,
            "ts": 1040.0,
            "dur": 350.0,
            "args": {"External id": 2},
        },
        {
            "ph": "X",
            "cat": "cpu_op",
            "name": "aten::relu",
            "pid": 7,
            "tid": 7,
            "ts": 1450.0,
            "dur": 120.0,
            "args": {"External id": 3},
        },
        {
            "ph": "X",
            "cat": "python_function",
            "name": "<built-in method sum of Tensor object>",
            "pid": 7,
            "tid": 7,
            "ts": 1600.0,
            "dur": 90.0,
            "args": {"Python id": 3},
        },
    ]
    path = tmp / "cpu_only.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


def test_cpu_only_trace(tmp_path: Path) -> None:
    path = write_cpu_only_trace(tmp_path)
    assert oracle.summarize(str(path))["kernel_count"] == 0

    proc = analyze_cli(str(path), "--format", "json")
    assert "Traceback" not in proc.stderr, proc.stderr[-4000:]
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert ERROR_PREFIX not in proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["metrics"]["cpu_only"] is True
    assert doc["metrics"]["kernel_count"] == 0
    assert doc["cpu_view"]["total_ns"] > 0, doc["cpu_view"]

    md = analyze_cli(str(path), "--format", "md")
    assert "Traceback" not in md.stderr, md.stderr[-4000:]
    assert md.returncode == 0, md.stderr[-4000:]
    assert "CPU-only" in md.stdout, md.stdout[:2000]
