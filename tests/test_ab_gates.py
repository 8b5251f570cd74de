"""The VERDICT gate of `crossview ab --ledger` (issue 17) on the real RTX 5090 DeepSeek-OCR
bundle (tests/test_synthesis.py builds it from ../shared/data). The A/B trials are SYNTHETIC
(no repeated benchmark of DeepSeek-OCR exists in ../shared/data): `vllm bench serve` result
JSONs and `metric,value` CSVs with chosen values, so deltas and CIs are checked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossview.cli import app
from crossview.synthesis import synthesize
from test_synthesis import needs_data, rtx_bundle

runner = CliRunner()


def _ledger(tmp: Path) -> tuple[Path, dict]:
    syn = synthesize.run(rtx_bundle(tmp))
    from crossview.render import synthesis_md
    _, js = syn.save(synthesis_md.render(syn))
    return js, json.loads(js.read_text())


def _opt_trials(d: Path, name: str, tpots: list[float]) -> list[Path]:
    """OPT-125m `vllm bench serve` results, no hostname / GPU UUIDs recorded."""
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, t in enumerate(tpots):
        p = d / f"{name}-{i}.json"
        p.write_text(json.dumps({
            "date": "20261201-100000", "backend": "vllm", "model_id": "facebook/opt-125m",
            "num_prompts": 50, "request_rate": "inf", "max_concurrency": 1, "completed": 50,
            "gpu": "NVIDIA H200", "total_input_tokens": 51200, "total_output_tokens": 3200,
            "request_throughput": 4.0, "output_throughput": 256.0, "median_tpot_ms": t,
            "mean_ttft_ms": 20.0, "median_ttft_ms": 19.0}))
        out.append(p)
    return out


def _csv_trials(d: Path, name: str, metric: str, values: list[float], **ctx: str
                ) -> list[Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, v in enumerate(values):
        p = d / f"{name}-t{i + 1}.csv"
        cols = ["metric", "value", "unit", *ctx]
        p.write_text(",".join(cols) + "\n" + ",".join(
            [metric, str(v), "ms", *ctx.values()]) + "\n")
        out.append(p)
    return out


def _ab(led: Path, lever: str, base: list[Path], var: list[Path], *extra: str):
    args = ["ab", *sum((["--baseline", str(p)] for p in base), []),
            *sum((["--variant", str(p)] for p in var), []), "--ledger", str(led),
            "--lever", lever, "--format", "json", *extra]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    return next(x for x in json.loads(led.read_text())["ledger"] if x["id"] == lever)


@needs_data
def test_unknown_node_other_model_wrong_phase_stay_draft(tmp_path: Path) -> None:
    led, data = _ledger(tmp_path)
    assert data["context"]["model"] == "deepseek-ai/DeepSeek-OCR"
    # the case: an OPT-125m bench (no node recorded) promoted a DeepSeek-OCR lever
    base = _opt_trials(tmp_path / "a", "base", [10.0, 10.1, 10.2])
    var = _opt_trials(tmp_path / "b", "var", [8.0, 8.1, 8.2])
    row = _ab(led, "fusion:elementwise:decode", base, var, "--metric", "median_tpot_ms")
    ab = row["ab"]
    assert ab["verdict"] == "win"  # the numbers alone would promote it …
    assert row["confidence"] == "DRAFT"  # … the gates do not
    failed = {f.split(":")[0]: f for f in ab["failed_gates"]}
    assert set(failed) == {"node", "context"}
    assert "hostname unknown" in failed["node"] and "gpu_uuids unknown" in failed["node"]
    assert "model: trials facebook/opt-125m, bundle deepseek-ai/deepseek-ocr" in failed["context"]
    assert "gpu: trials h200-sxm, bundle rtx-5090" in failed["context"]
    assert "engine: trials vllm, bundle transformers" in failed["context"]
    assert "measured" not in ab
    # a prefill lever judged on a decode metric: the metric gate names the right one
    row = _ab(led, "fusion:elementwise:prefill", base, var, "--metric", "median_tpot_ms")
    failed = {f.split(":")[0]: f for f in row["ab"]["failed_gates"]}
    assert row["confidence"] == "DRAFT" and set(failed) == {"node", "context", "metric"}
    assert "a prefill lever is judged on TTFT" in failed["metric"]
    assert "compared: median_tpot_ms" in failed["metric"]
    # two trials per arm: the trials gate fails too
    row = _ab(led, "fusion:elementwise:decode", base[:2], var[:2], "--metric",
              "median_tpot_ms")
    assert any(f.startswith("trials: fewer than 3 trials per arm")
               for f in row["ab"]["failed_gates"])


@needs_data
def test_matching_same_node_3_plus_3_promotes_with_measured_vs_predicted(
        tmp_path: Path) -> None:
    led, data = _ledger(tmp_path)
    pred_row = next(x for x in data["ledger"] if x["id"] == "fusion:elementwise:decode")
    share = pred_row["window_share"]["value"]
    assert round(share, 1) == 19.4  # 34.76 ms of the 179.07 ms decode kernel time
    ctx = {"model": "deepseek-ai/DeepSeek-OCR", "gpu": "NVIDIA GeForce RTX 5090",
           "engine": "transformers", "hostname": "rtx-node-1", "gpu_uuids": "GPU-5090-a",
           "concurrency": "1", "osl": "64"}
    base = _csv_trials(tmp_path / "a", "baseline", "median_tpot_ms", [10.0, 10.1, 10.2], **ctx)
    var = _csv_trials(tmp_path / "b", "variant", "median_tpot_ms", [8.0, 8.1, 8.2], **ctx)
    row = _ab(led, "fusion:elementwise:decode", base, var)
    ab = row["ab"]
    assert ab["failed_gates"] == [] and row["confidence"] == "VERDICT"
    assert [g["gate"] for g in ab["gates"]] == ["arms", "node", "trials", "metric", "context"]
    m = ab["measured"]
    assert m["metric"] == "median_tpot_ms" and m["n"] == [3, 3]
    assert (m["baseline_median"], m["variant_median"]) == (10.1, 8.1)
    assert m["delta_pct"] == pytest.approx((8.1 / 10.1 - 1) * 100)  # −19.80 %
    # 3 vs 3 bootstrap percentile CI = [min var ÷ max base, max var ÷ min base] (test_ab.py)
    assert m["ci_pct"] == pytest.approx([(8.0 / 10.2 - 1) * 100, (8.2 / 10.0 - 1) * 100])
    # issue 16: fusion is not predicted (no ncu of the family), never "≤ the whole family";
    # so the A/B has no predicted change to compare and no prediction error (not the family's
    # share passed off as a prediction)
    assert ab["predicted"]["expected_effect"].startswith("not predicted")
    assert ab["predicted"]["delta_pct"] is None
    assert ab["prediction_error_pct_points"] is None
    # a re-synthesis keeps the VERDICT and shows the measured effect, not the prediction
    syn = synthesize.run(led.parents[1])
    lv = next(x for x in syn.levers if x.id == "fusion:elementwise:decode")
    assert lv.confidence == "VERDICT"
    from crossview.render import synthesis_md
    md = synthesis_md.render(syn)
    line = next(x for x in md.splitlines() if "(`fusion:elementwise:decode`)" in x)
    assert "measured -19.80 % median_tpot_ms" in line
    assert "no predicted change to compare (not predicted" in line


def test_cold_first_request_flagged_and_excluded_on_request(tmp_path: Path) -> None:
    """Synthetic: one baseline trial with mean TTFT 215 ms vs median 56 ms (the issue's
    numbers) is flagged cold and kept; --exclude-cold leaves it out."""
    from crossview.experiments.ab import run_ab
    d = tmp_path
    recs = []
    for arm, ttfts in (("a", [(215.0, 56.0), (57.0, 55.0), (58.0, 56.5), (56.0, 55.5)]),
                       ("b", [(50.0, 49.0), (51.0, 50.0), (50.5, 49.5)])):
        for i, (mean, med) in enumerate(ttfts):
            p = d / f"{arm}{i}.json"
            p.write_text(json.dumps({
                "model_id": "m", "num_prompts": 10, "completed": 10, "request_throughput": 1.0,
                "output_throughput": 100.0, "mean_ttft_ms": mean, "median_ttft_ms": med}))
            recs.append(p)
    base, var = recs[:4], recs[4:]
    res = run_ab(base, var, ["median_ttft_ms"])
    assert res.baseline.cold[0] and "mean TTFT 215 ms ≥ 2 × median 56 ms" in res.baseline.cold[0]
    assert res.baseline.cold[1:] == [None, None, None] and not any(res.variant.cold)
    assert res.metrics[0].n_base == 4 and any("flagged cold" in n for n in res.notes)
    out = run_ab(base, var, ["median_ttft_ms"], exclude_cold=True)
    assert out.metrics[0].n_base == 3 and out.baseline.excluded == [0]
    assert out.metrics[0].cmp is not None and out.metrics[0].cmp.base_median == 55.5


def test_capture_bench_command_records_the_node() -> None:
    """`crossview capture vllm --bench …` adds hostname and GPU UUIDs to the trial's
    --metadata, joining the user's pairs (vllm bench takes them after one flag)."""
    from crossview.capture.bench_cmd import with_node
    node = {"hostname": "rtx-node-1", "gpu_uuids": "GPU-a,GPU-b"}
    assert with_node(["vllm", "bench", "serve", "--model", "m"], node)[-3:] == [
        "--metadata", "hostname=rtx-node-1", "gpu_uuids=GPU-a,GPU-b"]
    argv = ["vllm", "bench", "serve", "--metadata", "arm=a", "hostname=mine", "--model", "m"]
    assert with_node(argv, node) == ["vllm", "bench", "serve", "--metadata", "arm=a",
                                     "hostname=mine", "gpu_uuids=GPU-a,GPU-b", "--model", "m"]
    assert with_node(["x"], {"hostname": "", "gpu_uuids": ""}) == ["x"]


