"""Sampled-stack readers on SYNTHETIC edge cases (no public sample covers them): pprof files
written by the tiny protobuf encoder below (independent of crossview's decoder: it only
writes varints and length-delimited fields per profile.proto), speedscope evented profiles,
folded headers and CPU/GPU leaf detection, and bad input (one error line each, exit 2, the
rest of the bundle still analyzed). Expected numbers are worked out by hand in comments.
"""

from __future__ import annotations

import gzip
import json
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli
from crossview.analysis import analyze
from crossview.sources.registry import pick_reader

REPO = Path(__file__).resolve().parents[1]
GOOD = REPO / "tests" / "fixtures" / "stacks" / "pyspy_work.folded"


# -- a minimal protobuf writer (profile.proto field numbers) ---------------------------------
def _varint(v: int) -> bytes:
    v &= (1 << 64) - 1  # int64 negatives: two's complement, 10 bytes
    out = bytearray()
    while True:
        b, v = v & 0x7F, v >> 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def _f(num: int, v: int | bytes) -> bytes:
    if isinstance(v, int):
        return _varint(num << 3) + _varint(v)
    return _varint(num << 3 | 2) + _varint(len(v)) + v


def _packed(num: int, vals: list[int]) -> bytes:
    return _f(num, b"".join(_varint(x) for x in vals))


def _profile(types: list[tuple[str, str]], samples: list[tuple[list[int], list[int], int]],
             period: tuple[str, str, int] | None = None) -> bytes:
    """Functions f1 `outer` (app.py), f2 `inlined` (app.py), f3 `leaf` (native);
    location 1 = [f3], location 2 = lines [f2 @20 (innermost), f1 @10], location 3 = an
    unsymbolized address 0x1234 in mapping 1 (/usr/lib/libfoo.so)."""
    strings = ["", "outer", "inlined", "leaf", "app.py", "/usr/lib/libfoo.so", "thread_id"]

    def s(x: str) -> int:
        if x not in strings:
            strings.append(x)
        return strings.index(x)

    out = b"".join(_f(1, _f(1, s(t)) + _f(2, s(u))) for t, u in types)
    for locs, vals, tid in samples:
        out += _f(2, _packed(1, locs) + _packed(2, vals) + _f(3, _f(1, 6) + _f(3, tid)))
    out += _f(3, _f(1, 1) + _f(5, 5))
    out += _f(4, _f(1, 1) + _f(4, _f(1, 3) + _f(2, 0)))
    out += _f(4, _f(1, 2) + _f(4, _f(1, 2) + _f(2, 20)) + _f(4, _f(1, 1) + _f(2, 10)))
    out += _f(4, _f(1, 3) + _f(2, 1) + _f(3, 0x1234))
    out += _f(5, _f(1, 1) + _f(2, 1) + _f(4, 4)) + _f(5, _f(1, 2) + _f(2, 2) + _f(4, 4))
    out += _f(5, _f(1, 3) + _f(2, 3))
    if period:
        out += _f(11, _f(1, s(period[0])) + _f(2, s(period[1]))) + _f(12, period[2])
    return out + b"".join(_f(6, x.encode()) for x in strings)


def _stacks(a) -> dict[tuple[str, ...], tuple[int, int]]:
    """root → leaf frame names of each samples row: (count, weight_ns), from the store."""
    st = a.views.store
    names = {n: (p, nm) for n, p, nm in st.sql(
        "SELECT node_id, parent_node, name FROM frames").fetchall()}
    out = {}
    for node, c, w in st.sql("SELECT node_id, sum(count), sum(weight_ns) FROM samples"
                             " GROUP BY 1").fetchall():
        path = []
        while node is not None:
            node, nm = names[node]
            path.append(nm)
        out[tuple(reversed(path))] = (int(c), int(w))
    return out


