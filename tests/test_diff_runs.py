"""Two runs compared as an engineer would (issue 39): frames matched across runs, the machine's
drift told apart from the code's, noise said honestly, a CI gate, predictions checked against
the measured twin, captures as A/B trials.

Independent numbers: kernel durations and step ranges are read from the raw traces with gzip +
json (`oracle`, test_whatif_real's `steps_with_gpu_tail_ms`), never through crossview. The
drift pair is synthetic, built from one real capture by tests/scaled_pair.py (every kernel
1.7× longer, queued on its stream; every `0x…` address in a host frame changed): no public
pair of the same program on a throttled GPU exists. Which of workers4's steps are not steady
was checked by hand: its first (160.1 ms, warm-up) and last (206.5 ms, the profiler's flush —
data README) steps.
"""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path
from statistics import median

import pytest

import oracle
import scaled_pair
from conftest import SHARED_DATA, run_cli
from test_whatif_real import W0, W4, profiler_step_median_ms, steps_with_gpu_tail_ms

KINETO = SHARED_DATA / "kineto"
QWEN = KINETO / "tracelens_h100_hf_qwen1.5_0.5b_forward.json.gz"
MI300X = KINETO / "tracelens_mi300x_vllm_decode_full_graph.json.gz"
pytestmark = pytest.mark.skipif(not KINETO.is_dir(), reason="../shared/data not present")
ENV = {"env": {"PATH": "/usr/bin:/bin"}, "inherit_env": False}


# -- the identity normalizer (decision 0850) ---------------------------------------------------

@pytest.mark.parametrize(("raw", "key"), [
    # tracelens_h100_hf_qwen1.5_0.5b_forward: an object address in a built-in method's frame
    ("<built-in method _record_function_enter_new of PyCapsule object at 0x7d6a86ff5f20>",
     "<built-in method _record_function_enter_new of PyCapsule object at 0x…>"),
    # line numbers are kept: the same line of the same file is the same frame
    ("torch/_ops.py(1130): <lambda>", "torch/_ops.py(1130): <lambda>"),
    # module instance numbers name layers in construction order: kept
    ("nn.Module: Linear_3", "nn.Module: Linear_3"),
    # tracelens_b200_vllm_eager_prefill_tp8: an Inductor kernel's op, Triton's index stripped
    ("triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub_0",
     "triton_poi_fused_add_bitwise_and_bitwise_not_bitwise_or_ge_lt_mul_sub"),
    ("ProfilerStep#16", "ProfilerStep#N"),
    # synthetic (the shapes the issue names): fx graph numbering, Inductor cache path,
    # Dynamo's compiled-function counter, a decimal object id
    ("<eval_with_key>.162(7): forward", "<eval_with_key>.N(7): forward"),
    ("/tmp/torchinductor_root/lh/clhgqz4v5dfmxvbwt2yj6fq7dpvj3lmzd5nxqkqtq2ztn2hm4c5x.py(88): call",
     "/tmp/torchinductor_root/<h>/c<hash>.py(88): call"),
    ("__compiled_fn_12", "__compiled_fn_N"),
    ("<Handle id=140234567890123>", "<Handle id=N…>"),
])
def test_frame_key(raw: str, key: str) -> None:
    from crossview.identity import frame_key

    assert frame_key(raw) == key


@pytest.mark.parametrize(("raw", "seen"), [
    # the shipped example's frame (examples/cpu_tiny_decode.pt.trace.json.gz)
    ("<built-in method mean of Tensor object at 0x7ff6f3076f30>",
     "<built-in method mean of Tensor object>"),
    ("<built-in method _record_function_enter_new of PyCapsule object at 0x7d6a86ff5f20>",
     "<built-in method _record_function_enter_new of PyCapsule object>"),
    # synthetic: an address that is not an object's in a built-in frame stays
    ("void k<(int)0x10>(float*)", "void k<(int)0x10>(float*)"),
    ("torch/_ops.py(1130): <lambda>", "torch/_ops.py(1130): <lambda>"),
])
def test_shown_drops_object_addresses(raw: str, seen: str) -> None:
    from crossview.identity import shown
    assert shown(raw) == seen


