"""`crossview ab`. No public set of repeated `vllm bench serve` results exists in ../shared/data,
so every input here is SYNTHETIC: small result JSONs with the keys `vllm bench serve
--save-result --metadata K=V` writes (same layout as tests/test_bench_readers.py), with
chosen metric values so medians, deltas and CIs can be checked by hand."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import run_cli
from crossview.cli import app
from crossview.experiments.ab import run_ab, verdict
from crossview.experiments.ab_stats import compare, permutation_p

runner = CliRunner()


def result(throughput: float, ttft: float, **over: object) -> dict[str, object]:
    r: dict[str, object] = {
        "date": "20260714-081253", "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B",
        "num_prompts": 200, "hostname": "gpu-node-7", "gpu": "NVIDIA H200",
        "request_rate": "inf", "max_concurrency": 64, "completed": 200,
        "total_input_tokens": 409600, "total_output_tokens": 25600,
        "request_throughput": 4.8, "output_throughput": throughput, "median_ttft_ms": ttft,
    }
    r.update(over)
    return r


def write(d: Path, name: str, recs: list[dict[str, object]]) -> list[Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, r in enumerate(recs):
        p = d / f"{name}-{i}.json"
        p.write_text(json.dumps(r))
        out.append(p)
    return out


def arms(tmp: Path, a: list[tuple[float, float]], b: list[tuple[float, float]],
         **var_over: object) -> tuple[list[Path], list[Path]]:
    return (write(tmp / "a", "base", [result(t, f) for t, f in a]),
            write(tmp / "b", "var", [result(t, f, **var_over) for t, f in b]))


def test_large_consistent_change_is_win_and_loss_with_hand_numbers(tmp_path: Path) -> None:
    # throughput 100/101/102 → 120/121/122 tok/s (higher is better: win);
    # TTFT 50/51/52 → 60/61/62 ms (lower is better: loss)
    a, b = arms(tmp_path, [(100, 50), (101, 51), (102, 52)], [(120, 60), (121, 61), (122, 62)])
    res = run_ab(a, b, ["output_throughput", "median_ttft_ms"])
    thr, ttft = res.metrics
    assert res.refusals == []
    assert (thr.verdict, ttft.verdict) == ("win", "loss")
    c = thr.cmp
    assert c is not None and (c.base_median, c.var_median) == (101.0, 121.0)
    assert c.delta_pct == pytest.approx((121 / 101 - 1) * 100)  # +19.80 %
    # bootstrap median of 3 resampled trials equals the smallest value with probability
    # P(≥ 2 of 3 draws are the min) = 7/27; both extremes at once: (7/27)^2 = 0.067 > 0.025,
    # so the 95 % percentile CI is exactly [min var ÷ max base, max var ÷ min base]
    assert c.ci == pytest.approx((120 / 102, 122 / 100))
    assert c.p == pytest.approx(0.1)  # complete separation: 2 of C(6,3) = 20 splits
    assert thr.cmp is not None and ttft.cmp is not None
    assert ttft.cmp.ci == pytest.approx((60 / 52, 62 / 50))


def test_identical_distributions_are_null(tmp_path: Path) -> None:
    a, b = arms(tmp_path, [(100, 50), (101, 51), (102, 52)], [(101, 51), (102, 52), (100, 50)])
    res = run_ab(a, b, ["output_throughput"])
    m = res.metrics[0]
    assert m.verdict == "null" and m.cmp is not None
    assert m.cmp.delta_pct == 0 and m.cmp.p == 1.0


def test_two_trials_insufficient(tmp_path: Path) -> None:
    a, b = arms(tmp_path, [(100, 50), (101, 51)], [(120, 60), (121, 61), (122, 62)])
    m = run_ab(a, b, ["output_throughput"]).metrics[0]
    assert m.verdict == "insufficient" and "fewer than 3 trials" in m.reason


@pytest.mark.parametrize(("over", "field"), [({"model_id": "Qwen/Qwen3-8B"}, "model"),
                                             ({"max_concurrency": 32}, "concurrency")])
def test_mismatched_context_refused_naming_field(tmp_path: Path, over: dict[str, object],
                                                 field: str) -> None:
    a, b = arms(tmp_path, [(100, 50), (101, 51), (102, 52)],
                [(120, 60), (121, 61), (122, 62)], **over)
    res = run_ab(a, b, ["output_throughput"])
    assert len(res.refusals) == 1 and f"{field} (baseline" in res.refusals[0]
    assert res.metrics[0].verdict == "insufficient"
    assert res.metrics[0].reason.startswith("refused:")
    # naming the lever lifts the refusal
    ok = run_ab(a, b, ["output_throughput"], allow_diff={field})
    assert ok.refusals == [] and ok.metrics[0].verdict == "win"


def test_other_node_refused_unknown_reported(tmp_path: Path) -> None:
    a, b = arms(tmp_path, [(100, 50), (101, 51), (102, 52)],
                [(120, 60), (121, 61), (122, 62)], hostname="gpu-node-9")
    assert "different nodes: hostname" in run_ab(a, b).refusals[0]
    a2 = write(tmp_path / "c", "nohost", [
        {k: v for k, v in result(t, 50).items() if k != "hostname"} for t in (100, 101, 102)])
    res = run_ab(a2, a)
    assert res.refusals == [] and any("hostname unknown" in n for n in res.notes)


def test_unknown_metric_direction(tmp_path: Path) -> None:
    a, b = arms(tmp_path, [(100, 50), (101, 51), (102, 52)], [(120, 60), (121, 61), (122, 62)])
    m = run_ab(a, b, ["completed"]).metrics[0]
    assert m.verdict == "insufficient" and "direction unknown" in m.reason
    assert run_ab(a, b, ["output_throughput"], lower={"output_throughput"}
                  ).metrics[0].verdict == "loss"


def test_noise_threshold() -> None:
    c = compare([100, 100.1, 100.2], [100.5, 100.6, 100.7], 0.95, 10000)  # +0.5 %, separated
    assert verdict(c, "higher", 1.0, 0.1)[0] == "null"
    assert verdict(c, "higher", 0.1, 0.1)[0] == "win"


def test_false_positive_rate_aa() -> None:
    """2,000 A/A comparisons of 3 vs 3 trials from one distribution (seeded), 5 % CV noise and
    the default 1 % noise band. The nominal level is α = 0.10; tolerance: 3 binomial standard
    deviations, 3·sqrt(0.1·0.9/2000) = 0.020."""
    rng = np.random.default_rng(7)
    n, wins = 2000, 0
    for _ in range(n):
        x = rng.normal(1000, 50, size=6)
        c = compare(list(x[:3]), list(x[3:]), 0.95, 400)  # fewer resamples: speed; same rule
        wins += verdict(c, "higher", 1.0, 0.1)[0] != "null"
    rate = wins / n
    assert rate <= 0.10 + 3 * math.sqrt(0.1 * 0.9 / n), rate
    assert rate > 0.03  # the rule is not vacuous: complete separation happens ~10 % of the time


def test_permutation_exact_min_p() -> None:
    p, perms, exact = permutation_p(np.array([1.0, 2, 3]), np.array([4.0, 5, 6]))
    assert (p, perms, exact) == (0.1, 20, True)  # Mann-Whitney cannot reach 0.05 at 3 vs 3
    p, perms, _ = permutation_p(np.arange(4.0), np.arange(4.0) + 10)
    assert perms == 70 and p == pytest.approx(2 / 70)


def test_cli_json_fail_on_and_ledger(tmp_path: Path) -> None:
    a, b = arms(tmp_path, [(100, 50), (101, 51), (102, 52)], [(120, 60), (121, 61), (122, 62)])
    led = tmp_path / "ledger.json"
    led.write_text(json.dumps({"context": {"model": "meta-llama/Llama-3.1-8B",
                                           "gpu": "NVIDIA H200", "concurrency": 64},
                               "levers": [
        {"id": "L1", "rank": 1, "lever": "--max-num-seqs 256", "type": "config",
         "target": "throughput", "changes": ["max_num_seqs"],
         "expected_effect": "+15 % tok/s", "evidence_artifacts": ["x.json"], "source_refs": [],
         "sol_rigor": "L2", "confidence": "DRAFT"},
        {"id": "L2", "rank": 2, "lever": "other", "confidence": "DRAFT"}]}))
    args = ["ab", *sum((["--baseline", str(p)] for p in a), []),
            *sum((["--variant", str(p)] for p in b), []), "--metric", "output_throughput",
            "--metric", "median_ttft_ms", "--format", "json", "--ledger", str(led),
            "--lever", "L1", "--gpu-uuid", "GPU-1", "--fail-on", "loss"]
    r = runner.invoke(app, args)
    assert r.exit_code == 1  # TTFT is a loss
    out = json.loads(r.stdout)
    m = out["metrics"][0]
    assert m["metric"] == "output_throughput" and m["verdict"] == "win"
    assert m["baseline"]["median"] == 101.0 and m["baseline"]["n"] == 3
    assert m["variant"]["unit"] == "tok/s" and m["p"] == pytest.approx(0.1)
    assert m["ci"] == pytest.approx([120 / 102, 122 / 100]) and "permutation" in m["test"]
    rows = json.loads(led.read_text())["levers"]
    # the throughput lever is judged on output_throughput only (TTFT compared, not used)
    assert rows[0]["confidence"] == "VERDICT" and rows[0]["ab"]["verdict"] == "win"
    assert rows[0]["ab"]["failed_gates"] == []
    assert rows[0]["expected_effect"] == "+15 % tok/s" and rows[1] == {
        "id": "L2", "rank": 2, "lever": "other", "confidence": "DRAFT"}
    r = runner.invoke(app, args[:-4] + ["--lever", "nope"])
    assert r.exit_code == 2 and "no such lever" in r.stderr
    # null → tried-null; refusal → DRAFT with the reason
    a2, b2 = arms(tmp_path / "n", [(100, 50), (101, 51), (102, 52)],
                  [(101, 51), (100, 50), (102, 52)])
    base = ["ab", *sum((["--baseline", str(p)] for p in a2), []), "--ledger", str(led),
            "--lever", "L2"]
    assert runner.invoke(app, base + sum((["--variant", str(p)] for p in b2), [])
                         ).exit_code == 0
    # L2 names no phase/target and the trials no GPU UUIDs: null on the numbers, kept DRAFT
    row = json.loads(led.read_text())["levers"][1]
    assert row["confidence"] == "DRAFT" and row["ab"]["verdict"] == "null"
    assert {g.split(":")[0] for g in row["ab"]["failed_gates"]} == {"node", "metric"}
    _, b3 = arms(tmp_path / "r", [], [(120, 60)] * 3, max_concurrency=8)
    r = runner.invoke(app, base + sum((["--variant", str(p)] for p in b3), []))
    assert r.exit_code == 0 and "refused" in r.stdout
    row = json.loads(led.read_text())["levers"][1]
    assert row["confidence"] == "DRAFT" and "concurrency" in row["ab"]["reason"]


def test_bad_input_one_line_exit_2(tmp_path: Path) -> None:
    a, _ = arms(tmp_path, [(100, 50), (101, 51), (102, 52)], [])
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"benchmark": "sglang", "throughput": [1, 2]}))
    nan = tmp_path / "nan.json"
    nan.write_text(json.dumps(result(float("nan"), 50)))  # Python writes a bare NaN
    empty = tmp_path / "empty"
    empty.mkdir()
    for bad in (other, nan, empty):
        r = runner.invoke(app, ["ab", "--baseline", str(a[0]), "--variant", str(bad)])
        assert r.exit_code == 2, (bad, r.output)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("crossview: error:"), r.stderr
        assert "Traceback" not in r.output


def test_nan_in_a_csv_arm_is_one_clear_error(tmp_path):
    """Synthetic CSV trials: a NaN value must stop the A/B with one line naming the file,
    never be dropped silently (issue 6: NaN values → clear errors)."""

    paths = []
    for arm, value in (("a", "100"), ("b", "nan")):
        for i in range(3):
            p = tmp_path / f"{arm}{i}.csv"
            p.write_text(f"metric,value,arm,trial\noutput_throughput,{value},default,{i}\n")
            paths.append(p)
    cmd = ["ab"]
    for p in paths[:3]:
        cmd += ["--baseline", str(p)]
    for p in paths[3:]:
        cmd += ["--variant", str(p)]
    r = run_cli(*cmd, timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crossview: error:")
    assert "b0.csv" in lines[0] and "not a finite number" in lines[0]
    assert "Traceback" not in r.stderr