def test_pprof_inline_order_unsymbolized_and_tids(tmp_path: Path) -> None:
    p = tmp_path / "cpu.pb.gz"
    # sample A: leaf location 1 called from location 2 → outer › inlined › leaf
    # sample B: the unsymbolized address alone
    p.write_bytes(gzip.compress(_profile(
        [("samples", "count"), ("cpu", "nanoseconds")],
        [([1, 2], [3, 30_000_000], 7), ([3], [1, 10_000_000], 8)])))
    a = analyze([p])
    assert _stacks(a) == {("app.py(10): outer", "app.py(20): inlined", "leaf"): (3, 30_000_000),
                          ("0x1234 (libfoo.so)",): (1, 10_000_000)}
    tids = {r[0] for r in a.views.store.sql("SELECT tid FROM samples").fetchall()}
    assert tids == {"7", "8"}
    kinds = dict(a.views.store.sql("SELECT name, kind FROM frames").fetchall())
    assert kinds["app.py(10): outer"] == "python" and kinds["leaf"] == "native"


def test_pprof_count_only_takes_time_from_the_period(tmp_path: Path) -> None:
    p = tmp_path / "count.pprof"
    p.write_bytes(_profile([("samples", "count")], [([1], [4], 1)],
                           period=("cpu", "nanoseconds", 10_000_000)))
    v = analyze([p]).views
    assert v is not None and v.metrics.cpu_samples == 4
    assert v.metrics.cpu_sampled_ns == 4 * 10_000_000  # 4 samples × 10 ms


def test_pprof_gpu_sample_type_states_the_gpu_view(tmp_path: Path) -> None:
    p = tmp_path / "gpu.pb"
    p.write_bytes(_profile([("cuda", "nanoseconds")], [([1, 2], [5_000], 1)]))
    a = analyze([p])
    assert a.views is not None and a.views.metrics.gpu_samples == 1
    assert a.views.metrics.gpu_sampled_ns == 5_000 and not a.views.metrics.cpu_only


@pytest.mark.parametrize("name,data,problem", [
    ("heap.pb.gz", gzip.compress(_profile([("alloc_space", "bytes")], [([1], [100], 1)])),
     "memory profile"),
    ("neg.pb.gz", gzip.compress(_profile([("cpu", "nanoseconds")], [([1], [-5], 1)])),
     "negative value -5"),
    ("trunc.pb.gz", gzip.compress(_profile([("cpu", "nanoseconds")], [([1], [5], 1)]))[:-12],
     "truncated gzip"),
    ("cut.pb", _profile([("cpu", "nanoseconds")], [([1], [5], 1)])[:-9], "truncated"),
    ("badloc.pb", _profile([("cpu", "nanoseconds")], [([9], [5], 1)]), "location 9"),
])
def test_pprof_bad_input_is_one_error(tmp_path: Path, name: str, data: bytes,
                                      problem: str) -> None:
    p = tmp_path / name
    p.write_bytes(data)
    (r,) = analyze([p]).artifacts
    assert r.status != "ok" and problem in r.problems[0], r.problems


def test_speedscope_evented_self_time(tmp_path: Path) -> None:
    # frame 0 `a` open 0–10 ms, frame 1 `b` open 2–5 ms inside it:
    # a alone 0–2 and 5–10 → 7 ms in 2 intervals; a › b 2–5 → 3 ms in 1 interval
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": [{"name": "a", "file": "m.py", "line": 1}, {"name": "b"}]},
           "profiles": [{"type": "evented", "name": "Thread 42", "unit": "milliseconds",
                         "startValue": 0, "endValue": 10, "events": [
                             {"type": t, "frame": f, "at": at}
                             for t, f, at in (("O", 0, 0), ("O", 1, 2), ("C", 1, 5), ("C", 0, 10))
                         ]}]}
    p = tmp_path / "ev.speedscope.json"
    p.write_text(json.dumps(doc))
    assert _stacks(analyze([p])) == {("m.py(1): a",): (2, 7_000_000),
                                     ("m.py(1): a", "b"): (1, 3_000_000)}
    doc["profiles"][0]["events"][2]["frame"] = 0  # closes `a` while `b` is innermost
    p.write_text(json.dumps(doc))
    (r,) = analyze([p]).artifacts
    assert r.status == "invalid" and "not the innermost open frame" in r.problems[0]