def test_frame_key_in_sql_for_the_lake_and_mcp() -> None:
    from crossview.store.store import Store

    s = Store()  # every store (a lake's, the MCP server's) has it
    got = s.sql("SELECT frame_key('a of x object at 0x7f00aa11'), frame_key('ProfilerStep#9')"
                ).fetchall()
    assert got == [("a of x object at 0x…", "ProfilerStep#N")]
    assert s.cursor().sql("SELECT frame_key('y_0x1234abcd')").fetchall() == [("y_0x…",)]


def test_frame_key_over_a_lake(tmp_path: Path) -> None:
    from crossview.lake.fanout import Engine
    from crossview.lake.ingest import ingest
    from crossview.lake.query import open_lake

    ingest([MI300X], tmp_path / "lake", engine=Engine(0))
    s = open_lake(tmp_path / "lake")
    hexed, left = s.sql(
        "SELECT count(DISTINCT name) FILTER (WHERE regexp_matches(name, '0x[0-9a-f]{4,}')),"
        " count(*) FILTER (WHERE regexp_matches(frame_key(name), '0x[0-9a-f]{4,}'))"
        " FROM host_ops").fetchone()
    # the MI300X trace holds 34 distinct frame names with an address (counted by hand); in
    # SQL over the lake, as in diff, none keeps it
    assert (hexed, left) == (34, 0)


# -- the drift pair: one capture, every kernel 1.7× longer, addresses changed ----------------

@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return scaled_pair.write(QWEN, tmp_path_factory.mktemp("drift") / "qwen_x1.7.json.gz", 1.7)


@pytest.fixture(scope="module")
def drift_run(slow: Path) -> tuple[dict, str]:
    proc = run_cli("diff", QWEN, slow, "--format", "json", "--fail-on-regression", "5", **ENV)
    assert proc.returncode == 0, proc.stderr  # noise unknown: not judged, not failed
    return json.loads(proc.stdout), proc.stderr


def _names(path: Path) -> set[str]:
    with gzip.open(path, "rt") as f:
        return {e["name"] for e in json.load(f)["traceEvents"]
                if e.get("ph") == "X" and isinstance(e.get("name"), str)}


def test_uniform_slowdown_is_named_with_no_code_cause(slow: Path,
                                                      drift_run: tuple[dict, str]) -> None:
    d, _ = drift_run
    ka = sum(k.dur_ns for k in oracle.kernels(oracle.load_trace(QWEN)))
    kb = sum(k.dur_ns for k in oracle.kernels(oracle.load_trace(slow)))
    assert kb / ka == pytest.approx(1.7, rel=1e-3)  # the pair is what it says
    dr = d["drift"]
    assert dr["detected"] and dr["direction"] == "slower"
    assert dr["factor"] == pytest.approx(1.7, rel=1e-3)
    assert dr["coverage_a"] == dr["coverage_b"] == 1.0 and dr["changed_beyond_drift"] == []
    assert any(x.startswith("**The GPU ran 1.70× slower on the same work**")
               for x in d["headline"])
    beyond = next(x for x in d["headline"] if x.startswith("Beyond that factor"))
    assert "no code cause" in beyond
    assert any("nvidia-smi -lgc" in x for x in d["headline"])  # the fix
    assert any("No GPU counters" in x for x in d["headline"])  # none given, said so
    # per-cause and per-kernel changes relative to the factor: every busy cause within 1% of
    # its own time, every kernel row within 0.1%
    for c in d["account"]["causes"]:
        if not c["idle"]:
            assert abs(c["beyond_drift_ns"]) <= 0.01 * c["b_ns"] + 1000, c
    for r in d["kernels"]:
        assert abs(r["beyond_drift_ns"]) <= 1e-3 * r["b_time_ns"] + 1, r
    cmp = {c["what"]: c["status"] for c in d["comparability"]["checks"]}
    assert cmp["kernel set"] == cmp["input shapes (host ops)"] == "same"
    assert cmp["launch configurations (grid, block)"] == "same"
    assert d["comparability"]["comparable"] and not d["comparability"]["nothing_changed"]


