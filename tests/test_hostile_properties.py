"""Property tests over every reader's entry point (issue 18), with hypothesis.

Inputs: real captures from ../shared/data mutated (cut at an offset, bytes overwritten,
random bytes inserted, a chunk duplicated) and generated Kineto traces whose times and
fields take hostile values (NaN/±inf, ints past 64 bits, text, negative durations).

Property, for each input, through `read_all` (the readers' entry point) and `analyze`:
either a typed refusal (status ≠ ok with a one-line reason) or a result whose invariants
hold — counts ≥ 0, every GPU op's duration ≥ 0, GPU busy ≤ the kernel span, busy % in
[0, 100], no NaN/inf in the numbers the recap prints. Nothing else may escape.

Bounded run time: derandomized (the same examples on every run, no example database),
max_examples per test set by HOSTILE_EXAMPLES (default 12: ~1–2 min on 2 cores).
"""

from __future__ import annotations

import gzip
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis not installed (test extra)")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import SHARED_DATA  # noqa: E402
from crossview.analysis import analyze_store  # noqa: E402
from crossview.errors import CrossviewError  # noqa: E402
from crossview.sources import guard  # noqa: E402
from crossview.sources.artifact_report import NOT_REJECTED  # noqa: E402
from crossview.sources.registry import read_all  # noqa: E402
from crossview.store.store import Store  # noqa: E402

DATA = SHARED_DATA
N = int(os.environ.get("HOSTILE_EXAMPLES", "12"))
SETTINGS = settings(max_examples=N, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# (file name it is written under, real capture) — small ones, so each example is quick
BASES = {
    "trace.pt.trace.json": DATA / "kineto" / "tracelens_mi300x_vllm_decode_full_graph.json.gz",
    "report.sqlite": DATA / "nsys" / "nvfuser_h200_nsys2024.6.sqlite",
    "decode_cuda_gpu_kern_sum.csv": DATA / "nsys" / "llm-perf-opt_rtx5090_deepseek-ocr"
    / "decode_cuda_gpu_kern_sum.csv",
    "kernel_ncu.details.csv": DATA / "ncu" / "llm-perf-opt_rtx5090_deepseek-ocr"
    / "kernel_0001_ncu.details.csv",
    "vllm.prom": DATA / "metrics" / "vllm_v1_metrics_idle.prom",
    "smi.txt": DATA / "metrics" / "nvidia-smi_h100_capture.txt",
}
_CACHE: dict[str, bytes] = {}


def _base(name: str) -> bytes:
    if name not in _CACHE:
        src = BASES[name]
        if not src.is_file():
            pytest.skip(f"{src} absent (../shared/data)")
        raw = src.read_bytes()
        _CACHE[name] = gzip.decompress(raw) if src.suffix == ".gz" else raw
    return _CACHE[name]


@pytest.fixture(autouse=True, scope="module")
def _deep() -> None:
    guard.deep_stacks()


def _finite(x: Any) -> bool:
    return not isinstance(x, float) or math.isfinite(x)


def check(path: Path) -> None:
    """The property: a typed refusal, or invariants that hold."""
    store = Store()
    try:
        reports = read_all([path], store)
        for r in reports:
            assert r.status in ("ok", "partial", "skipped", "empty", "invalid", "unsupported",
                                "refused"), r
            if r.status != "ok":
                assert r.problems and all(p.strip() and "\n" not in p for p in r.problems), r
        if not any(r.status in ("ok", "partial") for r in reports):
            return
        assert all(r.status in NOT_REJECTED for r in reports)
        neg = store.sql("SELECT count(*) FROM gpu_ops WHERE dur_ns < 0").fetchall()[0][0]
        assert neg == 0, "a GPU op with a negative duration was stored"
        try:
            result = analyze_store(store, reports)
        except CrossviewError:
            return  # e.g. a filter/scope that cannot be resolved: a typed error
        v = result.views
        assert v is not None
        m = v.metrics
        assert m.kernel_count >= 0 and m.kernel_time_ns >= 0
        assert 0 <= m.kernel_busy_ns <= max(m.kernel_span_ns, 0) or m.kernel_count == 0
        assert 0.0 <= m.kernel_busy_pct <= 100.0 + 1e-9
        for f in result.findings:
            d = f.to_dict()
            nums = [x for x in json.dumps(d, default=str).split() if x]
            assert "NaN" not in nums and "Infinity" not in nums, d
            share = d.get("share")
            if isinstance(share, int | float):
                assert 0.0 <= share <= 1.0 + 1e-9, d
        for name in ("kernel_busy_pct", "kernel_time_ns", "kernel_span_ns"):
            assert _finite(getattr(m, name))
    finally:
        store.close()


def _write(name: str, data: bytes) -> tuple[Path, tempfile.TemporaryDirectory[str]]:
    tmp = tempfile.TemporaryDirectory(prefix="crossview-prop-")
    p = Path(tmp.name) / name
    p.write_bytes(data)
    return p, tmp


mutation = st.sampled_from(["cut", "overwrite", "insert", "duplicate"])


@SETTINGS
@given(name=st.sampled_from(sorted(BASES)), how=mutation, at=st.floats(0.0, 1.0),
       junk=st.binary(min_size=1, max_size=64))
def test_mutated_real_captures(name: str, how: str, at: float, junk: bytes) -> None:
    raw = _base(name)
    i = int(len(raw) * at)
    if how == "cut":
        data = raw[:i]
    elif how == "overwrite":
        data = raw[:i] + junk + raw[i + len(junk):]
    elif how == "insert":
        data = raw[:i] + junk + raw[i:]
    else:
        data = raw[:i] + raw[max(0, i - 4096):i] + raw[i:]
    path, tmp = _write(name, data)
    with tmp:
        check(path)


hostile_number = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=8), st.none(), st.booleans(),
)
event = st.fixed_dictionaries({
    "ph": st.sampled_from(["X", "X", "X", "i", "s"]),
    "cat": st.sampled_from(["kernel", "cuda_runtime", "cpu_op", "python_function",
                            "gpu_memcpy", "user_annotation"]),
    "name": st.text(max_size=12),
    "pid": st.one_of(st.integers(-5, 5), st.text(max_size=3)),
    "tid": st.one_of(st.integers(-5, 5), st.text(max_size=3)),
    "ts": st.one_of(st.floats(0, 1e6), hostile_number),
    "dur": st.one_of(st.floats(0, 1e4), hostile_number),
    "args": st.fixed_dictionaries({"correlation": st.one_of(st.integers(0, 5), hostile_number),
                                   "device": st.one_of(st.integers(0, 2), hostile_number),
                                   "stream": st.one_of(st.integers(0, 9), hostile_number)}),
})