def test_speedscope_unit_none_is_counts(tmp_path: Path) -> None:
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": [{"name": "f"}, {"name": "g"}]},
           "profiles": [{"type": "sampled", "name": "p", "unit": "none", "startValue": 0,
                         "endValue": 5, "samples": [[0], [0, 1]], "weights": [2, 3]}]}
    p = tmp_path / "n.speedscope.json"
    p.write_text(json.dumps(doc))
    v = analyze([p]).views
    assert v is not None and v.metrics.cpu_samples == 5 and v.cpu.counts_only


def test_folded_leaves_decide_cpu_or_gpu(tmp_path: Path) -> None:
    blas = tmp_path / "blas.folded"  # py-spy --native: OpenBLAS is host code, not a kernel
    blas.write_text("main (a.py:1);dgemm_kernel_HASWELL (libopenblas64_p-r0.3.so) 90\n"
                    "main (a.py:1);python_loop (a.py:5) 10\n")
    assert analyze([blas]).views.metrics.cpu_only
    gpu = tmp_path / "gpu.folded"  # kernels under their launch API → GPU view
    gpu.write_text("# crossview: unit=us\n"
                   "step;cudaLaunchKernel;ampere_sgemm_128x64_tn 90\n"
                   "step;cudaLaunchKernel;vectorized_elementwise_kernel 10\n")
    v = analyze([gpu]).views
    assert v is not None and v.metrics.gpu_sampled_ns == 100_000 and v.metrics.cpu_samples == 0
    kinds = dict(v.store.sql("SELECT name, kind FROM frames").fetchall())
    assert kinds["ampere_sgemm_128x64_tn"] == "kernel" and kinds["step"] == "native"
    stated = tmp_path / "torch_cuda.txt"  # export_stacks of self_cuda_time_total: stated
    stated.write_text("# crossview: view=gpu\nmodel.py(3):_forward;model.py(9):_mm 250\n")
    v = analyze([stated]).views
    assert v is not None and v.metrics.gpu_sampled_ns == 250_000  # torch style: µs


def test_sniffing_keeps_formats_apart(tmp_path: Path) -> None:
    txt = tmp_path / "stacks.txt"
    txt.write_text("a;b 3\na;c 4\n")
    assert pick_reader(txt).kind == "folded"
    prom = tmp_path / "metrics.txt"
    prom.write_text("# TYPE x gauge\nx 1\ny 2\nz 3\n")
    assert pick_reader(prom).kind != "folded"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("analyze", *args, timeout=300)


def test_bad_stack_files_one_line_each_rest_analyzed(tmp_path: Path) -> None:
    bad = {
        "neg.folded": "a;b 3\na;c -2\n",
        "empty.folded": "",
        "diff.folded": "a;b 3 4\na;c 1 2\n",
        "none.speedscope.json": json.dumps({
            "$schema": "https://www.speedscope.app/file-format-schema.json",
            "shared": {"frames": []}, "profiles": []}),
    }
    paths = []
    for name, text in bad.items():
        (tmp_path / name).write_text(text)
        paths.append(str(tmp_path / name))
    junk = tmp_path / "junk.pb.gz"
    junk.write_bytes(gzip.compress(b"\x0f\xff\xff garbage")[:-4])
    paths.append(str(junk))
    proc = _cli(*paths, str(GOOD))
    errs = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(errs) == len(paths), proc.stderr
    assert all(ln.startswith("crossview: error: ") for ln in errs)
    assert "Traceback" not in proc.stderr
    assert "negative weight -2" in proc.stderr and "differential" in proc.stderr
    assert "447 CPU samples" in proc.stdout  # the good py-spy file is still analyzed


def test_window_leaves_untimed_samples_out_and_says_so() -> None:
    from crossview.scope.filter import Filter

    v = analyze([GOOD], Filter(window_ns=(0, 1000))).views
    assert v is not None and v.metrics.cpu_samples == 0
    assert any("447 stack samples from files without timestamps" in n for n in v.filter.notes)