def test_the_same_frames_match_across_the_pair(slow: Path, drift_run: tuple[dict, str]) -> None:
    from crossview.identity import frame_key

    d, _ = drift_run
    raw_a, raw_b = _names(QWEN), _names(slow)
    hexed = {n for n in raw_a if re.search(r"0x[0-9a-f]{4,}", n)}
    assert len(hexed) >= 30 and not hexed & raw_b  # every address changed in B
    assert {frame_key(n) for n in raw_a} == {frame_key(n) for n in raw_b}
    ops = d["ops"]["summary"]
    assert ops["only_a"] == ops["only_b"] == ops["name"] == 0 and ops["stack"] > 3000
    frames = [f["frame"] for f in d["account"]["cpu_frames"]]
    assert len(frames) == len(set(frames))  # one row per frame, never one per side
    assert not any(re.search(r"0x[0-9a-f]{4,}", f) for f in frames)


def test_one_step_per_side_noise_unknown(drift_run: tuple[dict, str]) -> None:
    d, err = drift_run
    assert d["noise"]["known"] is False and d["noise"]["noise_ns"] is None
    assert d["account"]["noise"] == "unknown" and d["account"]["beyond_noise"] is None
    assert all(c["share_of_change"] is None for c in d["account"]["causes"])
    assert any("noise: **unknown**" in x for x in d["headline"])
    g = d["gate"]
    assert g["verdict"] == "undecided" and not g["failed"] and "noise unknown" in g["why"]
    assert "not judged" in err


def test_drift_cites_the_counters_given(tmp_path: Path, slow: Path) -> None:
    import shutil

    smi = SHARED_DATA / "metrics" / "nvidia-smi_h100_capture.txt"
    for side, trace in (("a", QWEN), ("b", slow)):
        (tmp_path / side).mkdir()
        shutil.copyfile(trace, tmp_path / side / trace.name)
        shutil.copyfile(smi, tmp_path / side / smi.name)
    proc = run_cli("diff", tmp_path / "a", tmp_path / "b", "--format", "json", **ENV)
    d = json.loads(proc.stdout)
    got = {c["metric"]: c for c in d["drift"]["counters"]}
    assert {"sm_clock", "power", "gpu_temp"} <= set(got)
    assert got["sm_clock"]["a_files"] == [str(tmp_path / "a" / smi.name)]
    assert got["sm_clock"]["a"] == got["sm_clock"]["b"]  # the same file on both sides
    assert any(x.startswith("GPU counters given with the captures") and smi.name in x
               for x in d["headline"])


def test_drift_markdown_leads_with_the_machine(slow: Path) -> None:
    out = run_cli("diff", QWEN, slow, check=True, **ENV).stdout
    summary = out[out.index("## Summary"):out.index("## Comparability")]
    assert summary.index("The GPU ran 1.70× slower") < summary.index("noise: **unknown**")
    assert "Δ beyond the GPU's 1.70×" in out and "± 0.0 µs" not in out


def test_a_capture_against_itself_changed_nothing() -> None:
    from crossview.analysis import analyze
    from crossview.experiments.diff import compare

    d = compare(analyze([MI300X]), analyze([MI300X]))
    assert d.comparability is not None and d.comparability.nothing_changed
    assert d.drift is not None and not d.drift.detected
    assert any(x.startswith("**Nothing changed**") for x in d.headline)


# -- the lever pair: prediction checked, the gate both ways, the ledger -------------------------

@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    p = tmp_path_factory.mktemp("ledger") / "ledger.json"
    p.write_text(json.dumps({"levers": [{"id": "finding:dataloader-starved",
                                         "confidence": "DRAFT"}]}))
    return p


@pytest.fixture(scope="module")
def lever_run(ledger: Path) -> dict:
    proc = run_cli("diff", W0, W4, "--lever", "dataloader-workers", "--format", "json",
                   "--fail-on-regression", "5", "--ledger", ledger, **ENV)
    assert proc.returncode == 0, proc.stderr  # faster: the gate passes
    assert "replay check recorded on lever finding:dataloader-starved" in proc.stderr
    return json.loads(proc.stdout)


@cache
def _w4_steps() -> list[float]:
    return steps_with_gpu_tail_ms(W4)