def _dumps(doc: Any) -> bytes:
    # JSON has no NaN/Infinity literals: write them as the out-of-range numbers a broken
    # exporter would (1e999 parses as infinity)
    text = json.dumps(doc, allow_nan=True)
    return text.replace("-Infinity", "-1e999").replace("Infinity", "1e999").replace(
        "NaN", "null").encode()


@SETTINGS
@given(events=st.lists(event, min_size=0, max_size=30),
       props=st.lists(st.fixed_dictionaries({"id": hostile_number,
                                             "totalGlobalMem": hostile_number,
                                             "numSms": hostile_number}), max_size=2))
def test_generated_kineto_traces(events: list[dict[str, Any]], props: list[dict[str, Any]]
                                 ) -> None:
    path, tmp = _write("gen.pt.trace.json", _dumps({"traceEvents": events,
                                                     "deviceProperties": props}))
    with tmp:
        check(path)


@SETTINGS
@given(lines=st.lists(st.tuples(st.lists(st.text(alphabet=st.characters(
    blacklist_characters=";\n\r ", blacklist_categories=("Cs",)), min_size=1, max_size=6),
    min_size=1, max_size=40), st.one_of(st.integers(-3, 2**66), st.floats())), max_size=20),
       cut=st.booleans())
def test_generated_folded_stacks(lines: list[tuple[list[str], Any]], cut: bool) -> None:
    text = "".join(f"{';'.join(fs)} {w}\n" for fs, w in lines)
    if cut and text:
        text = text[:-3]
    path, tmp = _write("gen.folded", text.encode("utf-8", "surrogatepass"))
    with tmp:
        check(path)