@needs_data
def test_earlier_verdict_without_gate_record_goes_back_to_draft(tmp_path: Path) -> None:
    """A VERDICT written before the gate existed (or by hand) is not carried forward."""
    led, data = _ledger(tmp_path)
    row = next(x for x in data["ledger"] if x["id"] == "fusion:elementwise:decode")
    row["confidence"], row["ab"] = "VERDICT", {"verdict": "win", "reason": "median_tpot_ms"}
    led.write_text(json.dumps(data))
    syn = synthesize.run(led.parents[1])
    lv = next(x for x in syn.levers if x.id == row["id"])
    assert lv.confidence == "DRAFT" and row["id"] not in syn.kept
    assert any(w.startswith(f"lever {row['id']}: the earlier VERDICT has no passed "
                            "VERDICT-gate record") for w in syn.to_dict()["warnings"])


def test_cold_first_request_from_per_request_ttfts(tmp_path: Path) -> None:
    """SYNTHETIC `--save-detailed` results: per-request `ttfts` (seconds) and `itls`; the
    first trial's first request takes 500 ms against a 50 ms median."""
    from crossview.experiments.ab import run_ab
    paths = []
    for arm in ("a", "b"):
        for i in range(3):
            ttfts = [0.5 if (arm, i) == ("a", 0) else 0.05, 0.05, 0.05, 0.06, 0.05]
            p = tmp_path / f"{arm}{i}.json"
            p.write_text(json.dumps({
                "model_id": "m", "num_prompts": 5, "completed": 5, "request_throughput": 1.0,
                "output_throughput": 100.0 + i, "median_ttft_ms": 50.0,
                "ttfts": ttfts, "itls": [[0.01, 0.01]] * 5,
                "input_lens": [10] * 5, "output_lens": [3] * 5}))
            paths.append(p)
    res = run_ab(paths[:3], paths[3:], ["output_throughput"])
    assert res.baseline.first_ttft[0] == (0.5, 0.05)
    assert res.baseline.cold[0] is not None and "its TTFT 500 ms ≥ 2 × the trial's median 50 ms" \
        in res.baseline.cold[0]
    assert res.baseline.cold[1:] == [None, None] and res.variant.cold == [None] * 3


def test_model_spellings() -> None:
    from crossview.experiments.gates import _norm, _same_model
    assert _norm("model", "/home/u/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-OCR/"
                 "snapshots/2c96") == "deepseek-ai/deepseek-ocr"
    assert _same_model({"/models/deepseek-ocr"}, "deepseek-ai/deepseek-ocr")
    assert not _same_model({"facebook/opt-125m"}, "deepseek-ai/deepseek-ocr")
    assert not _same_model({"other-org/deepseek-ocr"}, "deepseek-ai/deepseek-ocr")  # 2 repos
    assert _norm("gpu_uuids", ["GPU-AbC", "gpu-def"]) == _norm("gpu_uuids", "abc,def")