def test_prediction_checked_against_the_twin(lever_run: dict) -> None:
    c = lever_run["lever"]
    walls = _w4_steps()
    assert c["measured_step_ns"] == pytest.approx(median(walls[1:5]) * 1e6, abs=1)
    assert c["measured_all_steps_ns"] == pytest.approx(median(walls) * 1e6, abs=1)
    twin = profiler_step_median_ms(W4) * 1e6  # the twin: 125.09 ms (ranges only)
    assert round(twin / 1e6, 1) == 125.1 and abs(c["measured_all_steps_ns"] - twin) < 0.1e6
    assert c["before_measured_step_ns"] == pytest.approx(
        median(steps_with_gpu_tail_ms(W0)) * 1e6, abs=1)
    pred, (lo, hi) = c["predicted_step_ns"], c["range_ns"]
    print(f"\nlever pair: predicted {pred / 1e6:.2f} ms (range {lo / 1e6:.2f} … "
          f"{hi / 1e6:.2f}) vs measured {c['measured_step_ns'] / 1e6:.2f} ms steady, "
          f"{c['measured_all_steps_ns'] / 1e6:.2f} ms over all steps")
    assert abs(pred - twin) / twin <= 0.05 or (lo <= twin <= hi and hi - lo <= 0.2 * pred)
    assert c["error_pct"] == pytest.approx(100 * (pred - c["measured_step_ns"])
                                           / c["measured_step_ns"])
    assert abs(c["error_pct"]) <= 5 and c["measured_inside_range"] is True
    assert lo <= pred <= hi and (hi - pred) <= 0.1 * pred and (pred - lo) <= 0.1 * pred
    assert c["unknowns"] and "host_slowdown" in c["unknowns"][0]
    # what held the step in each: host CPU first on both sides
    assert c["held_predicted"][0]["cause"] == c["held_measured"][0]["cause"] == \
        "host: CPU (ops and Python)"


def test_gate_passes_an_improvement_and_fails_a_regression(lever_run: dict) -> None:
    g = lever_run["gate"]
    assert g["verdict"] == "pass" and not g["failed"] and g["delta_pct"] < -15
    proc = run_cli("diff", W4, W0, "--format", "json", "--fail-on-regression", "5", **ENV)
    assert proc.returncode == 1, proc.stderr
    d = json.loads(proc.stdout)["gate"]
    w0, w4 = median(steps_with_gpu_tail_ms(W0)), median(_w4_steps()[1:5])
    assert (d["a_ns"], d["b_ns"]) == (pytest.approx(w4 * 1e6, abs=1),
                                      pytest.approx(w0 * 1e6, abs=1))
    assert d["verdict"] == "regressed" and d["failed"]
    assert d["delta_pct"] == pytest.approx(100 * (w0 / w4 - 1), rel=1e-6)
    assert "beyond the step-to-step noise" in d["why"]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--fail-on-regression 5" in lines[0]


def test_ledger_records_prediction_measurement_and_error(lever_run: dict, ledger: Path) -> None:
    row = json.loads(ledger.read_text())["levers"][0]
    assert row["confidence"] == "DRAFT"  # one capture per side is not an A/B
    [rec] = row["replay_checks"]
    c = lever_run["lever"]
    assert (rec["predicted_step_ns"], rec["measured_step_ns"], rec["error_pct"]) == (
        c["predicted_step_ns"], c["measured_step_ns"], c["error_pct"])


def test_ops_matched_by_stack_then_by_name(lever_run: dict) -> None:
    ops = {(r["op"], r["matched_by"]): r for r in lever_run["ops"]["rows"]}
    # the raw traces: the single-process iterator only in workers0, the multi-process one
    # only in workers4
    a, b = _names(W0), _names(W4)
    single = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    assert single in a and single not in b
    assert ops[(single, "only_a")]["a_ns_per_step"] > 40e6
    s = lever_run["ops"]["summary"]
    assert s["stack"] > 500 and s["only_a"] >= 1 and s["only_b"] >= 1


# -- captures as A/B trials ------------------------------------------------------------------

