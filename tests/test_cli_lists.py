"""Options that take several files accept them after one flag (issue 14):
`crossview ab --baseline b-t*.json --variant v-t*.json` as the README and the synthesis'
experiment plans print it; the repeated form keeps working. Trial results are SYNTHETIC
(`vllm bench serve --save-result` keys, values chosen by hand as in tests/test_ab.py); the
synthesis bundle is the real RTX 5090 DeepSeek-OCR capture set from ../shared/data."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import crossview_on_path
from crossview.cli import app
from crossview.cli.multi_value import expand
from test_ab import result
from test_synthesis import BUNDLE_YAML, needs_data, rtx_bundle

runner = CliRunner()


def test_expand_rewrites_only_the_listed_flags() -> None:
    f = frozenset({"--baseline", "--variant"})
    assert expand(["--baseline", "a", "b", "--variant", "x", "y", "-f", "json"], f) == [
        "--baseline", "a", "--baseline", "b", "--variant", "x", "--variant", "y",
        "-f", "json"]
    # the repeated form is unchanged; --flag=value starts a list too
    rep = ["--baseline", "a", "--baseline", "b"]
    assert expand(rep, f) == rep
    assert expand(["--baseline=a", "b"], f) == ["--baseline=a", "--baseline", "b"]
    # other options keep their single value; words after `--` are never touched
    assert expand(["--metric", "m", "pos", "--", "--baseline", "z", "w"], f) == [
        "--metric", "m", "pos", "--", "--baseline", "z", "w"]


def _trials(d: Path, arm: str, values: list[float]) -> list[Path]:
    d.mkdir(parents=True, exist_ok=True)
    out = []
    for i, v in enumerate(values, 1):
        p = d / f"{arm}-t{i}.json"
        p.write_text(json.dumps(result(v, 50.0, metadata={"arm": arm, "trial": i})))
        out.append(p)
    return out


def test_ab_takes_a_glob_after_one_flag_and_the_repeated_form(tmp_path: Path) -> None:
    b = _trials(tmp_path, "baseline", [100.0, 101.0, 102.0])
    v = _trials(tmp_path, "variant", [120.0, 121.0, 122.0])
    one_flag = runner.invoke(app, ["ab", "--baseline", *map(str, b), "--variant",
                                   *map(str, v), "--metric", "output_throughput",
                                   "--format", "json"])
    assert one_flag.exit_code == 0, one_flag.output
    repeated = runner.invoke(app, ["ab", *sum((["--baseline", str(p)] for p in b), []),
                                   *sum((["--variant", str(p)] for p in v), []),
                                   "--metric", "output_throughput", "--format", "json"])
    assert repeated.exit_code == 0, repeated.output
    m = json.loads(one_flag.stdout)["metrics"][0]
    # hand numbers: medians 101 and 121 tok/s over 3 trials each
    assert m["baseline"]["n"] == 3 and m["variant"]["n"] == 3
    assert (m["baseline"]["median"], m["variant"]["median"]) == (101.0, 121.0)
    assert json.loads(one_flag.stdout) == json.loads(repeated.stdout)


def _shell_env(tmp: Path) -> dict[str, str]:
    """`crossview` on PATH running these sources, as an installed console script would."""
    return crossview_on_path(tmp / "bin")


@needs_data
def test_the_ab_line_of_a_synthesis_plan_runs_verbatim(tmp_path: Path) -> None:
    b = rtx_bundle(tmp_path)
    (b / "bundle.yaml").write_text(BUNDLE_YAML.replace("engine: transformers",
                                                       "engine: vllm\n  isl: 1024"))
    env = _shell_env(tmp_path)
    syn = subprocess.run(["crossview", "synthesize", str(b), "--format", "json"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert syn.returncode == 0, syn.stderr
    [ledger] = sorted((b / "findings").glob("synthesis-*.json"))
    plans = json.loads(ledger.read_text())["experiments"]
    assert plans, "the RTX 5090 bundle gets at least one experiment plan"
    plan = plans[0]
    line = plan["record"]
    assert line.startswith("crossview ab --baseline baseline-t*.json --variant variant-t*.json")
    # the trials' result files, named as the plan's bench loop names them ({arm}-t{trial}.json)
    assert "--result-filename {arm}-t{trial}.json".replace("{arm}", "baseline").replace(
        "{trial}", "$t") in plan["commands"][1]
    _trials(b, "baseline", [100.0, 101.0, 102.0])
    _trials(b, "variant", [120.0, 121.0, 122.0])
    run = subprocess.run(["bash", "-c", line], cwd=b, capture_output=True, text=True,
                         env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "unexpected extra argument" not in run.stderr
    assert "output_throughput" in run.stdout
    # the verdict is recorded on the plan's lever in the synthesis JSON (--ledger/--lever)
    row = next(r for r in json.loads(ledger.read_text())["ledger"]
               if r["id"] == plan["lever_id"])
    assert row["ab"]["verdict"] == "win"
    # these synthetic trials record no hostname / GPU UUIDs and no model: the VERDICT gate
    # (issue 17) keeps the row DRAFT and names the gates that failed
    assert row["confidence"] == "DRAFT"
    assert any(g.startswith("node:") for g in row["ab"]["failed_gates"])
    assert row["ab"]["baseline"] == [f"baseline-t{i}.json" for i in (1, 2, 3)]  # the glob
    assert row["ab"]["variant"] == [f"variant-t{i}.json" for i in (1, 2, 3)]


@pytest.mark.parametrize("form", ["one flag", "repeated"])
def test_mcp_root_takes_several_folders(tmp_path: Path, form: str) -> None:
    """`crossview mcp --root a b` parses both roots (checked through --help-free dry parse)."""
    import typer

    cmd = typer.main.get_command(app).commands["mcp"]  # type: ignore[attr-defined]
    a, b = tmp_path / "a", tmp_path / "b"
    args = ["--root", str(a), str(b)] if form == "one flag" else [
        "--root", str(a), "--root", str(b)]
    ctx = cmd.make_context("mcp", args)
    assert [Path(p) for p in ctx.params["root"]] == [a, b]