def test_ab_takes_three_captures_per_arm(tmp_path: Path) -> None:
    base = [scaled_pair.write(MI300X, tmp_path / f"b{i}.json.gz", f, readdress=False)
            for i, f in enumerate((0.99, 1.0, 1.01))]
    var = [scaled_pair.write(MI300X, tmp_path / f"v{i}.json.gz", f, readdress=False)
           for i, f in enumerate((1.29, 1.3, 1.31))]
    proc = run_cli("ab", "--baseline", *base, "--variant", *var, "--format", "json", **ENV)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(proc.stdout)
    assert d["trials_are"] == "captures"
    m = {x["metric"]: x for x in d["metrics"]}
    k0 = sum(k.dur_ns for k in oracle.kernels(oracle.load_trace(base[1]))) / 1e6
    k1 = sum(k.dur_ns for k in oracle.kernels(oracle.load_trace(var[1]))) / 1e6
    kt = m["kernel_time_per_step_ms"]
    assert (kt["baseline"]["median"], kt["variant"]["median"]) == (
        pytest.approx(k0, rel=1e-6), pytest.approx(k1, rel=1e-6))
    assert kt["verdict"] == m["median_step_ms"]["verdict"] == "loss"
    assert m["median_step_ms"]["baseline"]["n"] == m["median_step_ms"]["variant"]["n"] == 3
    mixed = run_cli("ab", "--baseline", base[0], W0.parent.parent / "metrics" /
                    "vllm_v1_metrics_idle.prom", "--variant", *var, **ENV)
    assert mixed.returncode == 2 and len(mixed.stderr.strip().splitlines()) == 1


def test_capture_trials_in_a_bundle_reach_a_verdict_with_the_prediction(tmp_path: Path
                                                                         ) -> None:
    """bundle.yaml (as `crossview capture` writes it) gives the captures their node and model;
    the ledger row's predicted −20% step sits beside the measured change and its error (the
    variant's kernels run 1.3× longer: scaled_pair can only delay GPU work, so the measured
    change is a loss)."""
    (tmp_path / "bundle.yaml").write_text(
        "context:\n  model: m\n  gpu: MI300X\n  hostname: node1\n  gpu_uuids: GPU-aa\n")
    arms = {}
    for arm, factors in (("base", (0.99, 1.0, 1.01)), ("var", (1.29, 1.3, 1.31))):
        (tmp_path / arm).mkdir()
        arms[arm] = [scaled_pair.write(MI300X, tmp_path / arm / f"t{i}.json.gz", f,
                                       readdress=False) for i, f in enumerate(factors)]
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"context": {"model": "m", "gpu": "MI300X"}, "levers": [
        {"id": "finding:x", "subject": {"target": "step"}, "confidence": "DRAFT",
         "window_share": {"value": 20.0, "unit": "%"}}]}))
    proc = run_cli("ab", "--baseline", *arms["base"], "--variant", *arms["var"], "--ledger",
                   ledger, "--lever", "finding:x", **ENV)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(ledger.read_text())["levers"][0]
    assert row["confidence"] == "VERDICT", row["ab"]["failed_gates"]
    ab = row["ab"]
    assert ab["verdict"] == "loss" and ab["measured"]["metric"] == "median_step_ms"
    assert ab["predicted"]["delta_pct"] == -20.0
    assert ab["prediction_error_pct_points"] == pytest.approx(
        ab["measured"]["delta_pct"] + 20.0)


# -- ranges and the MCP tool -----------------------------------------------------------------

def test_a_given_parameter_is_no_unknown() -> None:
    from crossview.replay.whatif import run

    w = run([QWEN], ["cuda-graphs"], ranges=True)
    lo, hi = w.range_ns()  # type: ignore[misc]
    assert lo < w.medians()["predicted_step_ns"] < hi or lo == hi
    assert len(w.unknowns) == 1 and "per_kernel_us 0.6 … 2.4" in w.unknowns[0]
    fixed = run([QWEN], ["cuda-graphs=1.2"], ranges=True)
    assert fixed.unknowns == [] and fixed.range_ns() == (
        fixed.medians()["predicted_step_ns"],) * 2


def test_mcp_diff_tool_gives_drift_gate_and_lever(slow: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from crossview.mcp.cache import AnalysisCache
    from crossview.mcp.safety import Roots
    from crossview.mcp.tools_unscoped import OtherTools

    tools = OtherTools(AnalysisCache(Roots([KINETO, slow.parent])))
    d = json.loads(tools.diff(str(QWEN), str(slow), lever=["cuda-graphs"],
                              fail_on_regression=5))
    assert d["drift"]["detected"] and d["gate"]["verdict"] == "undecided"
    assert d["lever"]["levers"] == ["cuda-graphs"] and d["lever"]["range_ns"]
